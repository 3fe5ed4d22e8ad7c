"""An httpcore connection pool whose bookkeeping costs O(1) per request, whatever the pool's size.

httpcore 1.0's ``AsyncConnectionPool._assign_requests_to_connections`` runs on every request and
every response close, and walks every connection each time: a keep-alive check that is O(C²) (it
re-counts all C connections for each idle one), a ``poll()`` on every idle socket, and an
idle connection handed to every queued request at once (all but one wake, fail with
``ConnectionNotAvailable`` and queue again, each triggering another full pass). Measured at 100 in
flight (``python -O -m benchmarks._arms routeproof calls 100``): CPU per call 1.2 ms at 1 in flight,
15-28 ms at 100, ~50 % of it in that method (encode/httpcore#1035, pydantic/httpx2#974, #1075, #1169).

:class:`IndexedPool` keeps the same public behaviour and the same public API (``handle_async_request``
is httpcore's own, so ``respx`` still intercepts it), and replaces that one method with incremental
state:

* idle connections are indexed by origin (most recently used first), and each is handed to exactly
  one queued request: it leaves the index until that request leaves the pool (no churn);
* requests waiting for a connection are a FIFO queue; a connection is re-examined only when a
  request that held it leaves the pool (its response closed, or it failed or was cancelled);
* a socket is probed (``has_expired``) only when its connection is about to be reused, and a sweep
  of every connection (closed, expired, surplus keep-alive) runs at most once per
  :data:`SWEEP_S` -- O(C) per second, not per request.

HTTP/1.1 only (one request per connection at a time): :func:`indexed_pool_supported` says when it
applies; otherwise the caller uses httpcore's own pool.
"""

from __future__ import annotations

import collections
import time
from typing import Any

import httpcore
from httpcore._async.connection_pool import AsyncPoolRequest
from httpcore._async.interfaces import AsyncConnectionInterface

__all__ = ["SWEEP_S", "IndexedPool", "indexed_pool_supported"]

SWEEP_S = 1.0
"""How often (at most) every connection is checked for close, keep-alive expiry and surplus."""


def indexed_pool_supported() -> bool:
    """Whether the installed httpcore is the one this pool's bookkeeping was written against."""
    return httpcore.__version__.startswith("1.0.") and hasattr(
        httpcore.AsyncConnectionPool, "_assign_requests_to_connections"
    )


_Key = tuple[bytes, bytes, int]


def _key(origin: httpcore.Origin) -> _Key:
    """An origin as a dict key (``httpcore.Origin`` defines ``__eq__`` but not ``__hash__``)."""
    return (origin.scheme, origin.host, origin.port)


class _Requests(list[AsyncPoolRequest]):
    """The pool's request list, telling the pool which request came and which left."""

    def __init__(self, pool: IndexedPool) -> None:
        super().__init__()
        self._pool = pool

    def append(self, request: AsyncPoolRequest) -> None:
        super().append(request)
        self._pool._arrived(request)

    def remove(self, request: AsyncPoolRequest) -> None:
        super().remove(request)
        self._pool._left(request)


