"""Both transports (transport.py) over real loopback sockets: the same failure kind for the same
fault through the one transport-error table, the same answer, and streams that give their
connection back to the pool."""

from __future__ import annotations

import asyncio
import socket

import httpx
import pytest

from routeproof.core.types import AttemptFailureKind, ChatRequest, Message, TextDelta
from routeproof.errors import ConfigError, ProviderCallFailed
from routeproof.mock import CutMode, MockProviderServer, Scripted, Shape
from routeproof.providers.openai import OpenAIProvider
from routeproof.transport import Transport, make_client, parse_transport

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")

TRANSPORTS = [Transport.HTTPX, Transport.AIOHTTP]
REQUEST = ChatRequest(messages=(Message.user("hi"),), max_tokens=16)

FAULTS = {
    "reset before headers": (Scripted(cut_after_bytes=0, cut_mode=CutMode.RESET), AttemptFailureKind.CONN_RESET),
    "reset in the body": (Scripted(cut_after_bytes=80, cut_mode=CutMode.RESET), AttemptFailureKind.CONN_RESET),
    "early EOF in the body": (Scripted(cut_after_bytes=80, cut_mode=CutMode.CLOSE), AttemptFailureKind.CONN_RESET),
    "stall": (Scripted(hang=True), AttemptFailureKind.ATTEMPT_TIMEOUT),
    "503": (Scripted(status=503), AttemptFailureKind.HTTP_STATUS),
}


async def _complete(transport: Transport, base_url: str, within_s: float = 2.0) -> object:
    client = make_client(transport)
    provider = OpenAIProvider(api_key="sk-test", base_url=f"{base_url}/v1", client=client)
    try:
        loop = asyncio.get_running_loop()
        return await provider.complete(REQUEST, "gpt-4o", timeout_at=loop.time() + within_s)
    except ProviderCallFailed as exc:
        return exc.failure.kind
    finally:
        await client.aclose()


@pytest.mark.parametrize("transport", TRANSPORTS, ids=lambda t: t.value)
@pytest.mark.parametrize("fault", list(FAULTS))
@pytest.mark.asyncio
async def test_each_fault_maps_to_the_same_failure_kind(transport: Transport, fault: str) -> None:
    """A scripted socket fault gives the failure kind httpx's own transport gives, on either transport."""
    script, expected = FAULTS[fault]
    async with MockProviderServer(Shape.OPENAI) as server:
        server.script(script)
        assert await _complete(transport, server.base_url, within_s=1.0) is expected


@pytest.mark.parametrize("transport", TRANSPORTS, ids=lambda t: t.value)
@pytest.mark.asyncio
async def test_connection_refused_is_conn_refused(transport: Transport) -> None:
    """A closed port is CONN_REFUSED on either transport (httpx-aiohttp alone says ConnectTimeout)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    assert await _complete(transport, f"http://127.0.0.1:{port}") is AttemptFailureKind.CONN_REFUSED


@pytest.mark.parametrize("transport", TRANSPORTS, ids=lambda t: t.value)
@pytest.mark.asyncio
async def test_answer_and_streams_reuse_one_connection(transport: Transport) -> None:
    """Calls and fully read streams, one after another, share one pooled connection."""
    async with MockProviderServer(Shape.OPENAI) as server:
        client = make_client(transport)
        provider = OpenAIProvider(api_key="sk-test", base_url=f"{server.base_url}/v1", client=client)
        loop = asyncio.get_running_loop()
        try:
            for _ in range(3):
                response = await provider.complete(REQUEST, "gpt-4o", timeout_at=loop.time() + 5)
                assert response.choices[0].content
                events = [e async for e in provider.stream(REQUEST, "gpt-4o", timeout_at=loop.time() + 5)]
                assert any(isinstance(e, TextDelta) for e in events)
        finally:
            await client.aclose()
        assert server.connections_accepted == 1


def test_transport_names_are_checked() -> None:
    """An unknown transport name is a ConfigError naming it; both known names parse."""
    with pytest.raises(ConfigError, match="'curl'"):
        parse_transport("curl")
    assert parse_transport("httpx") is Transport.HTTPX
    assert isinstance(make_client("httpx"), httpx.AsyncClient)
