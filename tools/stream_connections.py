"""Count the TCP connections N sequential streamed calls open against ``routeproof mock``.

Usage: ``python -m tools.stream_connections [N]`` (default 200). Each call goes through an
``AnthropicProvider`` and an ``OpenAIProvider`` sharing one ``httpx.AsyncClient`` (a pool), reading
each stream to its ``MessageStop``; the mock server counts the connections it accepted. A pooled
client that reuses its connection opens 1 per server; one that drops it opens N.
"""

from __future__ import annotations

import asyncio
import sys

import httpx

from routeproof.core.types import ChatRequest, Message, MessageStop
from routeproof.mock import MockProviderServer, Shape
from routeproof.providers.anthropic import AnthropicProvider
from routeproof.providers.openai import OpenAIProvider


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
    return counts


def main(argv: list[str]) -> None:
    n = int(argv[0]) if argv else 200
    for shape, count in asyncio.run(connections(n)).items():
        print(f"{shape}: {n} sequential streams opened {count} connections")


if __name__ == "__main__":
    main(sys.argv[1:])
