"""Deployment groups and their strategies (core/balance.py): exact weights, power of two choices,
latency EWMA with exploration, groups that never cross a priority."""

from __future__ import annotations

from collections import Counter

import icontract
import pytest
from hypothesis import given
from hypothesis import strategies as st

from routeproof.core.balance import (
    MICRO,
    BalanceSnapshot,
    Member,
    Strategy,
    draws_needed,
    ewma_ms,
    groups_of,
    order_chain,
)
from routeproof.core.types import ChainEntry, ProviderName
from routeproof.traffic_store.port import Traffic, TrafficConfig

EMPTY = BalanceSnapshot(in_flight={}, ewma_ms={})


def chain(*names: str) -> tuple[ChainEntry, ...]:
    """Chain entries for ``names`` in order."""
    return tuple(ChainEntry(provider=ProviderName(n), model="m", fallback_position=i) for i, n in enumerate(names))


def names(entries: tuple[ChainEntry, ...]) -> list[str]:
    """The provider names of ``entries``."""
    return [e.provider.value for e in entries]


def test_groups_are_runs_of_one_priority() -> None:
    """Consecutive entries at one priority form a group; an entry without a member is alone."""
    members = {"a": Member(priority=1), "b": Member(priority=1), "c": Member(priority=2)}
    groups = groups_of(chain("a", "b", "c", "x"), members)
    assert [names(g) for g in groups] == [["a", "b"], ["c"], ["x"]]


def test_ordered_keeps_the_chain() -> None:
    """The default strategy changes nothing."""
    members = {"a": Member(priority=1), "b": Member(priority=1)}
    assert names(order_chain(chain("a", "b"), members, Strategy.ORDERED, EMPTY, (0.9, 0.9))) == ["a", "b"]


def test_weighted_first_pick_is_exact() -> None:
    """Weights 0.5/0.3/0.2 cut [0, 1) into exactly those shares of first picks."""
    members = {
        "a": Member(priority=0, weight_micro=500_000),
        "b": Member(priority=0, weight_micro=300_000),
        "c": Member(priority=0, weight_micro=200_000),
    }
    firsts = Counter(
        order_chain(chain("a", "b", "c"), members, Strategy.WEIGHTED, EMPTY, (i / 1000, 0.5))[0].provider.value
        for i in range(1000)
    )
    assert firsts == {"a": 500, "b": 300, "c": 200}


def test_a_tiny_weight_is_not_truncated_to_zero() -> None:
    """A weight of one millionth still wins its share (Bifrost #5473 truncated fractions to 0)."""
    members = {"a": Member(priority=0, weight_micro=MICRO - 1), "b": Member(priority=0, weight_micro=1)}
    assert names(order_chain(chain("a", "b"), members, Strategy.WEIGHTED, EMPTY, (0.9999995, 0.0)))[0] == "b"


def test_least_outstanding_prefers_the_idler_of_two() -> None:
    """Of the two drawn deployments the one with fewer calls in flight goes first."""
    members = {n: Member(priority=0) for n in "abc"}
    snapshot = BalanceSnapshot(in_flight={"a": 5, "b": 1, "c": 9}, ewma_ms={})
    ordered = order_chain(chain("a", "b", "c"), members, Strategy.LEAST_OUTSTANDING, snapshot, (0.0, 0.0))
    assert names(ordered) == ["b", "a", "c"]  # drew a and b: b is idler; then the rest by load


def test_latency_prefers_the_lowest_ewma_and_explores() -> None:
    """The fastest EWMA first; an exploration draw puts a uniform pick first instead."""
    members = {n: Member(priority=0) for n in "ab"}
    snapshot = BalanceSnapshot(in_flight={}, ewma_ms={"a": 900, "b": 100})
    assert names(order_chain(chain("a", "b"), members, Strategy.LATENCY, snapshot, (0.9, 0.0)))[0] == "b"
    assert names(order_chain(chain("a", "b"), members, Strategy.LATENCY, snapshot, (0.01, 0.0)))[0] == "a"


def test_latency_tries_an_unsampled_deployment_first() -> None:
    """A deployment without a sample goes first: it needs one."""
    members = {n: Member(priority=0) for n in "ab"}
    snapshot = BalanceSnapshot(in_flight={}, ewma_ms={"a": 10})
    assert names(order_chain(chain("a", "b"), members, Strategy.LATENCY, snapshot, (0.9, 0.0)))[0] == "b"


@given(
    st.lists(st.integers(0, 3), min_size=1, max_size=6),
    st.sampled_from(list(Strategy)),
    st.lists(st.floats(0.0, 1.0), min_size=12, max_size=12),
    st.lists(st.integers(0, 20), min_size=6, max_size=6),
)
def test_order_is_a_permutation_within_groups(
    priorities: list[int], strategy: Strategy, draws: list[float], loads: list[int]
) -> None:
    """Every strategy returns the chain's entries, each group in its own places (the contracts hold)."""
    labels = [f"p{i}" for i in range(len(priorities))]
    members = {
        n: Member(priority=p, weight_micro=1 + 1000 * i)
        for i, (n, p) in enumerate(zip(labels, priorities, strict=True))
    }
    snapshot = BalanceSnapshot(
        in_flight=dict(zip(labels, loads[: len(labels)], strict=True)),
        ewma_ms=dict(zip(labels, loads[: len(labels)], strict=True)),
    )
    entries = chain(*labels)
    result = order_chain(entries, members, strategy, snapshot, tuple(draws[: draws_needed(entries)]))
    assert sorted(names(result)) == sorted(labels)


