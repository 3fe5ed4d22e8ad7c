"""Routing details: skip records, resolve's refusals, the SKIP policy, the order predicate, the kernel plan."""

from __future__ import annotations

from typing import Any

import pytest

from routeproof.core.health import HealthConfig, new_health, record_failure
from routeproof.core.kernel import BackoffPolicy
from routeproof.core.routing import (
    ChainPlan,
    CoolingPolicy,
    Skipped,
    SkipReason,
    _cooling_respected,
    _healthy_first_in_order,
    call_plan,
    resolve,
)
from routeproof.core.types import ChainEntry, ProviderKind, SkipRecord, TenantPolicy
from tests.core.test_routing import cooled, entries, plan


def test_a_skip_record_names_the_entry_and_the_reason() -> None:
    """Skipped.as_record keeps the entry's provider, model and position and the reason's value."""
    entry = ChainEntry(provider=ProviderKind.OPENAI, model="gpt-x", fallback_position=2)
    reason = next(iter(SkipReason))
    assert Skipped(entry=entry, reason=reason).as_record() == SkipRecord(
        provider=ProviderKind.OPENAI, model="gpt-x", fallback_position=2, reason=reason.value
    )


def test_resolve_refuses_a_non_string_alias_showing_it() -> None:
    """resolve(5, ...) is a TypeError that shows the value given."""
    policy: Any = None
    with pytest.raises(TypeError, match=r"^resolve\(alias\): alias must be a str, got 5$"):
        resolve(5, policy)  # type: ignore[arg-type]


def test_skip_policy_lists_cooling_and_slow_entries_in_chain_order_with_the_return_time() -> None:
    """Under SKIP, cooling and slow entries are skipped with their reasons, all skips in chain order,
    and the plan says when the cooling provider returns."""
    a, b, oa, ol = ProviderKind.ANTHROPIC, ProviderKind.BEDROCK, ProviderKind.OPENAI, ProviderKind.OLLAMA
    health = record_failure(new_health(HealthConfig(failure_threshold=1, cooldown_ms=1_000)), a, 0)
    chain = entries(a, b, oa, ol)
    result = plan(
        chain,
        configured=frozenset({a, oa, ol}),
        health=health,
        now_ms=10,
        cooling_policy=CoolingPolicy.SKIP,
        slow=frozenset({ol}),
    )
    assert result.chain == (chain[2],)
    assert result.skipped == (
        Skipped(entry=chain[0], reason=SkipReason.COOLING),
        Skipped(entry=chain[1], reason=SkipReason.NOT_CONFIGURED),
        Skipped(entry=chain[3], reason=SkipReason.LATENCY_SLA),
    )
    assert result.earliest_return_ms == 1_000


def test_healthy_first_in_order_needs_each_group_in_chain_order_and_healthy_first() -> None:
    """The plan's order predicate: healthy entries in chain order, then demoted ones, and nothing else."""
    a, b = entries(ProviderKind.ANTHROPIC, ProviderKind.OPENAI)
    chain = (a, b)
    assert _healthy_first_in_order(chain, ChainPlan(chain=(a, b)))
    assert _healthy_first_in_order(chain, ChainPlan(chain=(a, b), demoted=(b,)))
    assert not _healthy_first_in_order(chain, ChainPlan(chain=(b, a)))
    assert not _healthy_first_in_order(chain, ChainPlan(chain=(b, a), demoted=(b,)))


def test_call_plan_carries_the_timeouts_and_attempt_limit_it_is_given() -> None:
    """The kernel's plan keeps the per-provider timeouts and the per-provider attempt limit passed in."""
    (a,) = entries(ProviderKind.ANTHROPIC)
    result = call_plan(
        ChainPlan(chain=(a,)),
        TenantPolicy(),
        started_at_ms=0,
        deadline_at_ms=30_000,
        backoff=BackoffPolicy(),
        attempt_timeout_ms=1_000,
        provider_timeouts_ms={ProviderKind.ANTHROPIC: 500},
        max_attempts_per_provider=2,
    )
    assert result.provider_timeouts_ms == ((ProviderKind.ANTHROPIC, 500),)
    assert result.max_attempts_per_provider == 2
    assert result.timeout_for(ProviderKind.ANTHROPIC) == 500


def test_cooling_respected_refuses_each_way_a_plan_can_break_the_health_rule() -> None:
    """_cooling_respected: nothing unavailable ahead, nothing available demoted (unless slow) or skipped as cooling."""
    a, b = ProviderKind.ANTHROPIC, ProviderKind.BEDROCK
    chain = entries(b, a)
    health = cooled(b)
    none: frozenset[ProviderKind] = frozenset()
    good = ChainPlan(chain=(chain[1], chain[0]), demoted=(chain[0],))
    assert _cooling_respected(health, 10, none, good)
    assert not _cooling_respected(health, 10, none, ChainPlan(chain=chain))  # cooling b ahead
    assert not _cooling_respected(health, 10, none, ChainPlan(chain=(chain[0], chain[1]), demoted=(chain[1],)))
    assert _cooling_respected(health, 10, frozenset({a}), ChainPlan(chain=chain, demoted=chain))  # a slow, b cooling
    skipped_ok = ChainPlan(chain=(chain[1],), skipped=(Skipped(entry=chain[0], reason=SkipReason.COOLING),))
    assert _cooling_respected(health, 10, none, skipped_ok)
    skipped_bad = ChainPlan(chain=(chain[0],), skipped=(Skipped(entry=chain[1], reason=SkipReason.COOLING),))
    assert not _cooling_respected(new_health(), 10, none, skipped_bad)
    assert _cooling_respected(health, 1_000, none, ChainPlan(chain=chain))  # the cooldown has ended


@pytest.mark.parametrize("policy", list(CoolingPolicy))
def test_a_lone_slow_or_cooling_entry_is_demoted_or_skipped_not_dropped(policy: CoolingPolicy) -> None:
    """The plan's shortcut for a call with nothing left out and nothing demoted (issue 25) is taken
    only then: a slow entry alone, or a cooling one alone, is still demoted (DEMOTE) or skipped with
    its reason (SKIP), never dropped, and the plain plan is the chain itself with nothing else set."""
    a, oa = ProviderKind.ANTHROPIC, ProviderKind.OPENAI
    chain = entries(a, oa)
    for kw, reason in (
        ({"slow": frozenset({a})}, SkipReason.LATENCY_SLA),
        ({"health": cooled(a), "now_ms": 10}, SkipReason.COOLING),
    ):
        result = plan(chain, cooling_policy=policy, **kw)
        if policy is CoolingPolicy.DEMOTE:
            assert result == ChainPlan(
                chain=(chain[1], chain[0]),
                demoted=(chain[0],),
                earliest_return_ms=result.earliest_return_ms,
            )
        else:
            assert result.chain == (chain[1],)
            assert result.skipped == (Skipped(entry=chain[0], reason=reason),)
    assert plan(chain, cooling_policy=policy) == ChainPlan(chain=chain)
