"""The latency-SLA trigger (core/latency.py): p99 over a sliding window, breach, recovery, and the
chain demoting a provider in breach like a cooling one."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from routeproof.core.health import HealthConfig, new_health
from routeproof.core.latency import (
    LatencyConfig,
    LatencyState,
    breaching,
    in_breach,
    judged,
    new_latency,
    p99_ms,
    probe_due,
    record_demotion,
    record_latency,
    start_probe,
    well_formed,
)
from routeproof.core.routing import CoolingPolicy, SkipReason, plan_chain
from routeproof.core.types import ChainEntry, PrivacyTier, ProviderKind

A, B = ProviderKind.ANTHROPIC, ProviderKind.OPENAI
CONFIG = LatencyConfig(sla_ms=1_000, window_ms=60_000, max_samples=50, min_samples=10, probe_every_calls=20)


def _fed(latencies: list[int], *, start_ms: int = 0, step_ms: int = 100, provider: ProviderKind = A) -> LatencyState:
    state = new_latency(CONFIG)
    for i, latency in enumerate(latencies):
        state = record_latency(state, provider, start_ms + i * step_ms, latency)
    return state


def test_breach_needs_min_samples_and_a_p99_above_the_sla() -> None:
    """Nine slow answers say nothing; the tenth makes p99 > SLA a breach; exactly the SLA is no breach."""
    assert not in_breach(_fed([5_000] * 9), A, 1_000)
    assert in_breach(_fed([5_000] * 10), A, 1_000)
    assert not in_breach(_fed([1_000] * 20), A, 2_000)
    assert p99_ms(_fed([1_000] * 20), A, 2_000) == 1_000


def test_p99_is_the_nearest_rank() -> None:
    """With 100 samples 1..100 ms, p99 is 99; one slow answer in 100 does not breach, two do."""

    def fed(latencies: list[int]) -> LatencyState:
        state = new_latency(LatencyConfig(sla_ms=1_000, max_samples=200))
        for i, latency in enumerate(latencies):
            state = record_latency(state, A, i * 100, latency)
        return state

    assert p99_ms(fed(list(range(1, 101))), A, 10_000) == 99
    assert not in_breach(fed([10] * 99 + [5_000]), A, 10_000)
    assert in_breach(fed([10] * 98 + [5_000] * 2), A, 10_000)


def test_recovers_only_on_fresh_fast_answers_never_by_silence() -> None:
    """50 fast answers replace the slow ones; with no traffic the breach holds (silence is no evidence)."""
    slow = _fed([5_000] * 20)
    assert breaching(slow, 2_000) == frozenset({A})
    fast = slow
    for i in range(50):
        fast = record_latency(fast, A, 3_000 + i, 100)
    assert not in_breach(fast, A, 3_100)
    assert in_breach(slow, A, 2_000 + 600_000)
    assert p99_ms(slow, A, 2_000 + 600_000) == 5_000


def test_probe_is_due_after_silence_once_and_again_after_a_fast_answer() -> None:
    """A provider in breach is probed after a probe interval and probe_every_calls demotions, by one
    call; a fast answer keeps probing; a slow one waits for both again."""
    slow = _fed([5_000] * 20)  # newest sample at 1_900 ms
    at = 1_900 + CONFIG.probe_interval_ms
    for _ in range(CONFIG.probe_every_calls - 1):
        slow = record_demotion(slow, A)
    assert not probe_due(slow, A, at)  # one demotion short
    slow = record_demotion(slow, A)
    assert not probe_due(slow, A, at - 1)  # one millisecond short
    assert probe_due(slow, A, at)
    probing = start_probe(slow, A, at)
    assert not probe_due(probing, A, at + 1_000)  # in flight: concurrent calls keep it demoted
    answered = record_latency(probing, A, at + 200, 200)  # fast probe answer
    assert probe_due(answered, A, at + 201)
    slow_answer = record_latency(probing, A, at + 6_000, 6_000)
    assert probing.demoted_calls(A) == 0  # the probe reset the count
    assert not probe_due(slow_answer, A, at + 6_000 + CONFIG.probe_interval_ms)  # no demotions since
    recovered = probing
    for i in range(CONFIG.min_samples):
        recovered = record_latency(recovered, A, at + 200 * (i + 1), 200)
    assert not in_breach(recovered, A, at + 200 * CONFIG.min_samples)


def test_providers_are_judged_apart() -> None:
    """One provider's slow answers never demote another."""
    state = _fed([5_000] * 20)
    for i in range(20):
        state = record_latency(state, B, 5_000 + i, 50)
    assert breaching(state, 6_000) == frozenset({A})


@pytest.mark.parametrize("bad", [0, -1, True, 1.5])
def test_config_refuses_bad_values(bad: object) -> None:
    """A non-positive or non-int SLA is refused at construction (plain code, kept under -O)."""
    with pytest.raises(ValueError, match="sla_ms"):
        LatencyConfig(sla_ms=bad)  # type: ignore[arg-type]


samples = st.lists(st.tuples(st.integers(0, 5_000), st.integers(0, 60_000)), max_size=120)


@given(samples, st.integers(0, 200_000))
def test_window_invariants_hold_for_any_feed(feed: list[tuple[int, int]], later_ms: int) -> None:
    """Any feed keeps the state well formed; p99 lies within the judged samples; a breach implies at least
    min_samples judged and one above the SLA; starting a probe makes it no longer due."""
    state = new_latency(CONFIG)
    now = 0
    for gap, latency in feed:
        now += gap
        state = record_latency(state, A, now, latency)
    assert well_formed(state)
    at = now + later_ms
    judged_latencies = [lat for _, lat in judged(state, A, at)]
    p99 = p99_ms(state, A, at)
    if judged_latencies:
        assert p99 is not None
        assert min(judged_latencies) <= p99 <= max(judged_latencies)
    else:
        assert p99 is None
    if in_breach(state, A, at):
        assert len(judged_latencies) >= CONFIG.min_samples
        assert max(judged_latencies) > CONFIG.sla_ms
    if probe_due(state, A, at):
        assert not probe_due(start_probe(state, A, at), A, at)


def test_chain_demotes_a_provider_in_breach_like_a_cooling_one() -> None:
    """plan_chain puts a slow primary after the healthy fallback (DEMOTE) or skips it with reason latency_sla."""
    chain = (
        ChainEntry(provider=A, model="a", fallback_position=0),
        ChainEntry(provider=B, model="b", fallback_position=1),
    )
    common = {
        "endpoint_tiers": {A: PrivacyTier.STANDARD, B: PrivacyTier.STANDARD},
        "configured": frozenset({A, B}),
        "health": new_health(HealthConfig()),
        "now_ms": 0,
        "slow": frozenset({A}),
    }
    demoted = plan_chain(chain, PrivacyTier.STANDARD, **common)  # type: ignore[arg-type]
    assert [e.provider for e in demoted.chain] == [B, A]
    assert demoted.earliest_return_ms is None
    skipped = plan_chain(chain, PrivacyTier.STANDARD, cooling_policy=CoolingPolicy.SKIP, **common)  # type: ignore[arg-type]
    assert [e.provider for e in skipped.chain] == [B]
    assert [s.reason for s in skipped.skipped] == [SkipReason.LATENCY_SLA]
