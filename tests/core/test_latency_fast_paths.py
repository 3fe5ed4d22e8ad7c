"""The per-call fast paths of core/latency.py (issue 13): the bisected window and the C-level
well_formed give exactly the answers of their definitions, at the window's edges too."""

from __future__ import annotations

import itertools
from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from routeproof.core.latency import LatencyConfig, judged, new_latency, record_latency, well_formed
from routeproof.core.types import ProviderKind

A = ProviderKind.ANTHROPIC
CONFIG = LatencyConfig(sla_ms=1_000, window_ms=1_000, max_samples=50, min_samples=2)


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
