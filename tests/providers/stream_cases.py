"""Shared pieces of the stream tests: a provider per mock shape, a collector, a raw one-shot server."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import ssl
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, ParamSpec

import httpx

from routeproof.core.types import (
    ChatRequest,
    Message,
    MessageStop,
    ProviderKind,
    StreamError,
    StreamEvent,
    TextDelta,
    ToolDefinition,
)
from routeproof.mock import MockProviderServer, Shape
from routeproof.providers.anthropic import AnthropicProvider
from routeproof.providers.azure import AzureOpenAIProvider
from routeproof.providers.bedrock import BedrockProvider
from routeproof.providers.gemini import GeminiProvider
from routeproof.providers.openai import OpenAIProvider
from routeproof.providers.protocol import Provider

from .conftest import ANTHROPIC_KEY, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, OPENAI_KEY

MODEL = "anthropic.claude-3-haiku-20240307-v1:0"  # a Bedrock-style id; the SSE mocks echo any model
TOOL = "search"
SECRETS = (ANTHROPIC_KEY, OPENAI_KEY, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN)
TEST_BUDGET_S = 5.0  # every test's wall time is bounded by this (asyncio.timeout)
P = ParamSpec("P")


def secrets_of(shape: Shape) -> tuple[str, ...]:
    """The credentials the provider of ``shape`` holds (and must redact)."""
    if shape is Shape.ANTHROPIC:
        return (ANTHROPIC_KEY,)
    if shape in (Shape.OPENAI, Shape.AZURE, Shape.GEMINI):
        return (OPENAI_KEY,)
    return (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN)


def make_provider(shape: Shape, client: httpx.AsyncClient, base_url: str) -> Provider:
    """The provider client that speaks ``shape``, pointed at ``base_url``."""
    if shape is Shape.ANTHROPIC:
        return AnthropicProvider(api_key=ANTHROPIC_KEY, client=client, base_url=base_url)
    if shape is Shape.OPENAI:
        return OpenAIProvider(kind=ProviderKind.OPENAI, api_key=OPENAI_KEY, client=client, base_url=f"{base_url}/v1")
    if shape is Shape.AZURE:
        return AzureOpenAIProvider(endpoint=base_url, api_key=OPENAI_KEY, api_version="2024-10-21", client=client)
    if shape is Shape.GEMINI:
        return GeminiProvider(api_key=OPENAI_KEY, client=client, base_url=f"{base_url}/v1beta/openai")
    return BedrockProvider(
        region="us-east-1",
        access_key_id=AWS_ACCESS_KEY_ID,
        secret_access_key=AWS_SECRET_ACCESS_KEY,
        session_token=AWS_SESSION_TOKEN,
        client=client,
        base_url=base_url,
    )


def text_request() -> ChatRequest:
    """A one-turn request; the mocks answer it with text."""
    return ChatRequest(messages=(Message.user("hello"),), max_tokens=64)


def tool_request() -> ChatRequest:
    """A request offering one tool; the mocks answer it by calling the tool."""
    tool = ToolDefinition(name=TOOL, description="search the web", input_schema_json='{"type":"object"}')
    return ChatRequest(messages=(Message.user("look it up"),), max_tokens=64, tools=(tool,))


@dataclass(slots=True)
class Mocked:
    """A running mock server and a provider client pointed at it."""

    shape: Shape
    server: MockProviderServer
    provider: Provider
    seen: list[StreamEvent] = field(default_factory=list)

    async def collect(
        self, request: ChatRequest | None = None, *, timeout_s: float = 2.0, idle_timeout_s: float | None = None
    ) -> list[StreamEvent]:
        """Every event of one stream (also kept in ``seen``, so a test can inspect them after a raise)."""
        self.seen = []
        timeout_at = asyncio.get_running_loop().time() + timeout_s
        stream = self.provider.stream(
            request or text_request(), MODEL, timeout_at=timeout_at, idle_timeout_s=idle_timeout_s
        )
        async with contextlib.aclosing(stream) as events:  # type: ignore[type-var]  # Provider.stream is typed AsyncIterator; every implementation is an async generator
            async for event in events:
                self.seen.append(event)
        return self.seen


@contextlib.asynccontextmanager
async def mocked(shape: Shape, tls_context: ssl.SSLContext) -> AsyncIterator[Mocked]:
    """A mock server of ``shape`` and its provider, for one test.

    The provider gets its own pooled client, closed before the server stops, so the server never
    has to cancel a kept-alive connection.
    """
    async with MockProviderServer(shape) as server, httpx.AsyncClient(verify=tls_context) as client:
        yield Mocked(shape=shape, server=server, provider=make_provider(shape, client, server.base_url))


def check_well_formed(events: list[StreamEvent]) -> None:
    """Exactly one terminal event, last; a StreamError says the stream was interrupted."""
    terminal = [i for i, e in enumerate(events) if isinstance(e, MessageStop | StreamError)]
    assert terminal == [len(events) - 1], events
    last = events[-1]
    if isinstance(last, StreamError):
        assert last.message.startswith("stream interrupted"), last
        assert all(secret not in last.message for secret in SECRETS), last


def text_of(events: list[StreamEvent]) -> str:
    """The concatenated text deltas."""
    return "".join(e.text for e in events if isinstance(e, TextDelta))


@dataclass(slots=True)
class RawServer:
    """A one-connection HTTP/1.1 server on loopback: sends ``head_and_body``, then reads until EOF.

    ``client_closed`` is set when the client closes its end: the observable proof that a stream's
    response was closed.
    """

    head_and_body: bytes
    request_received: asyncio.Event = field(default_factory=asyncio.Event)
    client_closed: asyncio.Event = field(default_factory=asyncio.Event)
    port: int = 0
    _server: asyncio.Server | None = None

    async def _on_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(self.head_and_body)
            await writer.drain()
            self.request_received.set()
            while await reader.read(65536):
                pass
            self.client_closed.set()
        except (ConnectionError, asyncio.IncompleteReadError):
            self.client_closed.set()
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    async def __aenter__(self) -> RawServer:
        self._server = await asyncio.start_server(self._on_connection, "127.0.0.1", 0)
        self.port = int(self._server.sockets[0].getsockname()[1])
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()

    @property
    def base_url(self) -> str:
        """Where to point a provider."""
        return f"http://127.0.0.1:{self.port}"


def chunked(*pieces: bytes, content_type: str = "text/event-stream") -> bytes:
    """A 200 head and the pieces as chunks, without the last (zero) chunk: the body stays open."""
    head = f"HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ntransfer-encoding: chunked\r\n\r\n".encode()
    return head + b"".join(f"{len(p):x}\r\n".encode() + p + b"\r\n" for p in pieces)


def bounded(test: Callable[P, Coroutine[Any, Any, None]]) -> Callable[P, Coroutine[Any, Any, None]]:
    """Bound an async test's wall time by ``TEST_BUDGET_S`` (real sockets, real delays)."""

    @functools.wraps(test)
    async def run(*args: P.args, **kwargs: P.kwargs) -> None:
        async with asyncio.timeout(TEST_BUDGET_S):
            await test(*args, **kwargs)

    return run
