"""Latency SLA edges: config bounds, the state invariant clause by clause, the window's edge, p99's rank."""

from __future__ import annotations

import pytest

from routeproof.core.latency import (
    LatencyConfig,
    LatencyState,
    _is_suffix,
    _only_provider_changed,
    _ordered_non_negative,
    judged,
    p99_ms,
    well_formed,
)
from routeproof.core.types import ProviderKind

A, B = ProviderKind.ANTHROPIC, ProviderKind.OPENAI
_FIELDS = ("sla_ms", "window_ms", "max_samples", "min_samples", "probe_interval_ms", "probe_every_calls")


def test_every_config_field_accepts_one() -> None:
    """1 is the smallest valid value of every LatencyConfig field."""
    config = LatencyConfig(**dict.fromkeys(_FIELDS, 1))
    assert all(getattr(config, name) == 1 for name in _FIELDS)


def test_min_samples_may_equal_max_samples_but_not_exceed_it() -> None:
    """min_samples == max_samples is valid; min_samples > max_samples names both values."""
    assert LatencyConfig(min_samples=5, max_samples=5).min_samples == 5
    with pytest.raises(ValueError, match=r"min_samples \(6\) must be <= max_samples \(5\)"):
        LatencyConfig(min_samples=6, max_samples=5)


def _state(*samples: tuple[int, int], config: LatencyConfig | None = None) -> LatencyState:
    return LatencyState(config=config or LatencyConfig(), samples=((A, samples),))


def test_well_formed_accepts_sorted_non_negative_samples_within_the_cap() -> None:
    """Sorted, non-negative samples within max_samples, each provider once, are well formed."""
    assert well_formed(_state((0, 0), (5, 10), (5, 3)))


def test_well_formed_rejects_a_provider_listed_twice() -> None:
    """The same provider twice in samples is not well formed."""
    assert not well_formed(LatencyState(samples=((A, ((1, 1),)), (A, ((2, 2),)))))
    assert well_formed(LatencyState(samples=((A, ((1, 1),)), (B, ((2, 2),)))))


def test_well_formed_rejects_a_negative_time_or_latency() -> None:
    """A negative timestamp or a negative latency breaks the invariant, even in sorted order."""
    assert not well_formed(_state((0, -1), (1, 1)))
    assert not well_formed(_state((-1, 1), (1, 1)))


def test_well_formed_rejects_samples_over_the_cap() -> None:
    """More samples than max_samples breaks the invariant, even when sorted and non-negative."""
    config = LatencyConfig(max_samples=2, min_samples=1)
    assert well_formed(_state((0, 1), (1, 1), config=config))
    assert not well_formed(_state((0, 1), (1, 1), (2, 1), config=config))


def test_well_formed_rejects_samples_out_of_time_order() -> None:
    """Samples must be oldest first."""
    assert not well_formed(_state((2, 1), (1, 1)))


def test_the_window_excludes_a_sample_exactly_window_ms_old() -> None:
    """Judged samples are those strictly younger than window_ms, by their timestamp (not their latency)."""
    config = LatencyConfig(window_ms=1_000, min_samples=1)
    state = _state((0, 5), (500, 7), (900, 9), config=config)
    assert judged(state, A, 1_400) == ((500, 7), (900, 9))
    assert judged(state, A, 1_500) == ((900, 9),)
    assert judged(state, A, 999) == ((0, 5), (500, 7), (900, 9))


def test_p99_of_101_samples_is_the_101st_rank_of_0_99() -> None:
    """Nearest rank: with 101 samples the p99 is the 100th smallest (ceil(0.99 * 101) = 100)."""
    config = LatencyConfig(min_samples=1)
    state = _state(*((i, i + 1) for i in range(101)), config=config)
    assert p99_ms(state, A, 101) == 100


def test_ordered_non_negative_holds_for_no_samples_and_checks_each_part() -> None:
    """No samples are in order; times out of order, a negative first time or a negative latency are not."""
    assert _ordered_non_negative(())
    assert _ordered_non_negative(((0, 0), (5, 3)))
    assert not _ordered_non_negative(((5, 1), (4, 1)))
    assert not _ordered_non_negative(((-1, 1), (4, 1)))
    assert not _ordered_non_negative(((1, 1), (4, -1)))


def test_is_suffix_compares_the_kept_tail() -> None:
    """Nothing kept is a suffix of anything; kept samples must be the previous window's tail."""
    assert _is_suffix((), ((1, 1),))
    assert _is_suffix(((2, 2),), ((1, 1), (2, 2))) is True
    assert _is_suffix(((1, 1),), ((1, 1), (2, 2))) is False


def test_only_provider_changed_refuses_every_other_change() -> None:
    """record_latency's postcondition: the config and the other providers' samples kept, the provider
    listed once and last, at most max_samples of them; each other change is refused."""
    config = LatencyConfig(min_samples=1, max_samples=2)
    before = LatencyState(config=config, samples=((A, ((1, 5),)), (B, ((2, 6),))))
    after = LatencyState(config=config, samples=((B, ((2, 6),)), (A, ((1, 5), (3, 7)))))  # A at the cap
    assert _only_provider_changed(before, A, after)
    assert not _only_provider_changed(before, A, LatencyState(config=LatencyConfig(), samples=after.samples))
    assert not _only_provider_changed(before, A, LatencyState(config=config, samples=((B, ()), after.samples[1])))
    assert not _only_provider_changed(
        before, A, LatencyState(config=config, samples=(after.samples[1], after.samples[0]))
    )
    over = LatencyState(config=config, samples=((B, ((2, 6),)), (A, ((1, 5), (3, 7), (4, 8)))))
    assert not _only_provider_changed(before, A, over)
    assert not _only_provider_changed(LatencyState(config=config), A, LatencyState(config=config))
