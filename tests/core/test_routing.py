"""Alias resolution and chain planning (core/routing.py): order, tiers, configuration, health."""

from __future__ import annotations

import icontract
import pytest
from hypothesis import given
from hypothesis import strategies as st

from routeproof.core.health import (
    HealthConfig,
    HealthState,
    ProviderHealth,
    new_health,
    record_failure,
)
from routeproof.core.kernel import BackoffPolicy
from routeproof.core.routing import (
    ChainPlan,
    CoolingPolicy,
    SkipReason,
    build_chain,
    call_plan,
    plan_chain,
    resolve,
)
from routeproof.core.types import ChainEntry, FallbackProvider, PrivacyTier, ProviderKind, TenantPolicy
from routeproof.errors import UnknownAlias

B, A, OA, L, OL, V = (
    ProviderKind.BEDROCK,
    ProviderKind.ANTHROPIC,
    ProviderKind.OPENAI,
    ProviderKind.LOCAL,
    ProviderKind.OLLAMA,
    ProviderKind.VERTEX,
)
ALL = frozenset(ProviderKind)
STANDARD = dict.fromkeys(ProviderKind, PrivacyTier.STANDARD) | {L: PrivacyTier.SOVEREIGN}


def policy(*fallbacks: tuple[ProviderKind, str | None], tier: PrivacyTier = PrivacyTier.STANDARD) -> TenantPolicy:
    """Primary Bedrock for alias "a"; each fallback carries the alias when its model is not None."""
    return TenantPolicy(
        privacy_tier=tier,
        primary={"a": (B, "b-model")},
        fallback_chain=tuple(
            FallbackProvider(kind=k, model_alias_map={} if m is None else {"a": m}) for k, m in fallbacks
        ),
        context_window_failover=True,
    )


def test_resolve_uses_the_primary_map_and_refuses_unknown_aliases() -> None:
    """resolve gives the primary's provider and model at position 0, and UnknownAlias naming an unknown one."""
    resolved = resolve("a", policy())
    assert (resolved.provider, resolved.model, resolved.alias, resolved.fallback_position) == (B, "b-model", "a", 0)
    with pytest.raises(UnknownAlias, match="'nope'"):
        resolve("nope", policy())


def test_build_chain_skips_fallbacks_without_the_alias_and_numbers_positions() -> None:
    """The chain is the primary then every fallback that maps the alias, positions 0, 1, 2 ..."""
    tenant = policy((A, "claude"), (OA, None), (L, "local"))
    resolved = resolve("a", tenant)
    assert resolved is not None
    chain = build_chain(resolved, tenant)
    assert [(e.provider, e.model, e.fallback_position) for e in chain] == [
        (B, "b-model", 0),
        (A, "claude", 1),
        (L, "local", 2),
    ]


def entries(*kinds: ProviderKind) -> tuple[ChainEntry, ...]:
    """A chain of ``kinds`` with models m0, m1, ... at positions 0, 1, ..."""
    return tuple(ChainEntry(provider=k, model=f"m{i}", fallback_position=i) for i, k in enumerate(kinds))


def plan(chain: tuple[ChainEntry, ...], **kw: object) -> ChainPlan:
    """plan_chain with Standard endpoints, everything configured, healthy providers, unless given."""
    args: dict[str, object] = {
        "endpoint_tiers": STANDARD,
        "configured": ALL,
        "health": new_health(),
        "now_ms": 0,
    } | kw
    tier = args.pop("tier", PrivacyTier.STANDARD)
    return plan_chain(chain, tier, **args)  # type: ignore[arg-type]  # keyword pass-through in a test helper


def test_plan_keeps_order_when_everything_is_usable() -> None:
    """With no reason to skip, the plan is the chain itself, nothing skipped or demoted."""
    chain = entries(B, A, OA)
    result = plan(chain)
    assert result.chain == chain
    assert (result.skipped, result.demoted, result.earliest_return_ms) == ((), (), None)


def test_plan_skips_unsupported_unconfigured_and_disallowed_with_reasons_in_chain_order() -> None:
    """Vertex is unsupported, an unconfigured kind is not configured, Sovereign drops network kinds."""
    chain = entries(V, B, A, L)
    result = plan(chain, configured=frozenset({B, L}), tier=PrivacyTier.PRIVATE)
    assert [(s.entry.provider, s.reason) for s in result.skipped] == [
        (V, SkipReason.UNSUPPORTED),
        (B, SkipReason.TIER),
        (A, SkipReason.TIER),
    ]
    assert [e.provider for e in result.chain] == [L]
    result = plan(entries(OL, L), configured=frozenset({L}), tier=PrivacyTier.STANDARD)
    assert [(s.entry.provider, s.reason) for s in result.skipped] == [(OL, SkipReason.NOT_CONFIGURED)]
    assert result.skipped[0].as_record().reason == "not_configured"


def cooled(provider: ProviderKind, now_ms: int = 0) -> HealthState:
    """A health state in which ``provider`` cools from ``now_ms`` for 1 s."""
    health = new_health(HealthConfig(failure_threshold=1, cooldown_ms=1_000))
    return record_failure(health, provider, now_ms)


