"""Deployment groups and balancing: which deployment of a group a call tries first, and in what
order it fails over within the group before the next priority (issue 32, DESIGN.md "Traffic").

A *group* is a run of consecutive chain entries whose providers share one declared ``priority``
(``Member``). An entry with no member is a group of its own. Groups keep their order (failover
still walks the priorities in order); only the order *inside* a group changes, by the strategy:

==================  ==============================================================================
``ordered``         the chain's order (today's behaviour; the default)
``weighted``        weighted sampling without replacement: the first entry with probability
                    ``weight / sum(weights)``, exactly (integer micro-weights, no truncation to 0)
``least-outstanding``  power of two choices: two distinct entries drawn uniformly, the one with
                    fewer calls in flight first; the rest by in-flight count
``latency``         lowest EWMA of answer time (or time to first token) first; an entry without a
                    sample first (it needs one); with probability ``explore_ppm / 10^6`` a uniform
                    pick goes first instead (a little exploration)
==================  ==============================================================================

Everything is a pure function of the chain, the members, a snapshot (in-flight counts, EWMAs) and
random draws in [0, 1) passed in. The shell reads the snapshot and performs the order; health,
the latency SLA, tiers and budgets are applied afterwards by ``core.routing.plan_chain`` as now.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, replace

import icontract

from routeproof.core.types import ChainEntry

__all__ = [
    "MICRO",
    "BalanceSnapshot",
    "Member",
    "Strategy",
    "balances",
    "draws_needed",
    "ewma_ms",
    "groups_of",
    "order_chain",
]

MICRO = 1_000_000
"""Weights are integer millionths (``weight = 0.5`` is 500_000): exact, never truncated to 0."""

EWMA_ALPHA_PPM = 300_000
"""The latency EWMA's weight of a new sample (0.3): recent enough to follow a slowdown in a few calls."""

EXPLORE_PPM = 50_000
"""How often the latency strategy puts a uniformly drawn entry first (5 %)."""


class Strategy(enum.Enum):
    """How a group orders its deployments."""

    ORDERED = "ordered"
    WEIGHTED = "weighted"
    LEAST_OUTSTANDING = "least-outstanding"
    LATENCY = "latency"


