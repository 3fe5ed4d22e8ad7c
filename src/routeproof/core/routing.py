"""Alias resolution and the call's provider chain: which providers a call may try, in what order.

``resolve`` is the one way to build a :class:`ResolvedModel` (AC 19). ``plan_chain`` builds the
chain of seed 000 §3 — the resolved primary, then each fallback that carries the alias — and
filters it by privacy tier, by what is configured and by provider health, saying what it skipped.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, replace

import icontract

from routeproof.core.constants import MAX_ATTEMPTS_PER_PROVIDER
from routeproof.core.errors import UnknownAlias
from routeproof.core.health import HealthState, _filter_healthy, _is_available, earliest_return_ms, health_well_formed
from routeproof.core.kernel import BackoffPolicy, CallPlan
from routeproof.core.tiers import EndpointTiers, _filter_chain, tier_admits
from routeproof.core.types import (
    ChainEntry,
    PrivacyTier,
    ProviderId,
    ProviderKind,
    ResolvedModel,
    SkipRecord,
    TenantPolicy,
)

__all__ = [
    "ChainPlan",
    "CoolingPolicy",
    "SkipReason",
    "Skipped",
    "build_chain",
    "call_plan",
    "chain_sound",
    "context_misfits",
    "plan_chain",
    "plan_chain_sound",
    "plan_sound",
    "resolve",
]


class CoolingPolicy(enum.Enum):
    """What a call does with a provider that is cooling down after consecutive failures."""

    DEMOTE = "demote"  # try it after every healthy provider (default): later calls go elsewhere first
    SKIP = "skip"  # leave it out; when nothing else is left the call fails at once (NoEligibleProvider)


class SkipReason(enum.Enum):
    """Why a chain entry was not tried."""

    TIER = "tier"  # the privacy tier does not allow this provider or its endpoint
    NOT_CONFIGURED = "not_configured"  # no client is configured for this provider kind
    UNSUPPORTED = "unsupported"  # declared but not implemented (Vertex)
    COOLING = "cooling"  # too many consecutive failures in earlier calls: cooling down
    LATENCY_SLA = "latency_sla"  # its recent p99 latency exceeds the SLA (core/latency.py)
    CAPABILITY = "capability"  # its model lacks what the request needs (images, documents, ...): never sent
    CONTEXT_WINDOW = "context_window"  # the request's input estimate + output cap exceed its model's window


@dataclass(frozen=True, slots=True, kw_only=True)
class Skipped:
    """A chain entry left out, and why."""

    entry: ChainEntry
    reason: SkipReason
    detail: str = ""  # CAPABILITY: the capability the model lacks ("images"); CONTEXT_WINDOW: the sizes

    def as_record(self) -> SkipRecord:
        """The public record of this skip (a capability skip names the capability: ``capability: images``)."""
        return SkipRecord(
            provider=self.entry.provider,
            model=self.entry.model,
            fallback_position=self.entry.fallback_position,
            reason=f"{self.reason.value}: {self.detail}" if self.detail else self.reason.value,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ChainPlan:
    """The chain a call will walk, what was skipped, and when a cooling provider returns."""

    chain: tuple[ChainEntry, ...]
    skipped: tuple[Skipped, ...] = ()
    earliest_return_ms: int | None = None
    demoted: tuple[ChainEntry, ...] = ()  # cooling entries moved to the end of ``chain``


def _resolve(alias: str, policy: TenantPolicy) -> ResolvedModel:
    if not isinstance(alias, str):
        raise TypeError(f"resolve(alias): alias must be a str, got {alias!r}")
    target = policy.primary.get(alias)
    if target is None:
        raise UnknownAlias(alias, tuple(policy.primary))
    kind, model = target
    return ResolvedModel(provider=kind, model=model, alias=alias, fallback_position=0)


@icontract.ensure(lambda alias, result: result.alias == alias)
@icontract.ensure(lambda alias, policy, result: policy.primary[alias] == (result.provider, result.model))
def resolve(alias: str, policy: TenantPolicy) -> ResolvedModel:
    """The tenant's primary provider and model for ``alias``.

    :raises UnknownAlias: when the policy does not define ``alias`` (the message names it).
    """
    return _resolve(alias, policy)


def _build_chain(resolved: ResolvedModel, policy: TenantPolicy) -> tuple[ChainEntry, ...]:
    entries = [ChainEntry(provider=resolved.provider, model=resolved.model, fallback_position=0)]
    for fallback in policy.fallback_chain:
        model = fallback.model_for(resolved.alias)
        if model is not None:  # a fallback without the alias has no model to call
            entries.append(ChainEntry(provider=fallback.kind, model=model, fallback_position=len(entries)))
    return tuple(entries)


def chain_sound(resolved: ResolvedModel, policy: TenantPolicy, result: tuple[ChainEntry, ...]) -> bool:
    """:func:`build_chain`'s postcondition, one predicate (each condition costs icontract about ten
    Python calls per call; issue 25): the resolved primary first, positions numbered in order, at most
    one entry per fallback."""
    return (
        len(result) >= 1
        and result[0].provider == resolved.provider
        and result[0].model == resolved.model
        and all(e.fallback_position == i for i, e in enumerate(result))
        and len(result) <= 1 + len(policy.fallback_chain)
    )


@icontract.ensure(chain_sound, "the primary first, positions in order, at most one entry per fallback")
def build_chain(resolved: ResolvedModel, policy: TenantPolicy) -> tuple[ChainEntry, ...]:
    """The primary, then every fallback that carries the alias, positions numbered in order."""
    return _build_chain(resolved, policy)


def _plan_chain(
    chain: tuple[ChainEntry, ...],
    tier: PrivacyTier,
    *,
    endpoint_tiers: EndpointTiers,
    configured: frozenset[ProviderId],
    health: HealthState,
    now_ms: int,
    cooling_policy: CoolingPolicy,
    slow: frozenset[ProviderId],
    lacking: Mapping[ProviderId, str] | None = None,
    misfits: Mapping[ProviderId, str] | None = None,
) -> ChainPlan:
    if lacking or misfits:  # a model the request cannot go to: skipped before anything is sent
        lacking, misfits = lacking or {}, misfits or {}
        skipped_early = [Skipped(entry=e, reason=SkipReason.CAPABILITY, detail=lacking[e.provider]) if e.provider
                         in lacking else Skipped(entry=e, reason=SkipReason.CONTEXT_WINDOW, detail=misfits[e.provider])
                         for e in chain if e.provider in lacking or e.provider in misfits]  # fmt: skip
        rest = tuple(e for e in chain if e.provider not in lacking and e.provider not in misfits)
        plan = _plan_chain(rest, tier, endpoint_tiers=endpoint_tiers, configured=configured, health=health,
                           now_ms=now_ms, cooling_policy=cooling_policy, slow=slow)  # fmt: skip
        order = {id(e): i for i, e in enumerate(chain)}
        everything = sorted((*plan.skipped, *skipped_early), key=lambda s: order[id(s.entry)])
        return replace(plan, skipped=tuple(everything))
    # Plain loops, not comprehensions: this runs per routed call, and each comprehension is a call of
    # its own (a generator's, one per entry). Skips are listed in chain order below.
    skipped: list[Skipped] = []
    supported: list[ChainEntry] = []
    for e in chain:
        if e.provider.is_supported:
            supported.append(e)
        else:
            skipped.append(Skipped(entry=e, reason=SkipReason.UNSUPPORTED))
    # The tier and health filters' own bodies: plan_chain's contract states their rules for what it
    # keeps (tier_admits, _cooling_respected), so a routed call checks each rule once (issue 25);
    # filter_chain and filter_healthy keep their contracts, which CrossHair and the tests check.
    kept, by_tier = _filter_chain(tuple(supported), tier, endpoint_tiers)
    for e in by_tier:
        skipped.append(Skipped(entry=e, reason=SkipReason.TIER))
    reachable: list[ChainEntry] = []
    for e in kept:
        if e.provider in configured:
            reachable.append(e)
        else:
            skipped.append(Skipped(entry=e, reason=SkipReason.NOT_CONFIGURED))
    available, by_health = _filter_healthy(tuple(reachable), health, now_ms)
    usable: list[ChainEntry] = list(available)
    by_latency: list[ChainEntry] = []  # the latency-SLA trigger: demoted like cooling
    if slow:
        usable = [e for e in available if e.provider not in slow]
        by_latency = [e for e in available if e.provider in slow]
    if not (skipped or by_health or by_latency):  # the usual call: nothing left out, nothing demoted
        return ChainPlan(chain=tuple(usable))  # what either policy's plan below is then (issue 25)
    reasons = {id(e): SkipReason.COOLING for e in by_health} | {id(e): SkipReason.LATENCY_SLA for e in by_latency}
    order = {id(e): i for i, e in enumerate(chain)}
    cooling = sorted((*by_health, *by_latency), key=lambda e: order[id(e)])
    earliest = earliest_return_ms(health, tuple(e.provider for e in by_health), now_ms) if by_health else None
    if cooling_policy is CoolingPolicy.SKIP:
        skipped.extend(Skipped(entry=e, reason=reasons[id(e)]) for e in cooling)
        skipped.sort(key=lambda s: order[id(s.entry)])
        return ChainPlan(chain=tuple(usable), skipped=tuple(skipped), earliest_return_ms=earliest)
    skipped.sort(key=lambda s: order[id(s.entry)])
    return ChainPlan(
        chain=(*usable, *cooling), skipped=tuple(skipped), earliest_return_ms=earliest, demoted=tuple(cooling)
    )


def _healthy_first_in_order(chain: tuple[ChainEntry, ...], result: ChainPlan) -> bool:
    """Healthy entries come first and demoted ones last, each group in the chain's order."""
    healthy = [e for e in result.chain if not any(e is d for d in result.demoted)]
    in_order = [e for e in chain if any(e is k for k in healthy)] == healthy
    demoted_in_order = [e for e in chain if any(e is d for d in result.demoted)] == list(result.demoted)
    return in_order and demoted_in_order and list(result.chain) == [*healthy, *result.demoted]