class IndexedPool(httpcore.AsyncConnectionPool):
    """``httpcore.AsyncConnectionPool`` (HTTP/1.1) with O(1) bookkeeping per request (see the module)."""

    def __init__(self, **kwargs: Any) -> None:
        if kwargs.get("http2") or kwargs.get("proxy") is not None:
            raise ValueError(f"IndexedPool is for direct HTTP/1.1 only, got http2={kwargs.get('http2')!r}")
        super().__init__(**kwargs)
        self._requests = _Requests(self)
        self._live: set[AsyncPoolRequest] = set()  # requests in the pool
        self._queue: collections.deque[AsyncPoolRequest] = collections.deque()  # waiting, FIFO (lazily pruned)
        self._idle: dict[_Key, dict[AsyncConnectionInterface, None]] = {}
        self._idle_count = 0
        self._origins: dict[AsyncConnectionInterface, _Key] = {}  # each connection's origin
        self._recheck: list[AsyncConnectionInterface] = []  # held by a request that left
        self._sweep_at = time.monotonic() + SWEEP_S

    # --- what the request list reports -------------------------------------------------------

    def _arrived(self, request: AsyncPoolRequest) -> None:
        self._live.add(request)
        self._queue.append(request)
        clear = request.clear_connection

        def lost() -> None:  # ConnectionNotAvailable: the request gives its connection back and queues again
            held = request.connection
            clear()
            if held is not None:
                self._recheck.append(held)
            self._queue.appendleft(request)

        setattr(request, "clear_connection", lost)  # noqa: B010  # an instance hook, not a new attribute

    def _left(self, request: AsyncPoolRequest) -> None:
        self._live.discard(request)
        if request.connection is not None:
            self._recheck.append(request.connection)

    # --- connection bookkeeping --------------------------------------------------------------

    def create_connection(self, origin: httpcore.Origin) -> AsyncConnectionInterface:
        connection = super().create_connection(origin)
        self._origins[connection] = _key(origin)
        return connection

    def _drop(self, connection: AsyncConnectionInterface, closing: list[AsyncConnectionInterface] | None) -> None:
        self._unindex(connection)
        self._origins.pop(connection, None)
        try:
            self._connections.remove(connection)
        except ValueError:
            return  # dropped already (a sweep, or the pool was closed)
        if closing is not None:
            closing.append(connection)

    def _unindex(self, connection: AsyncConnectionInterface) -> None:
        origin = self._origins.get(connection)
        idle = self._idle.get(origin) if origin is not None else None
        if idle is not None and connection in idle:
            del idle[connection]
            self._idle_count -= 1

    def _settle(self, connection: AsyncConnectionInterface, closing: list[AsyncConnectionInterface]) -> None:
        """A connection no request holds any more: index it as idle, or drop it."""
        origin = self._origins.get(connection)
        if origin is None:
            return  # not (or no longer) this pool's
        if connection.is_closed():
            self._drop(connection, None)
        elif not connection.is_idle() or self._idle_count >= self._max_keepalive_connections:
            self._drop(connection, closing)  # never connected (cancelled while connecting), or surplus
        else:
            idle = self._idle.setdefault(origin, {})
            if connection not in idle:
                idle[connection] = None
                self._idle_count += 1

    def _take_idle(
        self, origin: httpcore.Origin, closing: list[AsyncConnectionInterface]
    ) -> AsyncConnectionInterface | None:
        """The most recently used live idle connection to ``origin`` (probed once, now), if any."""
        idle = self._idle.get(_key(origin))
        while idle:
            connection, _ = idle.popitem()
            self._idle_count -= 1
            if connection.is_available() and not connection.has_expired():
                return connection
            self._drop(connection, None if connection.is_closed() else closing)
        return None

    def _take_any_idle(self) -> AsyncConnectionInterface | None:
        """The longest-idle connection to any origin (to close, making room for a new one)."""
        for idle in self._idle.values():
            if idle:
                return next(iter(idle))
        return None

    def _sweep(self, closing: list[AsyncConnectionInterface]) -> None:
        """httpcore's per-pass cleanup, once per SWEEP_S: closed, expired and surplus idle connections."""
        for connection in list(self._connections):
            if connection.is_closed():
                self._drop(connection, None)
        for idle in list(self._idle.values()):
            for connection in list(idle):
                if connection.has_expired():
                    self._drop(connection, closing)
        while self._idle_count > self._max_keepalive_connections:
            surplus = self._take_any_idle()
            assert surplus is not None  # the count says there is one
            self._drop(surplus, closing)

    # --- the pass httpcore runs on every request and every release -----------------------------

    def _assign_requests_to_connections(self) -> list[AsyncConnectionInterface]:
        closing: list[AsyncConnectionInterface] = []
        now = time.monotonic()
        if now >= self._sweep_at:
            self._sweep_at = now + SWEEP_S
            self._sweep(closing)
        recheck, self._recheck = self._recheck, []
        for released in recheck:
            self._settle(released, closing)
        queue = self._queue
        while queue:
            request = queue[0]
            if request not in self._live or request.connection is not None:
                queue.popleft()  # it left the pool (cancelled, timed out), or is served already
                continue
            origin = request.request.url.origin
            connection: AsyncConnectionInterface | None = self._take_idle(origin, closing)  # out of the index
            if connection is None:  # until this request leaves the pool
                if len(self._connections) >= self._max_connections:
                    victim = self._take_any_idle()
                    if victim is None:
                        break  # full: the queue waits for a release
                    self._drop(victim, closing)
                connection = self.create_connection(origin)
                self._connections.append(connection)
            queue.popleft()
            request.assign_to_connection(connection)
        return closing
