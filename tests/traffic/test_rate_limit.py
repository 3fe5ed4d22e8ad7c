"""Declared rate limits (core/rate_limit.py): the sliding window, a deployment at its limit skipped
with the limit named, a call that waits (FIFO) for capacity within its deadline or is refused."""

from __future__ import annotations

import asyncio
from contextlib import aclosing

import pytest
from hypothesis import given
from hypothesis import strategies as st

from routeproof.core.rate_limit import (
    CapacityWait,
    LimitKind,
    LogEntry,
    RateVerdict,
    admit,
    capacity_wait,
    place_tokens,
)
from routeproof.core.types import MessageStop, Usage
from routeproof.errors import NoEligibleProvider
from routeproof.testing import Reply, ScriptedProvider
from routeproof.traffic import DeploymentLimits, TrafficConfig
from routeproof.traffic_store import MemoryTrafficStore
from routeproof.traffic_store.port import Traffic
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


async def _held_tokens(store: MemoryTrafficStore, limits: DeploymentLimits, now_ms: int) -> int:
    """The tokens the lone scripted deployment's window holds at ``now_ms`` (tpm less the largest
    estimate that still fits). A provider alone of its kind is keyed by its kind (router.py)."""
    assert limits.tpm is not None
    fits = [t for t in range(limits.tpm + 1) if (await store.peek("local", limits, tokens=t, now_ms=now_ms)).ok]
    return limits.tpm - max(fits)


@pytest.mark.asyncio
async def test_a_completed_stream_settles_its_place_to_the_usage_it_reported() -> None:
    """A stream's place is settled when it ends, to the usage its MessageStop reported (10 + 5
    tokens), as a plain answer's is; not to the reservation's estimate."""
    a = ScriptedProvider(name="a", default=Reply(usage=Usage(prompt_tokens=10, completion_tokens=5)))
    limits = DeploymentLimits(tpm=1000)
    store = MemoryTrafficStore()
    async with router([a], TrafficConfig(limits={"a": limits}), wall_clock=loop_wall, store=store) as r:
        tenant = policy(["a"])
        loop = asyncio.get_running_loop()
        events = [e async for e in r.call_provider_streaming(request(), resolved(tenant), loop.time() + 5, tenant)]
        assert isinstance(events[-1], MessageStop)
        held = await _held_tokens(store, limits, int(loop.time() * 1000))
    assert Traffic.estimate_tokens(request()) > 15
    assert held == 15


@pytest.mark.asyncio
async def test_a_stream_the_caller_abandons_keeps_its_estimate() -> None:
    """A caller that stops reading after the first event leaves no usage: the place keeps the estimate."""
    a = ScriptedProvider(name="a", default=Reply(text="many words to stream here"))
    limits = DeploymentLimits(tpm=1000)
    store = MemoryTrafficStore()
    async with router([a], TrafficConfig(limits={"a": limits}), wall_clock=loop_wall, store=store) as r:
        tenant = policy(["a"])
        loop = asyncio.get_running_loop()
        stream = r.call_provider_streaming(request(), resolved(tenant), loop.time() + 5, tenant)
        async with aclosing(stream):
            async for _ in stream:
                break
        held = await _held_tokens(store, limits, int(loop.time() * 1000))
    assert held == Traffic.estimate_tokens(request())


def test_a_place_keeps_the_reported_usage_else_the_estimate() -> None:
    """place_tokens: the usage's every token (cache reads and writes too); the estimate when no usage
    came, or one that counts nothing (an OpenAI-compatible server that sends no usage)."""
    usage = Usage(prompt_tokens=10, completion_tokens=5, cached_input_tokens=3, cache_creation_tokens=2)
    assert place_tokens(100, usage) == 20
    assert place_tokens(100, None) == 100
    assert place_tokens(100, Usage()) == 100
    assert place_tokens(100, Usage(completion_tokens=1)) == 1
