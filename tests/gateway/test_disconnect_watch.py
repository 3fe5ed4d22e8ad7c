"""The disconnect watch (a server that sets no ClientLink; virtual time, no sockets): a disconnect
cancels the work and becomes ClientGone; any other cancellation of the request's task propagates as a
cancellation."""

from __future__ import annotations

import asyncio

import pytest

from routeproof.gateway.disconnect import DISCONNECT_WATCH_AFTER_S, ClientGone, run_until_disconnect

pytestmark = [pytest.mark.asyncio, pytest.mark.looptime(end=60)]


def _receive_disconnect_after(seconds: float) -> object:
    """A ``receive`` whose client leaves ``seconds`` from now: it returns the disconnect then, or,
    called later, at once without yielding (as uvicorn's does)."""
    loop = asyncio.get_running_loop()
    leaves_at = loop.time() + seconds

    async def receive() -> dict[str, object]:
        if leaves_at > loop.time():
            await asyncio.sleep(leaves_at - loop.time())
        return {"type": "http.disconnect"}

    return receive


@pytest.mark.parametrize(
    ("leaves_at", "cancelled_at"),
    [(1.0, 1.0), (0.001, DISCONNECT_WATCH_AFTER_S)],
    ids=["while watched", "before the watch starts"],
)
async def test_a_disconnect_cancels_the_work_and_is_client_gone(leaves_at: float, cancelled_at: float) -> None:
    """The client leaves at 1 s: the 10 s work is cancelled there and the caller gets ClientGone. It
    leaves at 1 ms: the work is cancelled when the watch starts (10 ms), not later."""
    cancelled: list[float] = []

    async def work() -> str:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.append(asyncio.get_running_loop().time())
            raise
        return "answered"

    start = asyncio.get_running_loop().time()
    with pytest.raises(ClientGone):
        await run_until_disconnect({}, _receive_disconnect_after(leaves_at), work())  # type: ignore[arg-type]
    assert [round(t - start, 3) for t in cancelled] == [cancelled_at]


async def test_work_that_finishes_first_is_returned_and_a_later_disconnect_cancels_nothing() -> None:
    """The work ends at 1 s, the client leaves at 2 s: the result comes back and the task is not cancelled later."""

    async def work() -> str:
        await asyncio.sleep(1)
        return "answered"

    assert await run_until_disconnect({}, _receive_disconnect_after(2), work()) == "answered"  # type: ignore[arg-type]
    await asyncio.sleep(5)  # past the disconnect: a stray cancel would land here
    current = asyncio.current_task()
    assert current is not None
    assert current.cancelling() == 0


async def test_a_cancellation_from_elsewhere_propagates_as_cancellation() -> None:
    """Shutdown past the grace period cancels the request's task: CancelledError, not ClientGone."""

    async def work() -> str:
        await asyncio.sleep(10)
        return "answered"

    task = asyncio.create_task(run_until_disconnect({}, _receive_disconnect_after(100), work()))  # type: ignore[arg-type]
    await asyncio.sleep(1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_a_disconnect_seen_as_the_work_ends_does_not_cancel_the_caller_later() -> None:
    """The watcher sees the disconnect in the loop turn the work ends in: its callback, run after the
    work returned, must not cancel the request's task (which has moved on to answering)."""

    async def work() -> str:
        # ends in the loop turn the watch starts: the watcher reads the (earlier) disconnect in that
        # turn and its callback runs in the next, after the work returned
        await asyncio.sleep(DISCONNECT_WATCH_AFTER_S)
        return "answered"

    assert await run_until_disconnect({}, _receive_disconnect_after(0), work()) == "answered"  # type: ignore[arg-type]
    await asyncio.sleep(1)  # the callback has run by now
    current = asyncio.current_task()
    assert current is not None
    assert current.cancelling() == 0


async def test_work_shorter_than_the_watch_delay_starts_no_watcher() -> None:
    """A call answered within the delay costs no watcher task (it was 40 % of the app's CPU per request)."""
    tasks_seen: list[int] = []

    async def work() -> str:
        await asyncio.sleep(DISCONNECT_WATCH_AFTER_S / 2)
        tasks_seen.append(len(asyncio.all_tasks()))
        return "answered"

    before = len(asyncio.all_tasks())
    assert await run_until_disconnect({}, _receive_disconnect_after(100), work()) == "answered"  # type: ignore[arg-type]
    await asyncio.sleep(1)
    assert tasks_seen == [before]
    assert len(asyncio.all_tasks()) == before
