"""Connection hygiene on a real socket: half-sent requests are closed after the header timeout, open
connections past the cap get a JSON 503 and are closed, and the gateway keeps serving throughout."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from routeproof.gateway import Backend
from routeproof.mock import MockProviderServer, Shape
from tests.gateway.conftest import ENVIRON, GATEWAY_KEY, agent_toml, serve

pytestmark = pytest.mark.asyncio
BODY = {"model": "chat", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]}
HALF_SENT = b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nx-api-key: "


@asynccontextmanager
async def _gateway(tmp_path: Path, reader: InMemoryMetricReader | None, tail: str) -> AsyncIterator[str]:
    async with MockProviderServer(Shape.ANTHROPIC) as anthropic, MockProviderServer(Shape.OPENAI) as openai:
        text = agent_toml(anthropic.base_url, openai.base_url).replace("[gateway]\n", f"[gateway]\n{tail}\n", 1)
        (tmp_path / "agent.toml").write_text(text)
        async with serve(Backend.load(tmp_path / "agent.toml", environ=ENVIRON), reader) as (url, _app, _stop):
            yield url


async def _open(url: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    parts = urlsplit(url)
    return await asyncio.open_connection(parts.hostname, parts.port)


async def test_half_sent_requests_are_closed_after_the_header_timeout(
    tmp_path: Path, metrics_reader: InMemoryMetricReader | None
) -> None:
    """50 connections that stop mid-headers are closed by the server after header_timeout_ms (300 ms);
    a silent connection too; a full request meanwhile is answered."""
    async with _gateway(tmp_path, metrics_reader, "header_timeout_ms = 300") as url:
        opened = [await _open(url) for _ in range(50)]
        for _, writer in opened[1:]:
            writer.write(HALF_SENT)
        async with httpx.AsyncClient(base_url=url, timeout=10) as client:
            served = await client.post("/v1/chat/completions", json=BODY, headers={"x-api-key": GATEWAY_KEY})
        async with asyncio.timeout(5):
            ends = [await reader.read() for reader, _ in opened]  # b"": the server closed it
        for _, writer in opened:
            writer.close()
    assert served.status_code == 200
    assert ends == [b""] * 50


async def test_connections_past_the_cap_get_a_json_503(
    tmp_path: Path, metrics_reader: InMemoryMetricReader | None
) -> None:
    """With max_connections = 10 and 10 held open, the 11th gets a JSON 503 with Retry-After and is
    closed; once they go, a request is served again."""
    async with _gateway(tmp_path, metrics_reader, "max_connections = 10") as url:
        held = [await _open(url) for _ in range(10)]
        reader, writer = await _open(url)
        async with asyncio.timeout(5):
            answer = await reader.read()
        writer.close()
        for _, held_writer in held:
            held_writer.close()
        await asyncio.sleep(0.1)
        async with httpx.AsyncClient(base_url=url, timeout=10) as client:
            again = await client.post("/v1/chat/completions", json=BODY, headers={"x-api-key": GATEWAY_KEY})
    assert answer.startswith(b"HTTP/1.1 503 ")
    assert b"retry-after: 1" in answer
    assert answer.endswith(b'"code":"too_many_connections","attempts":[]}}')
    assert again.status_code == 200