def test_demote_moves_cooling_providers_last_in_their_order() -> None:
    """Under DEMOTE a cooling provider goes after every healthy one; the earliest return is reported."""
    chain = entries(B, A, OA)
    health = record_failure(cooled(B), OA, 200)
    result = plan(chain, health=health, now_ms=500)
    assert [e.provider for e in result.chain] == [A, B, OA]
    assert [e.provider for e in result.demoted] == [B, OA]
    assert result.skipped == ()
    assert result.earliest_return_ms == 1_000


def test_skip_drops_cooling_providers_and_reports_them() -> None:
    """Under SKIP a cooling provider is left out with reason COOLING."""
    result = plan(entries(B, A), health=cooled(B), now_ms=10, cooling_policy=CoolingPolicy.SKIP)
    assert [e.provider for e in result.chain] == [A]
    assert [(s.entry.provider, s.reason) for s in result.skipped] == [(B, SkipReason.COOLING)]
    assert result.demoted == ()


def test_cooldown_ends_exactly_at_its_time() -> None:
    """At the cooldown's end the provider is healthy again and keeps its place."""
    result = plan(entries(B, A), health=cooled(B), now_ms=1_000)
    assert [e.provider for e in result.chain] == [B, A]
    assert result.demoted == ()


@given(
    st.lists(st.sampled_from([B, A, OA, L, OL, V]), max_size=7),
    st.sampled_from(list(PrivacyTier)),
    st.frozensets(st.sampled_from(list(ProviderKind))),
)
def test_plan_partitions_the_chain(
    kinds: list[ProviderKind], tier: PrivacyTier, configured: frozenset[ProviderKind]
) -> None:
    """Every entry is either planned or skipped, once; planned ones are allowed, configured, supported."""
    chain = entries(*kinds)
    result = plan(chain, tier=tier, configured=configured)
    assert sorted(id(e) for e in result.chain + tuple(s.entry for s in result.skipped)) == sorted(id(e) for e in chain)
    for entry in result.chain:
        assert entry.provider in configured
        assert entry.provider.is_supported
        if tier is PrivacyTier.SOVEREIGN:
            assert entry.provider is L


def test_call_plan_never_allows_context_failover_under_sovereign() -> None:
    """The policy's context-window opt-in passes through, except under the Sovereign tier."""
    chain_plan = ChainPlan(chain=entries(L))
    backoff = BackoffPolicy()
    for tier, allowed in ((PrivacyTier.STANDARD, True), (PrivacyTier.SOVEREIGN, False)):
        result = call_plan(
            chain_plan,
            policy(tier=tier),
            started_at_ms=5,
            deadline_at_ms=900,
            backoff=backoff,
            attempt_timeout_ms=700,
        )
        assert result.context_window_failover is allowed
        assert (result.chain, result.started_at_ms, result.deadline_at_ms, result.attempt_timeout_ms) == (
            chain_plan.chain,
            5,
            900,
            700,
        )
        assert result.backoff is backoff


def test_plan_requires_a_well_formed_health_state() -> None:
    """A health state with a negative failure count violates plan_chain's precondition."""
    bad = HealthState(providers=((B, ProviderHealth(consecutive_failures=-1)),))
    with pytest.raises(icontract.ViolationError):
        plan(entries(B), health=bad)


def test_plan_runs_the_contract_bound_health_filter(monkeypatch: pytest.MonkeyPatch) -> None:
    """plan_chain splits by health with filter_healthy's own body (the one CrossHair checks), not a copy."""
    from routeproof.core import health, routing

    seen: list[tuple[ChainEntry, ...]] = []

    def spy(
        chain: tuple[ChainEntry, ...], state: HealthState, now_ms: int
    ) -> tuple[tuple[ChainEntry, ...], tuple[ChainEntry, ...]]:
        seen.append(chain)
        return health._filter_healthy(chain, state, now_ms)

    monkeypatch.setattr(routing, "_filter_healthy", spy)
    chain = entries(B, A, OL)
    result = plan(chain, health=cooled(B), now_ms=10, configured=frozenset({B, A}))
    assert seen == [chain[:2]]
    assert [e.provider for e in result.chain] == [A, B]


def test_plan_contract_states_the_health_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    """A health filter that keeps a cooling provider ahead breaks plan_chain's own postcondition."""
    from routeproof.core import routing

    monkeypatch.setattr(routing, "_filter_healthy", lambda chain, state, now_ms: (chain, ()))
    with pytest.raises(icontract.ViolationError, match="filter_healthy's rule"):
        plan(entries(B, A), health=cooled(B), now_ms=10)


def test_plan_contract_states_the_tier_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    """A tier filter that keeps a network provider under Private breaks plan_chain's own postcondition."""
    from routeproof.core import routing

    monkeypatch.setattr(routing, "_filter_chain", lambda chain, tier, endpoint_tiers: (chain, ()))
    with pytest.raises(icontract.ViolationError, match="filter_chain's rule"):
        plan(entries(L, A), tier=PrivacyTier.PRIVATE)
