"""What keeps the gateway's added latency down, pinned without timing anything: one kept-alive
connection per hop for sequential calls, TCP_NODELAY on both of the gateway's sockets, and no
tracer built nor span recorded per request when nothing asked for a trace.

The gateway's added latency was measured as CPU-bound (see README, "The gateway"): these checks keep
the protocol-level causes ruled out (a new connection per call, Nagle + delayed ACK on a
write-write-read exchange) and keep the per-request OpenTelemetry work that was cut from coming back.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from collections.abc import Set as AbstractSet
from pathlib import Path

import httpx
import pytest
import pytest_asyncio
from opentelemetry import trace

from routeproof.config import load_config
from routeproof.factory import router_from_config
from routeproof.gateway import Backend
from routeproof.gateway.server import bind, make_server
from routeproof.gateway.settings import load_gateway_settings
from routeproof.gateway.telemetry import MetricsSource
from routeproof.mock import MockProviderServer, Shape
from tests.gateway.conftest import ENVIRON, GATEWAY_KEY, TIMEOUT_S, agent_toml

pytestmark = pytest.mark.asyncio
CALLS = 12
REQUEST = (
    b"POST /v1/chat/completions HTTP/1.1\r\nhost: gw\r\nauthorization: Bearer " + GATEWAY_KEY.encode() + b"\r\n"
    b"content-type: application/json\r\ncontent-length: %d\r\n\r\n%s"
)
BODY = b'{"model":"chat","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}'


class Wire:
    """A gateway whose upstream client reports each response's socket, and its two mocks."""

    def __init__(
        self, url: str, anthropic: MockProviderServer, connections: AbstractSet[object], upstream_nodelay: list[int]
    ) -> None:
        self.url = url
        self.anthropic = anthropic
        self.server_connections = connections  # uvicorn's open client connections (protocol objects)
        self.upstream_nodelay = upstream_nodelay  # TCP_NODELAY of the provider socket, per response


@pytest_asyncio.fixture
async def wire(tmp_path: Path, metrics_reader: MetricsSource | None) -> AsyncIterator[Wire]:
    """The gateway on loopback with a response hook on its pooled provider client."""
    async with MockProviderServer(Shape.ANTHROPIC) as anthropic, MockProviderServer(Shape.OPENAI) as openai:
        path = tmp_path / "agent.toml"
        path.write_text(agent_toml(anthropic.base_url, openai.base_url))
        sock = bind("127.0.0.1", 0)
        upstream_nodelay: list[int] = []

        async def on_response(response: httpx.Response) -> None:
            raw = response.extensions["network_stream"].get_extra_info("socket")
            upstream_nodelay.append(raw.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))

        client = httpx.AsyncClient(event_hooks={"response": [on_response]})
        config = load_config(path, environ=ENVIRON)
        backend = Backend(
            config, load_gateway_settings(path, environ=ENVIRON), router_from_config(config, client=client)
        )
        server = make_server(backend, metrics_reader=metrics_reader)
        task = asyncio.create_task(server.serve(sockets=[sock]))
        try:
            async with asyncio.timeout(TIMEOUT_S):
                while not server.started:  # noqa: ASYNC110 - uvicorn exposes a flag, not an event
                    await asyncio.sleep(0.005)
            url = f"127.0.0.1:{sock.getsockname()[1]}"
            yield Wire(url, anthropic, server.server_state.connections, upstream_nodelay)
        finally:
            server.should_exit = True
            async with asyncio.timeout(TIMEOUT_S):
                await task
            sock.close()


async def _exchange(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> tuple[bytes, bytes]:
    writer.write(REQUEST % (len(BODY), BODY))
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(
        int(line.split(b":")[1]) for line in head.lower().split(b"\r\n") if line.startswith(b"content-length")
    )
    return head, await reader.readexactly(length)


async def test_sequential_calls_reuse_one_connection_per_hop(wire: Wire) -> None:
    """N calls on one client connection are all answered on it, and reach the provider over one connection."""
    host, port = wire.url.split(":")
    async with asyncio.timeout(TIMEOUT_S):
        reader, writer = await asyncio.open_connection(host, int(port))
        try:
            heads = [(await _exchange(reader, writer))[0] for _ in range(CALLS)]
        finally:
            writer.close()
            await writer.wait_closed()
    assert all(head.startswith(b"HTTP/1.1 200 ") for head in heads), heads[0]
    assert not any(b"connection: close" in head.lower() for head in heads)
    assert len(wire.anthropic.journal) == CALLS
    assert {entry.connection_id for entry in wire.anthropic.journal} == {1}
    assert wire.anthropic.connections_accepted == 1


async def test_both_gateway_sockets_disable_nagle(wire: Wire) -> None:
    """TCP_NODELAY is on for the client connection uvicorn accepted and for the pooled provider connection."""
    host, port = wire.url.split(":")
    async with asyncio.timeout(TIMEOUT_S):
        reader, writer = await asyncio.open_connection(host, int(port))
        try:
            await _exchange(reader, writer)
            (protocol,) = wire.server_connections
            accepted = protocol.transport.get_extra_info("socket")  # type: ignore[attr-defined]
            assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
        finally:
            writer.close()
            await writer.wait_closed()
    assert wire.upstream_nodelay
    assert all(flag != 0 for flag in wire.upstream_nodelay)


async def test_an_untraced_request_builds_no_tracer_and_records_no_span(
    wire: Wire, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a traceparent, a call asks the tracer provider for no tracer and its spans do not record."""
    host, port = wire.url.split(":")
    provider = trace.get_tracer_provider()
    built: list[str] = []
    real_get_tracer = provider.get_tracer

    def counting_get_tracer(name: str, *args: object, **kwargs: object) -> trace.Tracer:
        built.append(name)
        return real_get_tracer(name, *args, **kwargs)  # type: ignore[arg-type]

    async with asyncio.timeout(TIMEOUT_S):
        reader, writer = await asyncio.open_connection(host, int(port))
        try:
            await _exchange(reader, writer)  # warm: the tracers exist from here on
            monkeypatch.setattr(provider, "get_tracer", counting_get_tracer)
            for _ in range(3):
                head, _body = await _exchange(reader, writer)
                assert head.startswith(b"HTTP/1.1 200 ")
        finally:
            writer.close()
            await writer.wait_closed()
    assert built == []
    outbound = [entry.header("traceparent") or "" for entry in wire.anthropic.journal]
    assert outbound
    assert all(int(value[-2:], 16) & 1 == 0 for value in outbound), outbound  # sampled bit off: not recorded
