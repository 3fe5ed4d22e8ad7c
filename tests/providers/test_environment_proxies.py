"""The proxies the environment names reach every transport: a deployment whose egress goes through
``HTTPS_PROXY`` gets it on the default (aiohttp) transport as on httpx's, for plain and streamed calls,
and ``NO_PROXY`` hosts go direct (on the direct path, for aiohttp).

httpx reads no proxy from the environment once a transport is passed to its client, and aiohttp's
session reads none unless asked: the default transport used to send every call straight to the
provider, around the proxy, where httpx's own client (and the provider SDKs) used it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
import pytest

from routeproof.core.types import ChatRequest, Message, TextDelta
from routeproof.providers import OpenAIProvider
from routeproof.transport import Transport, direct_post, make_client
from tests.providers.direct_calls import _outcome, _streamed

pytestmark = pytest.mark.asyncio
UPSTREAM = "http://api.provider.invalid/v1/chat/completions"  # never resolved: only a proxy can answer it
COMPLETION = json.dumps({
    "id": "c1", "object": "chat.completion", "created": 1, "model": "m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "via proxy"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
}).encode()  # fmt: skip
_CHUNK = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m"}
SSE = b"".join(
    b"data: " + json.dumps({**_CHUNK, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}).encode()
    + b"\n\n"
    for delta, finish in (({"role": "assistant", "content": "via proxy"}, None), ({}, "stop"))
) + b"data: [DONE]\n\n"  # fmt: skip


@asynccontextmanager
async def _recording() -> AsyncIterator[tuple[str, list[bytes]]]:
    """A loopback server that answers every request (a chat completion, or SSE when the body asks for
    a stream) and keeps each request line: absolute-form (``POST http://host/...``) when it was sent
    to it as a forward proxy, origin-form (``POST /...``) when sent to it directly."""
    lines: list[bytes] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        fields = head.split(b"\r\n")
        lines.append(fields[0])
        length = next((int(f.split(b":")[1]) for f in fields if f.lower().startswith(b"content-length:")), 0)
        streamed = b'"stream":true' in (await reader.readexactly(length)).replace(b" ", b"")
        body, kind = (SSE, b"text/event-stream") if streamed else (COMPLETION, b"application/json")
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: %s\r\ncontent-length: %d\r\n" % (kind, len(body)))
        writer.write(b"connection: close\r\n\r\n" + body)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    async with server:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}", lines


@pytest.fixture(autouse=True)
def _no_inherited_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("no_proxy", raising=False)


@pytest.mark.parametrize("transport", list(Transport), ids=lambda t: t.value)
async def test_calls_go_through_the_proxy_the_environment_names(
    transport: Transport, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with _recording() as (proxy, lines):
        monkeypatch.setenv("HTTP_PROXY", proxy)
        client = make_client(transport)
        status = (await _outcome(client, UPSTREAM))[0]  # type: ignore[index]
        events = await _streamed(client, UPSTREAM)
        await client.aclose()
    assert status == 200
    assert isinstance(events, list)
    assert any(isinstance(event, TextDelta) and event.text == "via proxy" for event in events)
    assert lines == [f"POST {UPSTREAM} HTTP/1.1".encode()] * 2


@pytest.mark.parametrize("transport", list(Transport), ids=lambda t: t.value)
async def test_a_no_proxy_host_is_called_directly(transport: Transport, monkeypatch: pytest.MonkeyPatch) -> None:
    async with _recording() as (proxy, proxied), _recording() as (upstream, direct):
        monkeypatch.setenv("HTTP_PROXY", proxy)
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        client = make_client(transport)
        url = f"{upstream}/v1/chat/completions"
        on_direct_path = direct_post(client, httpx.URL(url)) is not None
        status = (await _outcome(client, url))[0]  # type: ignore[index]
        await _streamed(client, url)
        await client.aclose()
    assert status == 200
    assert proxied == []
    assert direct == [b"POST /v1/chat/completions HTTP/1.1"] * 2
    assert on_direct_path is (transport is Transport.AIOHTTP)  # the fast path stays where no proxy applies


async def test_a_provider_made_without_a_client_uses_the_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a user gets: a built-in provider on the default transport, the proxy set in its environment."""
    monkeypatch.delenv("ROUTEPROOF_TRANSPORT", raising=False)
    async with _recording() as (proxy, lines):
        monkeypatch.setenv("HTTP_PROXY", proxy)
        provider = OpenAIProvider(api_key="sk-1", base_url="http://api.provider.invalid/v1")
        req = ChatRequest(messages=(Message.user("hello"),), max_tokens=16)
        response = await provider.complete(req, "m", timeout_at=asyncio.get_running_loop().time() + 5)
        await provider._client.aclose()
    assert response.choices[0].content == "via proxy"
    assert lines == [f"POST {UPSTREAM} HTTP/1.1".encode()]
