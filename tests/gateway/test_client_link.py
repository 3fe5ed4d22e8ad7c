"""The server tells the app of a lost connection (ClientLink): the gateway's protocol puts a link in each
request's scope and loses it with the connection; the app's work is then cancelled at once, with no
watcher task, timer or ``receive`` call (virtual time; the protocol over a recording transport)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from routeproof.gateway.disconnect import LINK, ClientGone, ClientLink, run_until_disconnect
from tests.gateway.test_write_batch import Recording, gateway_protocol

pytestmark = [pytest.mark.asyncio, pytest.mark.looptime(end=60)]


def _counted_receive(calls: list[float]) -> Any:
    """A ``receive`` that records each call and then waits (as uvicorn's does once the body is read):
    an AssertionError raised in a watcher task would be swallowed by its done-callback, a record is not."""

    async def receive() -> dict[str, Any]:
        calls.append(asyncio.get_running_loop().time())
        await asyncio.Event().wait()
        return {"type": "http.disconnect"}

    return receive


def _lose_at(link: ClientLink, seconds: float) -> None:
    asyncio.get_running_loop().call_later(seconds, link.lose)


async def test_a_lost_link_cancels_the_work_at_once_with_no_task_or_receive() -> None:
    """The connection is lost at 1 s: the 10 s work is cancelled at 1 s and the caller gets ClientGone;
    no task besides this one ran, and ``receive`` was never called."""
    link = ClientLink()
    loop = asyncio.get_running_loop()
    cancelled: list[float] = []
    tasks: list[int] = []
    received: list[float] = []

    async def work() -> str:
        try:
            await asyncio.sleep(0.5)  # well past the watch delay: a watcher would be running by now
            tasks.append(len(asyncio.all_tasks()))
            await asyncio.sleep(9.5)
        except asyncio.CancelledError:
            cancelled.append(loop.time())
            raise
        return "answered"

    before, start = len(asyncio.all_tasks()), loop.time()
    _lose_at(link, 1.0)
    with pytest.raises(ClientGone):
        await run_until_disconnect({LINK: link}, _counted_receive(received), work())
    assert [round(t - start, 3) for t in cancelled] == [1.0]
    assert tasks == [before]
    assert received == []


async def test_a_link_lost_before_the_work_runs_nothing() -> None:
    """The client left while its body was read: ClientGone at once, the work never starts (no provider call)."""
    link = ClientLink()
    link.lose()
    started: list[bool] = []

    async def work() -> str:
        started.append(True)
        return "answered"

    received: list[float] = []
    with pytest.raises(ClientGone):
        await run_until_disconnect({LINK: link}, _counted_receive(received), work())
    assert started == []
    assert received == []


async def test_work_that_finishes_first_is_returned_and_a_later_loss_cancels_nothing() -> None:
    """The work ends at 1 s, the connection is lost at 2 s: the result comes back, the task is never cancelled."""
    link = ClientLink()

    async def work() -> str:
        await asyncio.sleep(1)
        return "answered"

    _lose_at(link, 2.0)
    received: list[float] = []
    assert await run_until_disconnect({LINK: link}, _counted_receive(received), work()) == "answered"
    assert received == []
    await asyncio.sleep(5)  # past the loss: a stray cancel would land here
    current = asyncio.current_task()
    assert current is not None
    assert current.cancelling() == 0


async def test_a_cancellation_from_elsewhere_propagates_as_cancellation() -> None:
    """Shutdown past the grace period cancels the request's task: CancelledError, not ClientGone."""
    link = ClientLink()

    async def work() -> str:
        await asyncio.sleep(10)
        return "answered"

    task = asyncio.create_task(run_until_disconnect({LINK: link}, _counted_receive([]), work()))
    await asyncio.sleep(1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


_REQUEST = b"GET / HTTP/1.1\r\nhost: x\r\n\r\n"


def _recording(scopes: list[Any], hold_second: asyncio.Event | None = None) -> Any:
    """An ASGI app that keeps each request's scope and answers; the second request waits for ``hold_second``."""

    async def app(scope: Any, receive: Any, send: Any) -> None:
        scopes.append(scope)
        if hold_second is not None and len(scopes) == 2:
            await hold_second.wait()  # still running when the connection goes
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"ok"})

    return app


async def test_the_gateway_protocol_loses_the_link_of_the_request_its_connection_carried() -> None:
    """httptools: each request's scope has its own link; a connection lost mid-request loses that link
    (the app's callback runs in the same loop turn), and a request already answered keeps its link."""
    scopes: list[Any] = []
    answer = asyncio.Event()
    protocol = gateway_protocol(HttpToolsProtocol, _recording(scopes, answer))
    protocol.connection_made(Recording())
    protocol.data_received(_REQUEST)
    await asyncio.sleep(0.01)
    protocol.data_received(_REQUEST)
    await asyncio.sleep(0.01)
    first, second = (scope[LINK] for scope in scopes)
    assert isinstance(first, ClientLink)
    assert first is not second
    told: list[bool] = []
    second.on_lost(lambda: told.append(True))
    protocol.connection_lost(None)
    assert (first.lost, second.lost, told) == (False, True, [True])
    answer.set()
    await asyncio.sleep(0.01)


async def test_the_h11_protocol_sets_no_link_and_the_app_watches_instead() -> None:
    """h11 (uvicorn without httptools): no link in the scope, so ``run_until_disconnect`` watches ``receive``."""
    scopes: list[Any] = []
    protocol = gateway_protocol(H11Protocol, _recording(scopes))
    protocol.connection_made(Recording())
    protocol.data_received(_REQUEST)
    await asyncio.sleep(0.01)
    protocol.connection_lost(None)
    assert len(scopes) == 1
    assert LINK not in scopes[0]
