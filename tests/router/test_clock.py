"""clock.timeout_at: asyncio.timeout_at whose long waits are split so the final wake-up is short
(virtual time via looptime: the schedule is checked, not the kernel's timer slack)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager, AbstractContextManager

import pytest

from routeproof import clock

pytestmark = [pytest.mark.asyncio, pytest.mark.looptime(end=600)]


async def test_a_long_wait_wakes_the_loop_just_before_its_deadline() -> None:
    """A 30 s timeout schedules one wake-up LAST_LEG_S before the deadline, then fires at it."""
    loop = asyncio.get_running_loop()
    when = loop.time() + 30
    woke: list[float] = []
    original = clock._wake
    clock._wake = lambda: woke.append(loop.time())  # observe the waypoint
    try:
        with pytest.raises(TimeoutError):
            async with clock.timeout_at(when):
                await asyncio.sleep(60)
    finally:
        clock._wake = original
    assert woke == [pytest.approx(when - clock.LAST_LEG_S)]
    assert loop.time() == pytest.approx(when)


async def test_a_short_wait_needs_no_waypoint_and_an_early_exit_cancels_it() -> None:
    """No waypoint for a wait shorter than two last legs; a block left early cancels its waypoint."""
    loop = asyncio.get_running_loop()
    assert clock.waypoint(loop, loop.time() + clock.LAST_LEG_S) is None
    timeout = clock.timeout_at(loop.time() + 10)
    async with timeout:
        await asyncio.sleep(1)
    assert timeout._handle is not None
    assert timeout._handle.cancelled()


async def test_loop_now_ms_is_loop_ms_of_the_loops_time() -> None:
    """A call's clock (Call.now_ms: clock.loop_now_ms) reads the loop's own time (virtual here), rounded
    to whole milliseconds as loop_ms rounds it, half a millisecond either way included."""
    loop = asyncio.get_running_loop()
    for step in (0.0, 0.0004, 0.0002, 0.0005, 1.2345, 30.0):
        await asyncio.sleep(step)
        assert clock.loop_now_ms(loop) == clock.loop_ms(loop.time())
        assert clock.loop_now_ms(loop) == round(loop.time() * 1000)


async def _outcome(
    limit: Callable[[float], AbstractAsyncContextManager[object]],
    body: str,
    *,
    plain: Callable[[float], AbstractContextManager[object]] | None = None,
) -> tuple[str, float, int]:
    """What ``body`` run under ``limit`` (a deadline 1 s or 30 s ahead, or past) ends as: the
    exception type leaving the block, the virtual time taken, the task's pending cancellations.
    ``plain``: run under that plain ``with`` block instead (the driver's form)."""
    loop = asyncio.get_running_loop()
    start = loop.time()
    task = asyncio.current_task()
    assert task is not None
    outcome = "none"

    async def run() -> None:
        when = start + (-1.0 if body == "past" else 1.0 if body.startswith("short") else 30.0)
        if plain is not None:
            with plain(when):
                await work()
        else:
            async with limit(when):
                await work()

    async def work() -> None:
        if body.endswith("swallow"):
            with contextlib.suppress(asyncio.CancelledError):  # the block swallows the cancellation
                await asyncio.sleep(60)
        elif body.endswith("cancelled-then-expired"):
            loop.call_later(0.5, task.cancel)  # another cancellation, caught; then the deadline
            try:
                await asyncio.sleep(60)
            except asyncio.CancelledError:
                await asyncio.sleep(60)
        elif body.endswith("cancelled"):
            loop.call_later(0.5, task.cancel)  # another cancellation, before the deadline
            await asyncio.sleep(60)
        elif body.endswith("early"):
            await asyncio.sleep(0.1)
        else:
            await asyncio.sleep(60)

    try:
        await run()
    except BaseException as exc:  # the outcome is compared, whatever it is
        outcome = type(exc).__name__
    cancelling = task.cancelling()
    while task.cancelling():
        task.uncancel()
    return outcome, round(loop.time() - start, 3), cancelling


EXPECTED = {
    "short": "TimeoutError",
    "long": "TimeoutError",
    "past": "TimeoutError",
    "short-early": "none",
    "long-early": "none",
    "short-swallow": "none",
    "long-swallow": "none",
    "short-cancelled": "CancelledError",
    "short-cancelled-then-expired": "CancelledError",
    "long-cancelled-then-expired": "CancelledError",
}
"""How each block ends (both must agree on it too): the cases are not vacuous."""


@pytest.mark.parametrize(
    "body",
    list(EXPECTED),
)
async def test_timeout_at_ends_every_block_as_asyncio_timeout_at_does(body: str) -> None:
    """Expired, left early, a deadline already past, its cancellation swallowed, or another
    cancellation first: clock.timeout_at ends the block as asyncio.timeout_at does, at the same
    time, leaving the task's cancellation count as it does."""
    ours = await _outcome(clock.timeout_at, body)
    assert ours == await _outcome(asyncio.timeout_at, body)
    assert ours[0] == EXPECTED[body]


@pytest.mark.parametrize("body", list(EXPECTED))
async def test_the_plain_with_block_ends_every_block_as_async_with_does(body: str) -> None:
    """The driver enters an attempt's timeout with a plain ``with`` (no coroutine): it ends every
    block as ``async with`` does (and so as asyncio.timeout_at does), at the same time."""
    assert await _outcome(clock.timeout_at, body, plain=clock.timeout_at) == await _outcome(clock.timeout_at, body)


@pytest.mark.parametrize("body", ["early", "expires", "raises"])
async def test_an_attempts_timeout_declares_its_bound_for_its_block_only(body: str) -> None:
    """timeout_at_ms's block (an attempt's) is the attempt's bound while it runs (clock.attempt_bound:
    its instant, in loop seconds); before it, after it (left early, expired or raising) and in a plain
    timeout_at block there is none."""
    loop = asyncio.get_running_loop()
    at_ms = round(loop.time() * 1000) + 1000
    seen: list[float | None] = [clock.attempt_bound()]
    with contextlib.suppress(TimeoutError, ValueError), clock.timeout_at_ms(at_ms):
        seen.append(clock.attempt_bound())
        if body == "expires":
            await asyncio.sleep(5)
        elif body == "raises":
            raise ValueError(body)
    seen.append(clock.attempt_bound())
    async with clock.timeout_at(loop.time() + 1):
        seen.append(clock.attempt_bound())
    assert seen == [None, at_ms / 1000, None, None]
