"""Both transports (transport.py) over real loopback sockets: the same failure kind for the same
fault through the one transport-error table, the same answer, and streams that give their
connection back to the pool."""

from __future__ import annotations

import asyncio
import socket

import httpcore
import httpx
import pytest

from routeproof._pool import IndexedPool
from routeproof.core.types import AttemptFailureKind, ChatRequest, Message, TextDelta
from routeproof.errors import ConfigError, ProviderCallFailed
from routeproof.mock import CutMode, MockProviderServer, Scripted, Shape
from routeproof.providers.anthropic import AnthropicProvider
from routeproof.providers.bedrock import BedrockProvider
from routeproof.providers.openai import OpenAIProvider
from routeproof.transport import (
    POOL_CONNECTIONS,
    Transport,
    adopt_client,
    default_transport,
    make_client,
    parse_transport,
)

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


def test_the_default_transport_is_aiohttps_unless_the_environment_names_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """With no ROUTEPROOF_TRANSPORT the default is aiohttp's (a core dependency); the variable overrides it."""
    monkeypatch.delenv("ROUTEPROOF_TRANSPORT", raising=False)
    assert default_transport() is Transport.AIOHTTP
    assert not isinstance(make_client()._transport, httpx.AsyncHTTPTransport)
    monkeypatch.setenv("ROUTEPROOF_TRANSPORT", "httpx")
    assert default_transport() is Transport.HTTPX
    monkeypatch.delenv("ROUTEPROOF_TRANSPORT")
    backend = httpcore.AnyIOBackend()  # an httpcore socket layer implies the httpx transport
    assert type(make_client(network_backend=backend)._transport._pool) is IndexedPool  # type: ignore[attr-defined]


def test_a_provider_with_no_client_gets_the_default_transport(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every built-in provider made without a client gets the measured default, not httpx's stock pool."""
    monkeypatch.delenv("ROUTEPROOF_TRANSPORT", raising=False)
    for provider in (
        OpenAIProvider(api_key="sk"),
        AnthropicProvider(api_key="sk"),
        BedrockProvider(region="us-east-1", access_key_id="AKIA", secret_access_key="s"),
    ):
        assert not isinstance(provider._client._transport, httpx.AsyncHTTPTransport), provider.kind


def test_a_stock_client_passed_in_gets_the_indexed_pool_with_routeproofs_keepalive() -> None:
    """httpx.AsyncClient() passed to a provider (the README's way) runs over IndexedPool, all connections kept alive."""
    client = httpx.AsyncClient()
    OpenAIProvider(api_key="sk", client=client)
    AnthropicProvider(api_key="sk", client=client)  # one client, several providers: adopted once
    pool = client._transport._pool  # type: ignore[attr-defined]
    assert type(pool) is IndexedPool
    assert (pool._max_connections, pool._max_keepalive_connections) == (POOL_CONNECTIONS, POOL_CONNECTIONS)


def test_a_passed_client_keeps_its_own_limits_and_anything_not_stock() -> None:
    """Chosen limits stay; HTTP/2, a custom transport and a used pool are left exactly as given."""
    chosen = adopt_client(httpx.AsyncClient(limits=httpx.Limits(max_connections=7, max_keepalive_connections=3)))
    pool = chosen._transport._pool  # type: ignore[attr-defined]
    assert type(pool) is IndexedPool
    assert (pool._max_connections, pool._max_keepalive_connections) == (7, 3)
    h2 = adopt_client(httpx.AsyncClient(http2=True)) if _has_h2() else None
    if h2 is not None:
        assert type(h2._transport._pool) is httpcore.AsyncConnectionPool  # type: ignore[attr-defined]
    custom = httpx.MockTransport(lambda request: httpx.Response(200))
    assert adopt_client(httpx.AsyncClient(transport=custom))._transport is custom
    with pytest.raises(TypeError, match=r"httpx\.AsyncClient"):
        adopt_client("not a client")  # type: ignore[arg-type]


@pytest.mark.asyncio
async def test_respx_still_intercepts_an_adopted_client() -> None:
    """After the pool swap a respx mock still answers the caller's client: nothing reaches the network."""
    import respx

    client = adopt_client(httpx.AsyncClient())
    with respx.mock(assert_all_mocked=True) as mock:
        mock.post("https://api.example.test/x").mock(return_value=httpx.Response(200, json={"ok": True}))
        response = await client.post("https://api.example.test/x", json={})
    assert response.json() == {"ok": True}
    await client.aclose()


def _has_h2() -> bool:
    import importlib.util

    return importlib.util.find_spec("h2") is not None
