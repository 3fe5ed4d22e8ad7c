"""Declared rate limits (core/rate_limit.py): the sliding window, a deployment at its limit skipped
with the limit named, a call that waits (FIFO) for capacity within its deadline or is refused."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given
from hypothesis import strategies as st

from routeproof.core.rate_limit import CapacityWait, LimitKind, LogEntry, RateVerdict, admit, capacity_wait
from routeproof.errors import NoEligibleProvider
from routeproof.testing import Reply, ScriptedProvider
from routeproof.traffic import DeploymentLimits, TrafficConfig
from routeproof.traffic_store import MemoryTrafficStore
from tests.traffic.support import policy, request, resolved, router

pytestmark = [pytest.mark.looptime(end=600)]


def loop_wall() -> float:
    """The running loop's (virtual) time as the router's wall clock."""
    return asyncio.get_running_loop().time()


def test_rpm_refuses_the_n_plus_first_and_says_when() -> None:
    """With rpm 2 and two requests at 0 and 10 ms, a third waits until the first leaves the window."""
    limits = DeploymentLimits(rpm=2)
    log = (LogEntry(at_ms=0, tokens=1), LogEntry(at_ms=10, tokens=1))
    assert admit(limits, log, 20, 1) == RateVerdict(ok=False, limit=LimitKind.RPM, retry_at_ms=60_000)
    assert admit(limits, log, 60_000, 1).ok


def test_tpm_counts_tokens_and_refuses_an_estimate_above_the_limit() -> None:
    """tpm 100: 60 held + 50 does not fit until the 60 leave; 101 never fits."""
    limits = DeploymentLimits(tpm=100)
    log = (LogEntry(at_ms=5, tokens=60),)
    assert admit(limits, log, 6, 50) == RateVerdict(ok=False, limit=LimitKind.TPM, retry_at_ms=60_005)
    assert admit(limits, (), 6, 101) == RateVerdict(ok=False, limit=LimitKind.TPM, retry_at_ms=None)


@given(st.lists(st.integers(0, 120_000), max_size=40), st.integers(1, 10))
def test_admitting_greedily_never_passes_rpm_in_any_window(arrivals: list[int], rpm: int) -> None:
    """Whatever the arrivals, the admitted ones number at most rpm in every 60 s window."""
    limits = DeploymentLimits(rpm=rpm)
    log: tuple[LogEntry, ...] = ()
    for at in sorted(arrivals):
        if admit(limits, log, at, 1).ok:
            log = (*log, LogEntry(at_ms=at, tokens=1))
    for entry in log:
        assert sum(1 for e in log if entry.at_ms <= e.at_ms < entry.at_ms + 60_000) <= rpm


def test_capacity_wait_goes_waits_or_refuses() -> None:
    """Any deployment free: go; else wait for the first to free within the end; else refuse."""
    full = RateVerdict(ok=False, limit=LimitKind.RPM, retry_at_ms=500)
    assert capacity_wait((full, RateVerdict(ok=True)), 0, 1000).go
    assert capacity_wait((full,), 0, 1000) == CapacityWait(go=False, until_ms=500)
    assert capacity_wait((full,), 0, 400).refuse


def test_bad_limits_name_the_value() -> None:
    """rpm 0 is refused at construction, naming it."""
    with pytest.raises(ValueError, match="rpm must be an int >= 1, got 0"):
        DeploymentLimits(rpm=0)


@pytest.mark.asyncio
async def test_a_full_deployment_is_skipped_with_the_limit_named() -> None:
    """rpm 1 on the first deployment: the second call skips it (``rate_limit_rpm``) and uses the next."""
    a, b = ScriptedProvider(name="a"), ScriptedProvider(name="b")
    traffic = TrafficConfig(limits={"a": DeploymentLimits(rpm=1)})
    async with router([a, b], traffic, wall_clock=loop_wall) as r:
        tenant = policy(["a", "b"])
        deadline = asyncio.get_running_loop().time() + 20
        first = await r.call_provider(request(), resolved(tenant), deadline, tenant)
        second = await r.call_provider(request(), resolved(tenant), deadline, tenant)
    assert first.provider is not None
    assert first.provider.value == "a"
    assert second.provider is not None
    assert second.provider.value == "b"
    assert [(s.provider.value, s.reason) for s in second.skipped] == [("a", "rate_limit_rpm")]


@pytest.mark.asyncio
async def test_calls_wait_fifo_for_capacity_within_the_deadline() -> None:
    """rpm 2 with a 1 s window, five calls at once: two go now, the rest wait and go in arrival
    order as the window frees; the provider never sees more than 2 in any window."""
    a = ScriptedProvider(name="a", default=Reply())
    traffic = TrafficConfig(limits={"a": DeploymentLimits(rpm=2, window_ms=1000)})
    async with router([a], traffic, wall_clock=loop_wall) as r:
        tenant = policy(["a"])
        loop = asyncio.get_running_loop()
        start = loop.time()
        done: list[tuple[int, float]] = []

        async def one(i: int) -> None:
            await r.call_provider(request(), resolved(tenant), loop.time() + 20, tenant)
            done.append((i, loop.time() - start))

        await asyncio.gather(*(one(i) for i in range(5)))
    assert [i for i, _ in done] == [0, 1, 2, 3, 4]
    assert [round(t) for _, t in done] == [0, 0, 1, 1, 2]


@pytest.mark.asyncio
async def test_a_call_that_cannot_fit_its_deadline_is_refused_naming_the_limit() -> None:
    """rpm 1 per 60 s and a 5 s deadline: the second call is refused at once, the limit named."""
    a = ScriptedProvider(name="a")
    traffic = TrafficConfig(limits={"a": DeploymentLimits(rpm=1)})
    store = MemoryTrafficStore()
    async with router([a], traffic, wall_clock=loop_wall, store=store) as r:
        tenant = policy(["a"])
        loop = asyncio.get_running_loop()
        await r.call_provider(request(), resolved(tenant), loop.time() + 5, tenant)
        before = loop.time()
        with pytest.raises(NoEligibleProvider, match="declared rate limit"):
            await r.call_provider(request(), resolved(tenant), loop.time() + 5, tenant)
        assert loop.time() == before
    assert len(a.calls) == 1


@pytest.mark.asyncio
async def test_settling_moves_the_place_to_the_answer() -> None:
    """A place settled at the answer's instant counts in the window from then on (the request
    reached the provider at some instant up to the answer)."""
    store = MemoryTrafficStore()
    limits = DeploymentLimits(rpm=1, window_ms=1000)
    ticket = await store.try_reserve("a", limits, tokens=5, now_ms=0)
    assert not isinstance(ticket, RateVerdict)
    await store.settle(ticket, tokens=3, now_ms=400)
    assert not (await store.peek("a", limits, tokens=1, now_ms=1200)).ok
    assert (await store.peek("a", limits, tokens=1, now_ms=1400)).ok
