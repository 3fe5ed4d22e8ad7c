"""The latency-SLA failover trigger (seed 003: "Latency SLA breach: P99 > configured threshold").

Per provider, the latencies of its *answered* attempts (time to first token for a stream) over a
sliding window: the samples of the last :data:`WINDOW_MS` of the shell's clock (at most
:data:`MAX_SAMPLES`), or, when fewer than :data:`MIN_SAMPLES` are that recent, the newest
:data:`MIN_SAMPLES` whatever their age (no traffic is no evidence of recovery). When a provider has
at least :data:`MIN_SAMPLES` samples and their p99 (nearest rank) exceeds ``sla_ms``, it is in
breach: later calls demote it like a cooling provider (``routing.plan_chain``).

It recovers when its p99 does, which takes fresh samples: a provider in breach whose newest sample
is :data:`PROBE_INTERVAL_MS` old *and* that has been demoted by :data:`PROBE_EVERY_CALLS` calls since
its last probe is *due a probe*, and the next call tries it first (:func:`start_probe` marks it, so
concurrent calls do not all probe). A probe answered within the SLA makes the next call probe again at
once, so fast answers push the slow samples out at the pace of calls; once the judged samples' p99 is
within the SLA the demotion ends. A slow probe answer waits again: while a provider stays slow, at
most one call in :data:`PROBE_EVERY_CALLS` (0.5 %) pays its latency, whatever the call rate, so the
chain's p99 is not the slow provider's.

Pure: time is the integer milliseconds the shell passes in; every function returns a new value.
"""

from __future__ import annotations

import bisect
import operator
from dataclasses import dataclass, field, replace

import icontract

from routeproof.core.constants import PROVIDER_DEFAULT_TIMEOUT_MS
from routeproof.core.types import ProviderId

__all__ = [
    "MAX_SAMPLES",
    "MIN_SAMPLES",
    "PROBE_EVERY_CALLS",
    "PROBE_INTERVAL_MS",
    "WINDOW_MS",
    "LatencyConfig",
    "LatencyState",
    "breaching",
    "in_breach",
    "judged",
    "new_latency",
    "over_sla",
    "p99_ms",
    "probe_due",
    "record_accepts",
    "record_demotion",
    "record_latency",
    "record_sound",
    "start_probe",
    "tallies_sound",
    "well_formed",
]

WINDOW_MS = 60_000
"""How far back a latency sample counts."""
MAX_SAMPLES = 200
"""At most this many samples per provider (the newest)."""
MIN_SAMPLES = 10
"""Fewer samples than this say nothing about a p99: no breach."""
PROBE_INTERVAL_MS = 60_000
"""How long a provider in breach goes without a sample before one call probes it."""
PROBE_EVERY_CALLS = 200
"""...and how many calls must have demoted it since its last probe (bounds the probe share at 0.5 %)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LatencyConfig:
    """``[driver.failover] latency_sla_ms`` and the window it is judged over."""

    sla_ms: int = PROVIDER_DEFAULT_TIMEOUT_MS
    window_ms: int = WINDOW_MS
    max_samples: int = MAX_SAMPLES
    min_samples: int = MIN_SAMPLES
    probe_interval_ms: int = PROBE_INTERVAL_MS
    probe_every_calls: int = PROBE_EVERY_CALLS

    def __post_init__(self) -> None:  # plain code: kept under python -O
        names = ("sla_ms", "window_ms", "max_samples", "min_samples", "probe_interval_ms", "probe_every_calls")
        for name in names:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"LatencyConfig.{name} must be an int >= 1, got {value!r}")
        if self.min_samples > self.max_samples:
            raise ValueError(f"min_samples ({self.min_samples!r}) must be <= max_samples ({self.max_samples!r})")


Sample = tuple[int, int]  # (at_ms, latency_ms)
_AT, _LATENCY = operator.itemgetter(0), operator.itemgetter(1)
Tally = tuple[tuple[Sample, ...], int, int]
"""(a provider's samples, an SLA in ms, how many of those samples' latencies exceed it): see :func:`over_sla`."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LatencyState:
    """Each provider's recent samples, oldest first."""

    config: LatencyConfig = LatencyConfig()
    samples: tuple[tuple[ProviderId, tuple[Sample, ...]], ...] = ()
    probes: tuple[tuple[ProviderId, int], ...] = ()  # when each provider's last probe started
    demotions: tuple[tuple[ProviderId, int], ...] = ()  # calls that demoted it since its last probe
    # A cache of a derived value (issue 25): per samples tuple :func:`record_latency` made, how many of
    # its samples exceed the SLA (:data:`Tally`). An entry counts only for that very tuple (matched by
    # identity) and that SLA, so a state built or replaced by hand is never misjudged, only counted afresh
    # (:func:`over_sla`); not part of the value (equality, repr).
    tallies: tuple[Tally, ...] = field(default=(), compare=False, repr=False)

    def demoted_calls(self, provider: ProviderId) -> int:
        """How many calls demoted ``provider`` since its last probe."""
        return next((n for k, n in self.demotions if k == provider), 0)

    def probe_at(self, provider: ProviderId) -> int | None:
        """When ``provider``'s last probe started, or None."""
        return next((at for k, at in self.probes if k == provider), None)

    def of(self, provider: ProviderId) -> tuple[Sample, ...]:
        """``provider``'s samples, oldest first (empty when never recorded)."""
        for k, s in self.samples:  # a loop, not next(generator): it runs twice per routed call
            if k == provider:
                return s
        return ()