def _cooling_respected(health: HealthState, now_ms: int, slow: frozenset[ProviderId], result: ChainPlan) -> bool:
    """filter_healthy's rule for a plan: an entry tried ahead of the demoted ones is available; a
    demoted one is unavailable or slow; one skipped as cooling is unavailable."""
    ahead = (e for e in result.chain if not any(e is d for d in result.demoted))
    cooling = (s.entry for s in result.skipped if s.reason is SkipReason.COOLING)
    return (
        all(_is_available(health, e.provider, now_ms) for e in ahead)
        and all(e.provider in slow or not _is_available(health, e.provider, now_ms) for e in result.demoted)
        and not any(_is_available(health, e.provider, now_ms) for e in cooling)
    )


def plan_sound(
    *,
    chain: tuple[ChainEntry, ...],
    tier: PrivacyTier,
    configured: frozenset[ProviderId],
    cooling_policy: CoolingPolicy,
    slow: frozenset[ProviderId],
    result: ChainPlan,
) -> bool:
    """:func:`plan_chain`'s postconditions but the tier and health rules (stated apart, by name), one
    predicate (each condition costs icontract about ten Python calls per call; issue 25): every entry
    is kept or skipped; SOVEREIGN keeps local providers only; every entry kept is configured; healthy
    entries come first and demoted ones last, each group in the chain's order; only DEMOTE demotes;
    and a provider in breach of the latency SLA is never ahead of a healthy one."""
    ahead = [e for e in result.chain if not any(e is d for d in result.demoted)]
    return (
        len(result.chain) + len(result.skipped) == len(chain)
        and (tier is not PrivacyTier.SOVEREIGN or all(e.provider.kind is ProviderKind.LOCAL for e in result.chain))
        and all(e.provider in configured for e in result.chain)
        and _healthy_first_in_order(chain, result)
        and (cooling_policy is CoolingPolicy.DEMOTE or result.demoted == ())
        and not any(e.provider in slow for e in ahead)
    )


