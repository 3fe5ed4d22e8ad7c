"""Alias resolution and the call's provider chain: which providers a call may try, in what order.

``resolve`` is the one way to build a :class:`ResolvedModel` (AC 19). ``plan_chain`` builds the
chain of seed 000 §3 — the resolved primary, then each fallback that carries the alias — and
filters it by privacy tier, by what is configured and by provider health, saying what it skipped.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass

import icontract

from routeproof.core.health import HealthState, earliest_return_ms, is_available
from routeproof.core.tiers import filter_chain
from routeproof.core.types import ChainEntry, PrivacyTier, ProviderKind, ResolvedModel, SkipRecord, TenantPolicy

__all__ = ["ChainPlan", "SkipReason", "Skipped", "build_chain", "plan_chain", "resolve"]


class SkipReason(enum.Enum):
    """Why a chain entry was not tried."""

    TIER = "tier"  # the privacy tier does not allow this provider or its endpoint
    NOT_CONFIGURED = "not_configured"  # no client is configured for this provider kind
    UNSUPPORTED = "unsupported"  # declared but not implemented (Vertex)
    COOLING = "cooling"  # too many consecutive failures in earlier calls: cooling down


@dataclass(frozen=True, slots=True, kw_only=True)
class Skipped:
    """A chain entry left out, and why."""

    entry: ChainEntry
    reason: SkipReason

    def as_record(self) -> SkipRecord:
        """The public record of this skip."""
        return SkipRecord(
            provider=self.entry.provider,
            model=self.entry.model,
            fallback_position=self.entry.fallback_position,
            reason=self.reason.value,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ChainPlan:
    """The chain a call will walk, what was skipped, and when a cooling provider returns."""

    chain: tuple[ChainEntry, ...]
    skipped: tuple[Skipped, ...] = ()
    earliest_return_ms: int | None = None


def _resolve(alias: str, policy: TenantPolicy) -> ResolvedModel | None:
    target = policy.primary.get(alias)
    if target is None:
        return None
    kind, model = target
    return ResolvedModel(provider=kind, model=model, alias=alias, fallback_position=0)


@icontract.ensure(lambda alias, result: result is None or result.alias == alias)
@icontract.ensure(lambda alias, policy, result: (result is None) == (alias not in policy.primary))
def resolve(alias: str, policy: TenantPolicy) -> ResolvedModel | None:
    """The tenant's primary provider and model for ``alias``, or None when the alias is unknown."""
    return _resolve(alias, policy)


def _build_chain(resolved: ResolvedModel, policy: TenantPolicy) -> tuple[ChainEntry, ...]:
    entries = [ChainEntry(provider=resolved.provider, model=resolved.model, fallback_position=0)]
    for fallback in policy.fallback_chain:
        model = fallback.model_for(resolved.alias)
        if model is not None:  # a fallback without the alias has no model to call
            entries.append(ChainEntry(provider=fallback.kind, model=model, fallback_position=len(entries)))
    return tuple(entries)


@icontract.ensure(lambda result: len(result) >= 1)
@icontract.ensure(
    lambda resolved, result: result[0].provider is resolved.provider and result[0].model == resolved.model
)
@icontract.ensure(lambda result: all(e.fallback_position == i for i, e in enumerate(result)))
@icontract.ensure(lambda policy, result: len(result) <= 1 + len(policy.fallback_chain))
def build_chain(resolved: ResolvedModel, policy: TenantPolicy) -> tuple[ChainEntry, ...]:
    """The primary, then every fallback that carries the alias, positions numbered in order."""
    return _build_chain(resolved, policy)


def _plan_chain(
    chain: tuple[ChainEntry, ...],
    tier: PrivacyTier,
    *,
    endpoint_tiers: Mapping[ProviderKind, PrivacyTier],
    configured: frozenset[ProviderKind],
    health: HealthState,
    now_ms: int,
) -> ChainPlan:
    skipped = [Skipped(entry=e, reason=SkipReason.UNSUPPORTED) for e in chain if not e.provider.is_supported]
    kept, by_tier = filter_chain(tuple(e for e in chain if e.provider.is_supported), tier, endpoint_tiers)
    skipped.extend(Skipped(entry=e, reason=SkipReason.TIER) for e in by_tier)
    usable: list[ChainEntry] = []
    cooling: list[ChainEntry] = []
    for entry in kept:
        if entry.provider not in configured:
            skipped.append(Skipped(entry=entry, reason=SkipReason.NOT_CONFIGURED))
        elif not is_available(health, entry.provider, now_ms):
            skipped.append(Skipped(entry=entry, reason=SkipReason.COOLING))
            cooling.append(entry)
        else:
            usable.append(entry)
    earliest = earliest_return_ms(health, tuple(e.provider for e in cooling), now_ms) if cooling else None
    order = {id(e): i for i, e in enumerate(chain)}
    skipped.sort(key=lambda s: order[id(s.entry)])
    return ChainPlan(chain=tuple(usable), skipped=tuple(skipped), earliest_return_ms=earliest)


@icontract.ensure(lambda chain, result: len(result.chain) + len(result.skipped) == len(chain))
@icontract.ensure(lambda tier, result: tier is not PrivacyTier.SOVEREIGN or all(
    e.provider is ProviderKind.LOCAL for e in result.chain
))  # fmt: skip
@icontract.ensure(lambda configured, result: all(e.provider in configured for e in result.chain))
@icontract.ensure(lambda chain, result: [e for e in chain if any(e is k for k in result.chain)] == list(result.chain))
def plan_chain(
    chain: tuple[ChainEntry, ...],
    tier: PrivacyTier,
    *,
    endpoint_tiers: Mapping[ProviderKind, PrivacyTier],
    configured: frozenset[ProviderKind],
    health: HealthState,
    now_ms: int,
) -> ChainPlan:
    """Filter ``chain`` by tier, configuration and health, keeping its order; list what was skipped."""
    return _plan_chain(chain, tier, endpoint_tiers=endpoint_tiers, configured=configured, health=health, now_ms=now_ms)