def well_formed(state: LatencyState) -> bool:
    """At most max_samples per provider, each provider once, non-negative values in time order."""
    kinds = [k for k, _ in state.samples]
    return len(kinds) == len(set(kinds)) and all(
        len(samples) <= state.config.max_samples and _ordered_non_negative(samples) for _, samples in state.samples
    )


def _ordered_non_negative(samples: tuple[Sample, ...]) -> bool:
    """Times in order (so all >= 0 when the first is) and latencies >= 0, in C-level loops: this
    runs as a pre- and postcondition on every routed call, over up to max_samples samples."""
    ats = list(map(_AT, samples))
    return ats == sorted(ats) and (not ats or ats[0] >= 0) and min(map(_LATENCY, samples), default=0) >= 0


def new_latency(config: LatencyConfig) -> LatencyState:
    """No samples yet."""
    return LatencyState(config=config)


def _window(samples: tuple[Sample, ...], now_ms: int, window_ms: int) -> tuple[Sample, ...]:
    """The samples with ``now_ms - at < window_ms``: a suffix, as samples are in time order (bisected)."""
    return samples[bisect.bisect_right(samples, now_ms - window_ms, key=_AT) :]


def judged(state: LatencyState, provider: ProviderId, now_ms: int) -> tuple[Sample, ...]:
    """The samples ``provider`` is judged on at ``now_ms``: the window's, or the newest min_samples."""
    samples = state.of(provider)
    recent = _window(samples, now_ms, state.config.window_ms)
    return recent if len(recent) >= state.config.min_samples else samples[-state.config.min_samples :]


def _is_suffix(kept: tuple[Sample, ...], previous: tuple[Sample, ...]) -> bool:
    return not kept or previous[len(previous) - len(kept) :] == kept


def _only_provider_changed(state: LatencyState, provider: ProviderId, result: LatencyState) -> bool:
    """What record_latency's result keeps of ``state``: the config and every other provider's samples
    (the same values, in order), ``provider`` listed once, last, with at most max_samples samples.

    With the preconditions (``well_formed(state)``, a new sample not older than the newest, both
    values >= 0) and the two other postconditions (the old samples kept are a suffix of the old ones,
    the new one is last), this implies ``well_formed(result)`` without scanning every sample again
    (a second O(samples) pass per routed call; issue 25). ``tests/core/test_latency.py`` checks
    ``well_formed`` itself after any feed."""
    others = tuple((k, s) for k, s in state.samples if k != provider)
    return (
        result.config == state.config
        and result.samples[:-1] == others
        and bool(result.samples)
        and result.samples[-1][0] == provider
        and len(result.samples[-1][1]) <= result.config.max_samples
    )


def _nearest_rank_p99(latencies: list[int]) -> int:
    ordered = sorted(latencies)
    return ordered[_p99_index(len(ordered))]