def plan_chain_sound(
    *,
    chain: tuple[ChainEntry, ...],
    tier: PrivacyTier,
    endpoint_tiers: EndpointTiers,
    configured: frozenset[ProviderId],
    health: HealthState,
    now_ms: int,
    cooling_policy: CoolingPolicy,
    slow: frozenset[ProviderId],
    result: ChainPlan,
) -> bool:
    """:func:`plan_chain`'s postcondition, one predicate (each condition costs icontract about ten
    Python calls per call; issue 25): :func:`plan_sound`; every entry kept is allowed by the tier, its
    kind and its endpoint (tiers.filter_chain's rule, :func:`~routeproof.core.tiers.tier_admits`); and
    an entry is demoted or skipped as cooling only when unavailable (health.filter_healthy's rule,
    :func:`_cooling_respected`)."""
    return (
        plan_sound(
            chain=chain, tier=tier, configured=configured, cooling_policy=cooling_policy, slow=slow, result=result
        )
        and all(tier_admits(e, tier, endpoint_tiers) for e in result.chain)
        and _cooling_respected(health, now_ms, slow, result)
    )


@icontract.require(lambda health: health_well_formed(state=health))
@icontract.ensure(
    plan_chain_sound,
    "every entry kept or skipped, configured, local only under SOVEREIGN, healthy first in order, "
    "only DEMOTE demotes, a slow provider never ahead of a healthy one; every entry kept allowed by the "
    "tier, its kind and its endpoint (tiers.filter_chain's rule); demoted or skipped as cooling only when "
    "unavailable (health.filter_healthy's rule)",
)  # one condition, not three (issue 25)
def plan_chain(
    chain: tuple[ChainEntry, ...],
    tier: PrivacyTier,
    *,
    endpoint_tiers: EndpointTiers,
    configured: frozenset[ProviderId],
    health: HealthState,
    now_ms: int,
    cooling_policy: CoolingPolicy = CoolingPolicy.DEMOTE,
    slow: frozenset[ProviderId] = frozenset(),
    lacking: Mapping[ProviderId, str] | None = None,
    misfits: Mapping[ProviderId, str] | None = None,
) -> ChainPlan:
    """Filter ``chain`` by tier and configuration, keeping its order, and put cooling providers last
    (DEMOTE) or leave them out (SKIP); list what was skipped. Providers in ``slow`` (in breach of
    the latency SLA) are treated exactly like cooling ones.

    DEMOTE is the default because SKIP turns flaky-but-working providers into an outage: under 50 %
    random failures every provider trips a 2-failure threshold within seconds, and a call with
    every provider cooling would fail without trying any (FALSIFY-MPA-007 measured 73 % completion).

    A provider in ``lacking`` (its model lacks a capability the request needs, named by the value;
    ``core/capabilities.lacking_capabilities``) is skipped first, its record naming the capability;
    so is one in ``misfits`` (:func:`context_misfits`), its record naming the sizes.
    """
    return _plan_chain(
        chain,
        tier,
        endpoint_tiers=endpoint_tiers,
        configured=configured,
        health=health,
        now_ms=now_ms,
        cooling_policy=cooling_policy,
        slow=slow,
        lacking=lacking,
        misfits=misfits,
    )


