"""The per-call fast paths of core/latency.py (issue 13): the bisected window and the C-level
well_formed give exactly the answers of their definitions, at the window's edges too."""

from __future__ import annotations

import itertools
from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from routeproof.core.latency import (
    LatencyConfig,
    LatencyState,
    breaching,
    judged,
    new_latency,
    over_sla,
    record_latency,
    tallies_sound,
    well_formed,
)
from routeproof.core.types import ProviderId, ProviderKind

A = ProviderKind.ANTHROPIC
B = ProviderKind.OPENAI
CONFIG = LatencyConfig(sla_ms=1_000, window_ms=1_000, max_samples=50, min_samples=2)
TALLY_CONFIG = LatencyConfig(sla_ms=1_000, window_ms=2_000, max_samples=20, min_samples=5)


def test_a_sample_exactly_window_ms_old_is_out_of_the_window() -> None:
    """now - at < window_ms is strict: a sample window_ms old is not judged, one a millisecond younger is."""
    state = replace(new_latency(CONFIG), samples=((A, ((0, 1), (1, 2), (500, 3), (900, 4))),))
    assert judged(state, A, 1_001) == ((500, 3), (900, 4))  # (1, 2) is exactly 1,000 ms old
    assert judged(state, A, 1_000) == ((1, 2), (500, 3), (900, 4))


@given(
    ats=st.lists(st.integers(0, 3_000), max_size=20).map(sorted),
    now_ms=st.integers(0, 6_000),
)
def test_window_is_the_definition(ats: list[int], now_ms: int) -> None:
    """The bisected window holds exactly the samples with now - at < window_ms (when enough of them)."""
    samples = tuple((at, i) for i, at in enumerate(ats))
    state = replace(new_latency(CONFIG), samples=((A, samples),) if samples else ())
    recent = tuple(s for s in samples if now_ms - s[0] < CONFIG.window_ms)
    expected = recent if len(recent) >= CONFIG.min_samples else samples[-CONFIG.min_samples :]
    assert judged(state, A, now_ms) == expected


@given(st.lists(st.tuples(st.integers(-3, 5), st.integers(-3, 5)), max_size=6))
def test_well_formed_is_the_definition(samples: list[tuple[int, int]]) -> None:
    """Time order, non-negative times and latencies: the fast check agrees with the plain definition."""
    state = replace(new_latency(CONFIG), samples=((A, tuple(samples)),))
    expected = all(at >= 0 and lat >= 0 for at, lat in samples) and all(
        a[0] <= b[0] for a, b in itertools.pairwise(samples)
    )
    assert well_formed(state) is expected


SMALL = LatencyConfig(sla_ms=1_000, window_ms=10, max_samples=8, min_samples=3)  # edges are often hit


@given(
    ats=st.lists(st.integers(0, 30), max_size=12).map(sorted),
    step_ms=st.integers(0, 15),
    latency_ms=st.integers(0, 5),
)
def test_record_latency_is_the_definition(ats: list[int], step_ms: int, latency_ms: int) -> None:
    """The bisected record_latency keeps exactly the samples its definition keeps: the newest
    min_samples - 1 whatever their age, and those with at_ms - at < window_ms; then the cap."""
    previous = tuple((at, i) for i, at in enumerate(ats))[-SMALL.max_samples :]
    state = replace(new_latency(SMALL), samples=((A, previous),) if previous else ())
    at_ms = (previous[-1][0] if previous else 0) + step_ms
    keep_newest = len(previous) - (SMALL.min_samples - 1)
    kept = tuple(s for i, s in enumerate(previous) if i >= keep_newest or at_ms - s[0] < SMALL.window_ms)
    expected = (*kept, (at_ms, latency_ms))[-SMALL.max_samples :]
    assert record_latency(state, A, at_ms, latency_ms).of(A) == expected


def _breach_by_definition(state: LatencyState, now_ms: int) -> frozenset[ProviderId]:
    """The providers whose judged samples' nearest-rank p99 exceeds the SLA, sorted afresh."""
    out: set[ProviderId] = set()
    for provider, _ in state.samples:
        latencies = sorted(latency for _, latency in judged(state, provider, now_ms))
        if len(latencies) >= state.config.min_samples:
            rank = -(-99 * len(latencies) // 100)
            if latencies[max(1, rank) - 1] > state.config.sla_ms:
                out.add(provider)
    return frozenset(out)


FEED = st.lists(
    st.tuples(st.sampled_from((A, B)), st.integers(0, 400), st.sampled_from((0, 999, 1_000, 1_001, 5_000))),
    max_size=120,
)


@given(feed=FEED, later=st.integers(0, 2_500))
def test_breach_from_the_tally_is_the_definition(feed: list[tuple[ProviderKind, int, int]], later: int) -> None:
    """The tally record_latency keeps of samples over the SLA gives breaching() exactly the sorted
    p99's answer, after any feed (samples dropped by the window and by the cap, both providers) and
    at any later instant (all in the window: the tally; some out of it: sorted afresh); and each
    tally is the count it caches."""
    state, now = new_latency(TALLY_CONFIG), 0
    for provider, step, latency in feed:
        now += step
        state = record_latency(state, provider, now, latency)
        assert tallies_sound(state)
        assert breaching(state, now) == _breach_by_definition(state, now)
    assert breaching(state, now + later) == _breach_by_definition(state, now + later)


def test_a_tally_counts_only_for_its_own_samples_and_sla() -> None:
    """A state whose samples or SLA were replaced by hand keeps the old tallies, which then do not
    count: the samples are counted afresh, never misjudged by a stale tally."""
    state = new_latency(TALLY_CONFIG)
    for at in range(5):
        state = record_latency(state, A, at, 5_000)  # all over the SLA: in breach
    assert breaching(state, 5) == {A}
    fast = tuple((at, 1) for at in range(5))
    assert breaching(replace(state, samples=((A, fast),)), 5) == frozenset()
    assert breaching(replace(state, config=replace(TALLY_CONFIG, sla_ms=10_000)), 5) == frozenset()
    assert over_sla(state, state.of(A)) == 5


def test_the_tally_is_used_only_while_every_sample_is_in_the_window() -> None:
    """At the window's edge (the oldest sample exactly window_ms old) the tally of all samples would
    count slow samples no longer judged: the judged ones (the fast newest) decide."""
    state = new_latency(TALLY_CONFIG)
    for latency in (5_000,) * 5:
        state = record_latency(state, A, 0, latency)
    for latency in (1,) * 5:
        state = record_latency(state, A, 1, latency)
    assert breaching(state, TALLY_CONFIG.window_ms - 1) == {A}  # all ten judged: 5 of 10 over
    assert breaching(state, TALLY_CONFIG.window_ms) == frozenset()  # the slow five are out of the window


def test_recording_keeps_probes_and_demotions_and_the_others_order() -> None:
    """record_latency builds its state with every field named (issue 25): the probes and demotion
    counts are kept, and a provider not listed last moves last (the others keep their order)."""
    state = new_latency(TALLY_CONFIG)
    state = record_latency(record_latency(state, A, 0, 1), B, 0, 1)
    state = replace(state, probes=((A, 3),), demotions=((B, 2),))
    after = record_latency(state, A, 5, 1)
    assert after.probes == ((A, 3),)
    assert after.demotions == ((B, 2),)
    assert [k for k, _ in after.samples] == [B, A]
    assert record_latency(after, A, 6, 1).samples == ((B, ((0, 1),)), (A, ((0, 1), (5, 1), (6, 1))))