@dataclass(frozen=True, slots=True, kw_only=True)
class Member:
    """One deployment's place in its alias's groups: its priority and its weight in millionths."""

    priority: int
    weight_micro: int = MICRO

    def __post_init__(self) -> None:
        if not isinstance(self.priority, int) or self.priority < 0:
            raise ValueError(f"Member.priority must be an int >= 0, got {self.priority!r}")
        if not isinstance(self.weight_micro, int) or self.weight_micro <= 0:
            raise ValueError(f"Member.weight_micro must be an int > 0, got {self.weight_micro!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class BalanceSnapshot:
    """What the strategies read: calls in flight and latency EWMAs (ms), by provider name."""

    in_flight: Mapping[str, int]
    ewma_ms: Mapping[str, int]
    explore_ppm: int = EXPLORE_PPM


def _name(entry: ChainEntry) -> str:
    return entry.provider.value


def _groups_of(chain: tuple[ChainEntry, ...], members: Mapping[str, Member]) -> tuple[tuple[ChainEntry, ...], ...]:
    groups: list[list[ChainEntry]] = []
    last: int | None = None
    for entry in chain:
        member = members.get(_name(entry))
        priority = None if member is None else member.priority
        if groups and priority is not None and priority == last:
            groups[-1].append(entry)
        else:
            groups.append([entry])
        last = priority
    return tuple(tuple(g) for g in groups)


@icontract.ensure(lambda chain, result: tuple(e for g in result for e in g) == chain)
@icontract.ensure(lambda result: all(len(g) >= 1 for g in result))
def groups_of(chain: tuple[ChainEntry, ...], members: Mapping[str, Member]) -> tuple[tuple[ChainEntry, ...], ...]:
    """The chain cut into groups: consecutive entries whose members share one priority."""
    return _groups_of(chain, members)


def _pick(weights: list[int], draw: float) -> int:
    """The index a draw in [0, 1) lands on, each index with probability weight / total (exact)."""
    total = sum(weights)
    target = min(total - 1, int(draw * total))
    for index, weight in enumerate(weights):
        if target < weight:
            return index
        target -= weight
    return len(weights) - 1  # pragma: no cover - target < total


def _weighted(group: list[ChainEntry], members: Mapping[str, Member], draws: list[float]) -> list[ChainEntry]:
    rest = list(group)
    ordered: list[ChainEntry] = []
    while len(rest) > 1:
        weights = [members[_name(e)].weight_micro if _name(e) in members else MICRO for e in rest]
        ordered.append(rest.pop(_pick(weights, draws.pop(0) if draws else 0.0)))
    return ordered + rest


def _least_outstanding(group: list[ChainEntry], snapshot: BalanceSnapshot, draws: list[float]) -> list[ChainEntry]:
    n = len(group)
    first = min(n - 1, int((draws.pop(0) if draws else 0.0) * n))
    second = min(n - 2, int((draws.pop(0) if draws else 0.0) * (n - 1)))
    second += second >= first  # two distinct entries, each pair equally likely
    load = [snapshot.in_flight.get(_name(e), 0) for e in group]
    winner = second if load[second] < load[first] else first
    rest = sorted((i for i in range(n) if i != winner), key=lambda i: load[i])
    return [group[winner], *(group[i] for i in rest)]


def _latency(group: list[ChainEntry], snapshot: BalanceSnapshot, draws: list[float]) -> list[ChainEntry]:
    n = len(group)
    explore = draws.pop(0) if draws else 1.0
    pick = draws.pop(0) if draws else 0.0
    by_ewma = sorted(range(n), key=lambda i: snapshot.ewma_ms.get(_name(group[i]), -1))  # unsampled first
    if explore * MICRO < snapshot.explore_ppm:
        chosen = min(n - 1, int(pick * n))
        by_ewma = [chosen, *(i for i in by_ewma if i != chosen)]
    return [group[i] for i in by_ewma]


def _order_chain(
    chain: tuple[ChainEntry, ...],
    members: Mapping[str, Member],
    strategy: Strategy,
    snapshot: BalanceSnapshot,
    draws: tuple[float, ...],
) -> tuple[ChainEntry, ...]:
    pool = [min(1.0, max(0.0, d)) for d in draws]
    ordered: list[ChainEntry] = []
    for group in _groups_of(chain, members):
        entries = list(group)
        if len(entries) > 1 and strategy is Strategy.WEIGHTED:
            entries = _weighted(entries, members, pool)
        elif len(entries) > 1 and strategy is Strategy.LEAST_OUTSTANDING:
            entries = _least_outstanding(entries, snapshot, pool)
        elif len(entries) > 1 and strategy is Strategy.LATENCY:
            entries = _latency(entries, snapshot, pool)
        ordered.extend(entries)
    # positions number this call's chain as it will be walked (records name the position tried)
    return tuple(replace(e, fallback_position=i) for i, e in enumerate(ordered))


def _same_entries(chain: tuple[ChainEntry, ...], result: tuple[ChainEntry, ...]) -> bool:
    def key(e: ChainEntry) -> tuple[str, str]:
        return (_name(e), e.model)

    return sorted(map(key, chain)) == sorted(map(key, result))


def _groups_kept(chain: tuple[ChainEntry, ...], members: Mapping[str, Member], result: tuple[ChainEntry, ...]) -> bool:
    """Every group occupies the same positions as before: balancing never crosses a priority."""
    start = 0
    for group in _groups_of(chain, members):
        names = sorted(_name(e) for e in group)
        if sorted(_name(e) for e in result[start : start + len(group)]) != names:
            return False
        start += len(group)
    return True


@icontract.require(lambda draws: all(0.0 <= d <= 1.0 for d in draws), "draws are in [0, 1]")
@icontract.ensure(_same_entries, "a permutation of the chain")
@icontract.ensure(_groups_kept)
@icontract.ensure(lambda result: all(e.fallback_position == i for i, e in enumerate(result)))
@icontract.ensure(
    lambda chain, strategy, result: (
        strategy is not Strategy.ORDERED
        or [(_name(e), e.model) for e in result] == [(_name(e), e.model) for e in chain]
    ),
    "ordered keeps the chain's order",
)
def order_chain(
    chain: tuple[ChainEntry, ...],
    members: Mapping[str, Member],
    strategy: Strategy,
    snapshot: BalanceSnapshot,
    draws: tuple[float, ...],
) -> tuple[ChainEntry, ...]:
    """The chain with each group ordered by ``strategy``; groups keep their places.

    ``draws`` supplies the randomness (``draws_needed(chain)`` of them; missing draws count as 0).
    """
    return _order_chain(chain, members, strategy, snapshot, draws)


@icontract.ensure(lambda strategy, result: not result or strategy is not Strategy.ORDERED)
@icontract.ensure(lambda members, result: not result or bool(members))
def balances(strategy: Strategy, members: Mapping[str, Member]) -> bool:
    """Whether ``order_chain`` can move anything: a strategy other than ``ORDERED`` over some members.
    When it cannot, a router takes no draw and keeps no latency sample for it (traffic port)."""
    return strategy is not Strategy.ORDERED and bool(members)


@icontract.ensure(lambda chain, result: result == 2 * len(chain))
def draws_needed(chain: tuple[ChainEntry, ...]) -> int:
    """How many draws ``order_chain`` may consume for ``chain`` (two per entry is always enough)."""
    return 2 * len(chain)


def _ewma_ms(previous_ms: int | None, sample_ms: int, alpha_ppm: int) -> int:
    if previous_ms is None:
        return sample_ms
    return (previous_ms * (MICRO - alpha_ppm) + sample_ms * alpha_ppm + MICRO // 2) // MICRO


@icontract.require(lambda sample_ms, alpha_ppm: sample_ms >= 0 and 0 < alpha_ppm <= MICRO)
@icontract.ensure(
    lambda previous_ms, sample_ms, result: (
        min(previous_ms if previous_ms is not None else sample_ms, sample_ms)
        <= result
        <= max(previous_ms if previous_ms is not None else sample_ms, sample_ms)
    ),
    "the average lies between the old value and the sample",
)
def ewma_ms(previous_ms: int | None, sample_ms: int, alpha_ppm: int = EWMA_ALPHA_PPM) -> int:
    """The latency EWMA after one more sample (the first sample is the average)."""
    return _ewma_ms(previous_ms, sample_ms, alpha_ppm)