def _context_misfits(
    chain: tuple[ChainEntry, ...], windows: Mapping[ProviderId, int | None], input_tokens: int, output_tokens: int
) -> dict[ProviderId, str]:
    needed = input_tokens + output_tokens
    misfits: dict[ProviderId, str] = {}
    for entry in chain:
        window = windows.get(entry.provider)
        if window is not None and needed > window:
            misfits[entry.provider] = (
                f"input ~{input_tokens} + max_tokens {output_tokens} = {needed} tokens > {entry.model}'s "
                f"context window of {window}"
            )
    return misfits


@icontract.require(lambda input_tokens, output_tokens: input_tokens >= 0 and output_tokens >= 0)
@icontract.ensure(
    lambda chain, windows, input_tokens, output_tokens, result: all(
        (e.provider in result)
        == (windows.get(e.provider) is not None and input_tokens + output_tokens > (windows.get(e.provider) or 0))
        for e in chain
    ),
    "a model is left out exactly when its known window cannot hold the input estimate plus the output cap",
)
def context_misfits(
    chain: tuple[ChainEntry, ...], windows: Mapping[ProviderId, int | None], *, input_tokens: int, output_tokens: int
) -> dict[ProviderId, str]:
    """The chain entries whose model's context window (``windows``; None: not known, never skipped)
    cannot hold ``input_tokens`` (``core/input_size.input_tokens_estimate``) plus the output cap
    ``output_tokens``, each with a detail naming the sizes. Such a model would answer with a
    context-overflow error; it is skipped before anything is sent, with a ``SkipRecord``."""
    return _context_misfits(chain, windows, input_tokens, output_tokens)


