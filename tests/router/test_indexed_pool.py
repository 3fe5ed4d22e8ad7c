"""IndexedPool (routeproof._pool) keeps httpcore's pool behaviour: reuse, limits, keep-alive
surplus, server-closed sockets and cancelled waiters, over an in-memory network backend."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable
from typing import Any

import httpcore
import pytest

from routeproof._pool import IndexedPool

OK = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok"
URL = "http://provider.test/v1/chat/completions"


class _Stream(httpcore.AsyncMockStream):
    """A mock socket that can be made to look server-closed (readable while idle)."""

    def __init__(self, buffer: list[bytes]) -> None:
        super().__init__(buffer)
        self.readable = False

    def get_extra_info(self, info: str) -> Any:
        return self.readable if info == "is_readable" else super().get_extra_info(info)


class _Backend(httpcore.AsyncMockBackend):
    def __init__(self) -> None:
        super().__init__([OK] * 50)
        self.streams: list[_Stream] = []

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109  # httpcore's signature
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        stream = _Stream(list(self._buffer))
        self.streams.append(stream)
        return stream


def _pool(backend: _Backend, connections: int, keepalive: int | None = None) -> IndexedPool:
    return IndexedPool(
        max_connections=connections,
        max_keepalive_connections=connections if keepalive is None else keepalive,
        keepalive_expiry=30.0,
        network_backend=backend,
    )


@pytest.mark.asyncio
async def test_sequential_requests_reuse_one_connection() -> None:
    """One request after another travels on the same kept-alive connection."""
    backend = _Backend()
    async with _pool(backend, 4) as pool:
        for _ in range(5):
            assert (await pool.request("POST", URL)).status == 200
        assert len(backend.streams) == 1
        assert len(pool.connections) == 1


@pytest.mark.asyncio
async def test_connections_never_exceed_the_limit_and_waiters_are_served() -> None:
    """Ten concurrent streams over a pool of three: never more than three connections, all served."""
    backend = _Backend()
    async with _pool(backend, 3) as pool:
        peak = 0

        async def one() -> int:
            nonlocal peak
            async with pool.stream("POST", URL) as response:
                peak = max(peak, len(pool.connections))
                await asyncio.sleep(0)
                await response.aread()
                return response.status

        assert await asyncio.gather(*(one() for _ in range(10))) == [200] * 10
        assert peak <= 3
        assert len(backend.streams) == 3


@pytest.mark.asyncio
async def test_surplus_idle_connections_beyond_keepalive_are_closed() -> None:
    """With max_keepalive_connections=1, three concurrent requests leave one idle connection."""
    backend = _Backend()
    async with _pool(backend, 3, keepalive=1) as pool:
        async with contextlib.AsyncExitStack() as held:
            responses = [await held.enter_async_context(pool.stream("POST", URL)) for _ in range(3)]
            assert len(pool.connections) == 3
            for response in responses:
                await response.aread()
        assert len(pool.connections) == 1
        assert sum(1 for s in backend.streams if s._closed) == 2


@pytest.mark.asyncio
async def test_a_server_closed_idle_connection_is_not_reused() -> None:
    """An idle socket that turned readable (the server closed it) is closed and replaced."""
    backend = _Backend()
    async with _pool(backend, 2) as pool:
        await pool.request("POST", URL)
        backend.streams[0].readable = True
        assert (await pool.request("POST", URL)).status == 200
        assert len(backend.streams) == 2
        assert backend.streams[0]._closed
        assert len(pool.connections) == 1


@pytest.mark.asyncio
async def test_a_waiter_cancelled_in_the_queue_holds_nothing() -> None:
    """A request cancelled while queued for the only connection leaves; the next one is served."""
    backend = _Backend()
    async with _pool(backend, 1) as pool:
        async with pool.stream("POST", URL) as holder:
            waiter = asyncio.create_task(pool.request("POST", URL))
            await asyncio.sleep(0)
            assert "1 queued" in repr(pool)
            waiter.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiter
            await holder.aread()
        assert (await pool.request("POST", URL)).status == 200
        assert len(backend.streams) == 1


def test_http2_is_refused() -> None:
    """IndexedPool's bookkeeping assumes one request per connection: HTTP/2 is refused, not mishandled."""
    with pytest.raises(ValueError, match="http2=True"):
        IndexedPool(http2=True)
