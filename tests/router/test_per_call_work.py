"""Per-call work does not grow with the number of calls in flight (issue 13): the router over the
default httpx client, counted in Python function calls (no timing), with 10 and then 100 calls held
in flight at once by an in-memory network backend that answers only when all of them have sent."""

from __future__ import annotations

import asyncio
import json
import ssl
import sys
import types
from collections.abc import Iterable
from typing import Any

import httpcore
import pytest

from routeproof import LimitOptions
from routeproof._pool import IndexedPool
from routeproof.core.types import ProviderKind
from routeproof.providers.openai import OpenAIProvider
from routeproof.router import Router
from routeproof.transport import make_client
from tests.router.fixtures import deadline, openai_body, policy, request, resolved_for

OPENAI = ProviderKind.OPENAI
_BODY = json.dumps(openai_body()).encode()
_RESPONSE = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s" % (len(_BODY), _BODY)


class _Gate:
    """Holds every response until ``expected`` requests are waiting for one."""

    def __init__(self) -> None:
        self.expected = 0
        self.waiting = 0
        self.open = asyncio.Event()

    def arm(self, expected: int) -> None:
        self.expected, self.waiting, self.open = expected, 0, asyncio.Event()

    async def wait(self) -> None:
        self.waiting += 1
        if self.waiting >= self.expected:
            self.open.set()
        await self.open.wait()


class _Stream(httpcore.AsyncNetworkStream):
    """A connection that answers each request with one OpenAI response, once the gate opens."""

    def __init__(self, gate: _Gate) -> None:
        self._gate = gate
        self._closed = False

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:  # noqa: ASYNC109  # httpcore's signature
        if self._closed:
            raise httpcore.ReadError("closed")
        await self._gate.wait()
        return _RESPONSE

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:  # noqa: ASYNC109  # httpcore's
        return None

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,  # noqa: ASYNC109  # httpcore's signature
    ) -> httpcore.AsyncNetworkStream:
        return self

    async def aclose(self) -> None:
        self._closed = True

    def get_extra_info(self, info: str) -> Any:
        return None


class _Backend(httpcore.AsyncNetworkBackend):
    def __init__(self, gate: _Gate) -> None:
        self._gate = gate

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109  # httpcore's signature
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        return _Stream(self._gate)

    async def sleep(self, seconds: float) -> None:
        return None


async def _calls_per_routed_call(in_flight: int) -> float:
    """Python function calls per routed call, with ``in_flight`` calls in flight at once (the
    second of two rounds: connections are open and warm)."""
    gate = _Gate()
    client = make_client("httpx", connections=in_flight, network_backend=_Backend(gate))
    assert isinstance(client._transport._pool, IndexedPool)  # type: ignore[attr-defined]
    router = Router(
        [OpenAIProvider(api_key="sk-test", client=client)],
        rng=None,
        limits=LimitOptions(max_in_flight_per_provider=None),
    )
    tenant = policy(OPENAI)
    resolved = resolved_for(tenant)
    count = 0

    def profile(frame: types.FrameType, event: str, arg: object) -> None:
        nonlocal count
        if event == "call":
            count += 1

    async def round_() -> None:
        gate.arm(in_flight)
        async with asyncio.timeout(60):
            await asyncio.gather(
                *(router.call_provider(request(), resolved, deadline(30), tenant) for _ in range(in_flight))
            )

    try:
        await round_()  # warm-up: connects
        sys.setprofile(profile)
        try:
            await round_()
        finally:
            sys.setprofile(None)
    finally:
        await router.aclose()
        await client.aclose()
    return count / in_flight


@pytest.mark.asyncio
async def test_per_call_work_does_not_grow_with_calls_in_flight() -> None:
    """With 100 calls in flight each costs at most 1.25x the Python calls it costs with 10 in flight
    (httpcore 1.0's own pool: ~5x, its bookkeeping walks every connection on every request)."""
    few = await _calls_per_routed_call(10)
    many = await _calls_per_routed_call(100)
    assert many <= 1.25 * few, f"{many:.0f} Python calls per routed call at 100 in flight vs {few:.0f} at 10"