def test_member_rejects_a_zero_weight() -> None:
    """A weight must be positive; the message names the value."""
    with pytest.raises(ValueError, match="weight_micro must be an int > 0, got 0"):
        Member(priority=0, weight_micro=0)


def test_draws_out_of_range_are_refused() -> None:
    """order_chain's precondition: draws lie in [0, 1]."""
    with pytest.raises(icontract.ViolationError):
        order_chain(chain("a"), {}, Strategy.WEIGHTED, EMPTY, (1.5,))


@given(st.one_of(st.none(), st.integers(0, 10**6)), st.integers(0, 10**6))
def test_ewma_lies_between_old_and_new(previous: int | None, sample: int) -> None:
    """The EWMA moves toward the sample and never past it."""
    result = ewma_ms(previous, sample)
    low, high = sorted((sample, sample if previous is None else previous))
    assert low <= result <= high


@pytest.mark.asyncio
@pytest.mark.looptime(end=600)
async def test_a_router_spreads_calls_by_weight_and_fails_over_within_the_group() -> None:
    """Weights 0.5/0.3/0.2 over 600 calls land near their shares; a failing member's calls fail
    over to another member of the group before the next priority."""
    import asyncio

    from routeproof.core.types import AttemptFailure, AttemptFailureKind
    from routeproof.testing import Failure, ScriptedProvider
    from routeproof.traffic import TrafficConfig
    from tests.traffic.support import policy, request, resolved, router

    deployments = [ScriptedProvider(name=n) for n in ("a", "b", "c")]
    backup = ScriptedProvider(name="z")
    weights = {"a": 500_000, "b": 300_000, "c": 200_000}
    members = {n: Member(priority=0, weight_micro=w) for n, w in weights.items()} | {"z": Member(priority=1)}
    async with router([*deployments, backup], TrafficConfig(strategy=Strategy.WEIGHTED, members=members)) as r:
        tenant = policy(["a", "b", "c", "z"])
        for _ in range(600):
            await r.call_provider(request(), resolved(tenant), asyncio.get_running_loop().time() + 20, tenant)
        shares = {p.name: len(p.calls) / 600 for p in deployments}
        assert all(abs(shares[n] - w / MICRO) < 0.07 for n, w in weights.items()), shares
        assert backup.calls == []
        deployments[0]._default = Failure(
            failure=AttemptFailure(kind=AttemptFailureKind.HTTP_STATUS, http_status=410, message="gone")
        )
        for _ in range(50):
            answer = await r.call_provider(request(), resolved(tenant), asyncio.get_running_loop().time() + 20, tenant)
            assert answer.provider is not None
            assert answer.provider.value in {"b", "c"}


def test_the_port_keeps_latency_samples_for_a_latency_group_and_orders_by_them() -> None:
    """Traffic keeps each answered attempt's latency for a LATENCY group and its order follows them:
    the fastest deployment first, whichever was recorded first (no exploration draw)."""
    members = {n: Member(priority=0) for n in "ab"}
    traffic = Traffic(TrafficConfig(strategy=Strategy.LATENCY, members=members))
    for name, latency_ms in (("b", 900), ("a", 100), ("b", 900)):
        traffic.record_latency(ProviderName(name), latency_ms)
    assert names(traffic.order(chain("b", "a"), (0.9, 0.0)))[0] == "a"
    traffic.record_latency(ProviderName("a"), 5_000)  # a slows down: b is the faster one now
    traffic.record_latency(ProviderName("a"), 5_000)
    assert names(traffic.order(chain("a", "b"), (0.9, 0.0)))[0] == "b"


@pytest.mark.parametrize(
    ("strategy", "members"),
    [
        (Strategy.ORDERED, {}),
        (Strategy.LATENCY, {}),
        (Strategy.ORDERED, {n: Member(priority=0) for n in "ab"}),
    ],
    ids=["ordered", "latency-without-members", "ordered-with-members"],
)
def test_an_unbalanced_port_draws_nothing_and_keeps_the_chains_order(
    strategy: Strategy, members: dict[str, Member]
) -> None:
    """ORDERED (the default), with members or not, or any strategy without members: no draw is taken
    from the router's random sequence (it seeds the kernel's jitter) and the chain keeps its order."""
    traffic = Traffic(TrafficConfig(strategy=strategy, members=members))
    traffic.record_latency(ProviderName("b"), 1)
    taken: list[float] = []

    def draw() -> float:
        taken.append(0.5)
        return 0.5

    assert traffic.draws(draw, chain("a", "b")) == ()
    assert not taken
    assert names(traffic.order(chain("a", "b"), ())) == ["a", "b"]