def _p99_index(n: int) -> int:
    """The 0-based index of the nearest-rank p99 among ``n`` ordered values (``n >= 1``)."""
    rank = -(-99 * n // 100)  # ceil(0.99 n), 1-based
    return max(1, rank) - 1


def _count_over(samples: tuple[Sample, ...], sla_ms: int) -> int:
    """How many of ``samples`` have a latency above ``sla_ms`` (C-level loops)."""
    return sum(map(sla_ms.__lt__, map(_LATENCY, samples)))


def over_sla(state: LatencyState, samples: tuple[Sample, ...]) -> int:
    """How many of ``samples`` have a latency above ``state``'s SLA: the tally :func:`record_latency`
    kept for this very tuple when there is one (no pass over the samples), else counted."""
    sla_ms = state.config.sla_ms
    for tallied, at_sla_ms, over in state.tallies:
        if tallied is samples and at_sla_ms == sla_ms:
            return over
    return _count_over(samples, sla_ms)


def tallies_sound(state: LatencyState) -> bool:
    """Every tally is the count it caches (:data:`Tally`)."""
    return all(over == _count_over(tallied, sla_ms) for tallied, sla_ms, over in state.tallies)


def record_accepts(state: LatencyState, provider: ProviderId, at_ms: int, latency_ms: int) -> bool:
    """:func:`record_latency`'s precondition, one predicate (each condition costs icontract about ten
    Python calls, and this runs per routed call; issue 25): a well-formed state, both values >= 0,
    and a sample not older than ``provider``'s newest (the shell's clock never runs back)."""
    previous = state.of(provider)
    return well_formed(state) and at_ms >= 0 and latency_ms >= 0 and (not previous or previous[-1][0] <= at_ms)


def record_sound(state: LatencyState, provider: ProviderId, at_ms: int, latency_ms: int, result: LatencyState) -> bool:
    """:func:`record_latency`'s postcondition, one predicate: only ``provider``'s samples changed
    (listed last, once, within max_samples: :func:`_only_provider_changed`), the new sample is its
    last, and the old ones kept are the newest of the old, unchanged (O(n), not O(n^2))."""
    mine = result.of(provider)
    return (
        _only_provider_changed(state, provider, result)
        and bool(mine)
        and mine[-1] == (at_ms, latency_ms)
        and _is_suffix(mine[:-1], state.of(provider))
        and over_sla(result, mine) == _count_over(mine, result.config.sla_ms)
    )


@icontract.require(record_accepts, "well formed, values >= 0, and the shell's clock never runs back")
@icontract.ensure(
    record_sound,
    "only the provider's samples changed (listed last, once, within max_samples), the new one last,"
    " and their tally of samples over the SLA is their count",
)
def record_latency(state: LatencyState, provider: ProviderId, at_ms: int, latency_ms: int) -> LatencyState:
    """Add one answered attempt's latency, dropping samples outside the window or beyond the cap."""
    previous = state.of(provider)
    keep_newest = len(previous) - (state.config.min_samples - 1)  # the newest ones are kept whatever their age
    # Kept: index >= keep_newest, or at_ms - at < window_ms. Samples are in time order, so both are
    # suffixes and so is their union: it starts at the smaller start (bisected, not scanned per call).
    cutoff_ms = at_ms - state.config.window_ms  # a sample at or before it is out of the window
    # all in the window (the usual case at any call rate): the bisection's answer, 0, without it
    in_window = 0 if not previous or previous[0][0] > cutoff_ms else bisect.bisect_right(previous, cutoff_ms, key=_AT)
    # ... and, with the new sample, at most max_samples: the newest. One copy of the kept ones, not two
    # (kept, then the cap's slice of kept + new): it is up to max_samples long, per routed call.
    start = max(0, min(keep_newest, in_window), len(previous) + 1 - state.config.max_samples)
    samples = previous[start:] + ((at_ms, latency_ms),)  # noqa: RUF005  # one copy of the kept (unpacking: two)
    listed = state.samples  # the provider listed last already (and once: well_formed), as after its last call
    others = listed[:-1] if listed and listed[-1][0] == provider else tuple((k, s) for k, s in listed if k != provider)
    # the tally of samples over the SLA: the old one less the samples dropped plus the new one (each a
    # suffix: samples[:-1] is the newest of previous), so no pass over all of them per call
    sla_ms = state.config.sla_ms
    over = over_sla(state, previous) + (latency_ms > sla_ms)
    for _, dropped_ms in previous[:start]:  # the samples dropped (none or one per call): a plain loop
        over -= dropped_ms > sla_ms
    kept_tallies = (t for t in state.tallies if any(t[0] is s for _, s in others)) if others else ()
    tallies = (*kept_tallies, (samples, sla_ms, over))
    return LatencyState(  # every field named (not dataclasses.replace: its field loop runs per call)
        config=state.config,
        samples=(*others, (provider, samples)),
        probes=state.probes,
        demotions=state.demotions,
        tallies=tallies,
    )


@icontract.require(well_formed)
@icontract.ensure(
    lambda state, provider, now_ms, result: (
        result is None
        or min(latency for _, latency in judged(state, provider, now_ms))
        <= result
        <= max(latency for _, latency in judged(state, provider, now_ms))
    )
)
def p99_ms(state: LatencyState, provider: ProviderId, now_ms: int) -> int | None:
    """The nearest-rank p99 of the samples ``provider`` is judged on, or None with no sample."""
    latencies = [latency for _, latency in judged(state, provider, now_ms)]
    return _nearest_rank_p99(latencies) if latencies else None


@icontract.require(well_formed)
@icontract.ensure(
    lambda state, provider, now_ms, result: (
        not result or len(judged(state, provider, now_ms)) >= state.config.min_samples
    )
)
def in_breach(state: LatencyState, provider: ProviderId, now_ms: int) -> bool:
    """Whether ``provider``'s p99 exceeds the SLA, judged on at least ``min_samples`` samples."""
    return _in_breach(state, provider, now_ms)


def _in_breach(state: LatencyState, provider: ProviderId, now_ms: int) -> bool:
    config = state.config
    samples = state.of(provider)
    n = len(samples)
    if n < config.min_samples:  # then judged() holds fewer than min_samples too
        return False
    if now_ms - samples[0][0] < config.window_ms:  # all in the window: judged() is all of them
        # the p99 (nearest rank, 0-based index i of n ordered) exceeds the SLA exactly when at least
        # n - i samples do: the tally record_latency keeps, no sort per call (issue 25)
        return over_sla(state, samples) >= n - _p99_index(n)
    samples = judged(state, provider, now_ms)
    return _nearest_rank_p99(list(map(_LATENCY, samples))) > config.sla_ms  # C-level: it runs per call


@icontract.require(well_formed)
@icontract.ensure(lambda state, provider, now_ms, result: not result or in_breach(state, provider, now_ms))
def probe_due(state: LatencyState, provider: ProviderId, now_ms: int) -> bool:
    """Whether one call may try ``provider`` (in breach) first: no probe in flight, and either its newest
    answer was within the SLA (recovery goes on at the pace of answers) or it has been silent for a
    probe interval."""
    if not in_breach(state, provider, now_ms):
        return False
    last_at, last_latency = state.of(provider)[-1]
    probe = state.probe_at(provider)
    in_flight = probe is not None and probe >= last_at  # a probe is in flight (or was never answered)
    if not in_flight and last_latency <= state.config.sla_ms:  # the newest answer was fast: keep probing
        return True
    quiet_since = probe if in_flight and probe is not None else last_at
    return (
        now_ms - quiet_since >= state.config.probe_interval_ms
        and state.demoted_calls(provider) >= state.config.probe_every_calls
    )


@icontract.require(well_formed)
@icontract.require(probe_due)
@icontract.ensure(lambda provider, now_ms, result: result.probe_at(provider) == now_ms)
@icontract.ensure(lambda provider, now_ms, result: not probe_due(result, provider, now_ms))
@icontract.ensure(lambda state, result: result.samples == state.samples)
def start_probe(state: LatencyState, provider: ProviderId, now_ms: int) -> LatencyState:
    """Mark that a call now probes ``provider`` (later calls keep it demoted until its answer)."""
    others = tuple((k, at) for k, at in state.probes if k is not provider)
    counts = tuple((k, n) for k, n in state.demotions if k is not provider)
    return replace(state, probes=(*others, (provider, now_ms)), demotions=counts)


@icontract.require(well_formed)
@icontract.ensure(lambda state, provider, result: result.demoted_calls(provider) == state.demoted_calls(provider) + 1)
@icontract.ensure(lambda state, result: result.samples == state.samples and result.probes == state.probes)
def record_demotion(state: LatencyState, provider: ProviderId) -> LatencyState:
    """One more call demoted ``provider`` (the count that paces its probes)."""
    counts = tuple((k, n) for k, n in state.demotions if k is not provider)
    return replace(state, demotions=(*counts, (provider, state.demoted_calls(provider) + 1)))


@icontract.require(well_formed)
def breaching(state: LatencyState, now_ms: int) -> frozenset[ProviderId]:
    """Every provider in breach of the SLA at ``now_ms``.

    It runs on every routed call, so it applies :func:`in_breach`'s body, not its contracted entry
    (whose checks repeated this one's ``well_formed`` per provider); ``in_breach``'s own contract is
    checked where it is called (tests/core, CrossHair) and by :func:`probe_due`."""
    slow = []
    for k, _ in state.samples:  # a loop, not a generator: it runs per routed call
        if _in_breach(state, k, now_ms):
            slow.append(k)
    return frozenset(slow)