def _call_plan(
    chain_plan: ChainPlan,
    policy: TenantPolicy,
    *,
    started_at_ms: int,
    deadline_at_ms: int,
    backoff: BackoffPolicy,
    attempt_timeout_ms: int,
    provider_timeouts_ms: Mapping[ProviderId, int],
    max_attempts_per_provider: int,
) -> CallPlan:
    return CallPlan(
        chain=chain_plan.chain,
        started_at_ms=started_at_ms,
        deadline_at_ms=deadline_at_ms,
        backoff=backoff,
        attempt_timeout_ms=attempt_timeout_ms,
        provider_timeouts_ms=tuple(provider_timeouts_ms.items()),
        max_attempts_per_provider=max_attempts_per_provider,
        # Failing over to a larger-context provider is opt-in, and never allowed under Sovereign.
        context_window_failover=policy.context_window_failover and policy.privacy_tier is not PrivacyTier.SOVEREIGN,
    )


@icontract.require(
    lambda attempt_timeout_ms, provider_timeouts_ms: (
        attempt_timeout_ms > 0 and all(t > 0 for t in (provider_timeouts_ms or {}).values())
    ),
    "attempt timeouts are positive",
)
@icontract.ensure(
    lambda chain_plan, attempt_timeout_ms, policy, result: (
        result.chain == chain_plan.chain
        and all(0 < result.timeout_for(e.provider) <= attempt_timeout_ms for e in chain_plan.chain)
        and (not result.context_window_failover or policy.privacy_tier is not PrivacyTier.SOVEREIGN)
    ),
    "the planned chain, each attempt timeout within the call's, no context-window failover under SOVEREIGN",
)  # one condition, not three: each costs icontract about ten Python calls per call (issue 25)
def call_plan(
    chain_plan: ChainPlan,
    policy: TenantPolicy,
    *,
    started_at_ms: int,
    deadline_at_ms: int,
    backoff: BackoffPolicy,
    attempt_timeout_ms: int,
    provider_timeouts_ms: Mapping[ProviderId, int] | None = None,
    max_attempts_per_provider: int = MAX_ATTEMPTS_PER_PROVIDER,
) -> CallPlan:
    """The kernel's plan for one call over ``chain_plan``'s chain, with the policy's opt-ins."""
    return _call_plan(
        chain_plan,
        policy,
        started_at_ms=started_at_ms,
        deadline_at_ms=deadline_at_ms,
        backoff=backoff,
        attempt_timeout_ms=attempt_timeout_ms,
        provider_timeouts_ms=provider_timeouts_ms or {},
        max_attempts_per_provider=max_attempts_per_provider,
    )
