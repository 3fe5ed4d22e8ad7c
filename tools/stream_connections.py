"""Count the TCP connections N sequential streamed calls open against ``routeproof mock``.

Usage: ``python -m tools.stream_connections [N]`` (default 200). Each call goes through an
``AnthropicProvider`` and an ``OpenAIProvider`` sharing one ``httpx.AsyncClient`` (a pool), and then
through ``Router.call_provider_streaming`` to the OpenAI one, reading each stream to its
``MessageStop``; the mock server counts the connections it accepted. A pooled client that reuses its
connection opens 1 per server; one that drops it opens N. For the numbers before a change, run the
same file against an older tree: ``git archive REV | tar -x -C /tmp/old`` then
``PYTHONPATH=/tmp/old/src python tools/stream_connections.py``.
"""

from __future__ import annotations

import asyncio
import sys

import httpx

from routeproof.core.routing import resolve
from routeproof.core.types import ChatRequest, Message, MessageStop, ProviderKind, TenantPolicy
from routeproof.mock import MockProviderServer, Shape
from routeproof.providers.anthropic import AnthropicProvider
from routeproof.providers.openai import OpenAIProvider
from routeproof.router import Router


async def connections(n: int) -> dict[str, int]:
    """Connections accepted per server shape after ``n`` sequential completed streams each."""
    request = ChatRequest(messages=(Message.user("hi"),), max_tokens=16)
    counts: dict[str, int] = {}
    async with (
        MockProviderServer(Shape.ANTHROPIC) as anthropic_server,
        MockProviderServer(Shape.OPENAI) as openai_server,
        httpx.AsyncClient() as client,  # closed first, so no server sees a connection cut at its stop
    ):
        providers = (
            (anthropic_server, AnthropicProvider(api_key="sk-test", client=client, base_url=anthropic_server.base_url)),
            (openai_server, OpenAIProvider(api_key="sk-test", client=client, base_url=f"{openai_server.base_url}/v1")),
        )
        for server, provider in providers:
            for _ in range(n):
                loop = asyncio.get_running_loop()
                stream = provider.stream(request, "mock-model", timeout_at=loop.time() + 10)
                events = [event async for event in stream]
                assert isinstance(events[-1], MessageStop), events[-1]
            counts[server.shape.value] = server.connections_accepted
    counts["router (openai)"] = await _through_the_router(n)
    return counts


async def _through_the_router(n: int) -> int:
    """Connections ``n`` sequential ``Router.call_provider_streaming`` calls open to one mock server."""
    policy = TenantPolicy(primary={"chat": (ProviderKind.OPENAI, "mock-model")})
    resolved = resolve("chat", policy)
    assert resolved is not None
    request = ChatRequest(messages=(Message.user("hi"),), max_tokens=16, alias="chat")
    async with MockProviderServer(Shape.OPENAI) as server, httpx.AsyncClient() as client:
        router = Router([OpenAIProvider(api_key="sk-test", client=client, base_url=f"{server.base_url}/v1")])
        for _ in range(n):
            deadline = asyncio.get_running_loop().time() + 10
            events = [event async for event in router.call_provider_streaming(request, resolved, deadline, policy)]
            assert isinstance(events[-1], MessageStop), events[-1]
        return server.connections_accepted


def main(argv: list[str]) -> None:
    n = int(argv[0]) if argv else 200
    for shape, count in asyncio.run(connections(n)).items():
        print(f"{shape}: {n} sequential streams opened {count} connections")


if __name__ == "__main__":
    main(sys.argv[1:])
