"""A client that leaves cancels its call, so no provider request starts after the disconnect.

Two ways to learn of the disconnect, one per server:

* **Told by the server** (``make_server``'s protocol, :func:`routeproof.gateway.server.guarded_protocol`):
  each request's scope carries a :class:`ClientLink` under :data:`LINK`, and the protocol's
  ``connection_lost`` calls :meth:`ClientLink.lose`, which cancels the request's task at once. No task,
  timer or ``receive`` call per request: the watch below cost every call that ran past 10 ms (every
  call under load, where calls take tens of milliseconds) a task, a future and three loop callbacks.
* **Watched** (any other ASGI server): a watcher task, started once the work has run
  :data:`DISCONNECT_WATCH_AFTER_S`, waits on ``receive`` for ``http.disconnect``.

Either way the work runs inline in the request's task, a disconnect becomes :class:`ClientGone`,
and any other cancellation of the task (shutdown past the grace period) propagates as it is.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine, MutableMapping
from typing import Any, TypeVar

__all__ = ["DISCONNECT_WATCH_AFTER_S", "LINK", "ClientGone", "ClientLink", "run_until_disconnect"]

T = TypeVar("T")
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]

LINK = "routeproof.client_link"
"""The scope key of a request's :class:`ClientLink`, set by the server that offers one."""

DISCONNECT_WATCH_AFTER_S = 0.010
"""How long a call runs before its client's disconnect is watched for, on a server that sets no
:class:`ClientLink`. A call answered sooner never needs to notice (its answer is written anyway); past
it a disconnect, even an earlier one, cancels the call at once. The watch is a task per request: it
was about 40 % of the app's own CPU per request (``benchmarks/gateway_app_probe.py``: 108 vs 69 us)
for calls that end before it matters."""


class ClientGone(Exception):
    """The client disconnected while its call ran; the call was cancelled and nothing is sent."""


class ClientLink:
    """One request's connection, as its server sees it: :attr:`lost` once the connection is gone, and
    the app's callback (:meth:`on_lost`) called at that moment."""

    __slots__ = ("_callback", "lost")

    def __init__(self) -> None:
        self.lost = False
        self._callback: Callable[[], None] | None = None

    def lose(self) -> None:
        """The server's part: the connection is gone. Calls the callback once, if one is set."""
        self.lost = True
        callback, self._callback = self._callback, None
        if callback is not None:
            callback()

    def on_lost(self, callback: Callable[[], None] | None) -> None:
        """The app's part: call ``callback`` when the connection is lost (None: call nothing)."""
        self._callback = callback


async def run_until_disconnect(scope: MutableMapping[str, Any], receive: Receive, work: Coroutine[Any, Any, T]) -> T:
    """Run ``work`` in this task; if the client disconnects first, cancel it and raise ClientGone.

    Told by the server (a :class:`ClientLink` in ``scope``): a connection already lost runs nothing.
    Else watched: one watcher task, started once the work has run :data:`DISCONNECT_WATCH_AFTER_S`,
    listens for the disconnect (a second task for the work and two ``asyncio.wait`` calls were a
    fifth of the app's CPU per request).
    """
    found = scope.get(LINK)
    link = found if isinstance(found, ClientLink) else None
    if link is not None and link.lost:
        work.close()
        raise ClientGone
    loop = asyncio.get_running_loop()
    current = asyncio.current_task(loop)
    assert current is not None  # an ASGI app runs in a task
    gone = finished = False
    watcher: asyncio.Future[None] | None = None
    timer: asyncio.TimerHandle | None = None

    def cancel() -> None:  # the client is gone: the work, if still running, is cancelled
        nonlocal gone
        if not finished:
            gone = True
            current.cancel()

    def on_disconnect(done: asyncio.Future[None]) -> None:
        if not done.cancelled() and done.exception() is None:
            cancel()

    def watch() -> None:
        nonlocal watcher
        watcher = asyncio.ensure_future(_until_disconnect(receive))
        watcher.add_done_callback(on_disconnect)

    if link is not None:
        link.on_lost(cancel)
    else:
        timer = loop.call_later(DISCONNECT_WATCH_AFTER_S, watch)
    try:
        return await work
    except asyncio.CancelledError:
        if gone and current.uncancel() == 0:  # only the disconnect asked: the client is gone
            raise ClientGone from None
        raise
    finally:
        finished = True  # a disconnect seen from here on cancels nothing: the work is over
        if link is not None:
            link.on_lost(None)
        if timer is not None:
            timer.cancel()
        if watcher is not None:
            watcher.cancel()


async def _until_disconnect(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
