"""clock.timeout_at: asyncio.timeout_at whose long waits are split so the final wake-up is short
(virtual time via looptime: the schedule is checked, not the kernel's timer slack)."""

from __future__ import annotations

import asyncio

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
