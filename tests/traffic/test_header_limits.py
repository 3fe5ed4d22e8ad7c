"""Provider-side limits learnt from the answers' headers, over real sockets (issue 32).

Two mock deployments of one alias, no ``rpm``/``tpm`` declared. ``dep-a`` enforces 3 requests per
window and says so in its headers, as OpenAI (``x-ratelimit-*``) or Anthropic
(``anthropic-ratelimit-*``) do. Its third answer reports 0 remaining: the router skips it (a
``SkipRecord`` naming the header) until the reset, so it never answers 429, and goes back to it
after the reset.
"""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest

from routeproof.core.routing import resolve
from routeproof.core.types import (
    ChatRequest,
    FallbackProvider,
    Message,
    ProviderKind,
    ProviderName,
    ProviderResponse,
    TenantPolicy,
)
from routeproof.mock import MockProviderServer
from routeproof.mock.rate_headers import MockRateLimit
from routeproof.mock.script import Shape
from routeproof.providers.anthropic import AnthropicProvider
from routeproof.providers.openai import OpenAIProvider
from routeproof.providers.protocol import Provider
from routeproof.router import Router
from routeproof.traffic import Member, TrafficConfig

pytestmark = [pytest.mark.asyncio, pytest.mark.looptime(False)]

ALIAS = "chat"
WINDOW_S = 1.5


def _name(response: ProviderResponse) -> str | None:
    return None if response.provider is None else response.provider.value


def _tenant(model: str) -> TenantPolicy:
    return TenantPolicy(
        primary={ALIAS: (ProviderName("dep-a"), model)},
        fallback_chain=(FallbackProvider(kind=ProviderName("dep-b"), model_alias_map={ALIAS: model}),),
    )


def _provider(shape: Shape, client: httpx.AsyncClient, server: MockProviderServer, name: str) -> Provider:
    if shape is Shape.ANTHROPIC:
        return AnthropicProvider(api_key="sk-ant-test", client=client, base_url=server.base_url, name=name)
    return OpenAIProvider(
        kind=ProviderKind.VLLM, api_key="sk-test", client=client, base_url=server.base_url + "/v1", name=name
    )


@pytest.mark.parametrize(
    ("shape", "model", "header"),
    [
        (Shape.OPENAI, "m", "x-ratelimit-remaining-requests"),
        (Shape.ANTHROPIC, "claude-3-5-haiku-20241022", "anthropic-ratelimit-requests-remaining"),
    ],
)
async def test_a_deployment_reported_at_zero_is_skipped_until_its_reset(shape: Shape, model: str, header: str) -> None:
    """Calls 1-3 reach dep-a; call 4 skips it naming ``header`` (0 provider 429s); after the reset it is used again."""
    limited = MockProviderServer(shape, name="dep-a", rate_limit=MockRateLimit(requests=3, window_s=WINDOW_S))
    spare = MockProviderServer(shape, name="dep-b")
    async with limited, spare, httpx.AsyncClient() as client:
        router = Router([_provider(shape, client, limited, "dep-a"), _provider(shape, client, spare, "dep-b")])
        tenant = _tenant(model)
        resolved = resolve(ALIAS, tenant)
        req = ChatRequest(messages=(Message.user("hi"),), max_tokens=16, alias=ALIAS)
        loop = asyncio.get_running_loop()
        started = time.time()
        first = [await router.call_provider(req, resolved, loop.time() + 10, tenant) for _ in range(3)]
        fourth = await router.call_provider(req, resolved, loop.time() + 10, tenant)
        assert [_name(r) for r in first] == ["dep-a"] * 3
        assert _name(fourth) == "dep-b"
        assert [s.reason for s in fourth.skipped] == [f"rate_limit_header:{header}"]
        assert limited.rate_window is not None
        assert limited.rate_window.refused == 0
        assert len(limited.journal) == 3
        await asyncio.sleep(max(0.0, started + WINDOW_S + 1.05 - time.time()))  # past the reset (RFC 3339: whole s)
        after = await router.call_provider(req, resolved, loop.time() + 10, tenant)
        assert _name(after) == "dep-a"
        assert limited.rate_window.refused == 0
        await router.aclose()


async def test_without_the_headers_the_provider_answers_429() -> None:
    """The control: the same limit, answers without headers read (a router that ignores them) -> a 429."""
    limited = MockProviderServer(Shape.OPENAI, name="dep-a", rate_limit=MockRateLimit(requests=3, window_s=30))
    async with limited, httpx.AsyncClient() as client:
        provider = _provider(Shape.OPENAI, client, limited, "dep-a")
        req = ChatRequest(messages=(Message.user("hi"),), max_tokens=16, alias=ALIAS)
        loop = asyncio.get_running_loop()
        for _ in range(4):
            try:
                await provider.complete(req, "m", timeout_at=loop.time() + 10)
            except Exception:
                break
        assert limited.rate_window is not None
        assert limited.rate_window.refused == 1


@pytest.mark.asyncio
async def test_an_affinity_pin_moves_to_the_deployment_that_answered() -> None:
    """Reserve-then-confirm: prefix P is pinned to dep-a when ordered, but dep-a is held back by its
    headers, so dep-b answers and the pin is confirmed there; after dep-a's reset, P still goes to dep-b."""
    limited = MockProviderServer(Shape.OPENAI, name="dep-a", rate_limit=MockRateLimit(requests=1, window_s=WINDOW_S))
    spare = MockProviderServer(Shape.OPENAI, name="dep-b")
    members = {n: Member(priority=0) for n in ("dep-a", "dep-b")}
    traffic = TrafficConfig(members=members, affinity_ttl_ms=300_000)
    async with limited, spare, httpx.AsyncClient() as client:
        providers = [_provider(Shape.OPENAI, client, s, n) for s, n in ((limited, "dep-a"), (spare, "dep-b"))]
        router = Router(providers, traffic=traffic)
        tenant = _tenant("m")
        resolved = resolve(ALIAS, tenant)
        loop = asyncio.get_running_loop()

        def prefixed(prefix: str, turn: int) -> ChatRequest:
            return ChatRequest(messages=(Message.user(prefix), Message.user(f"q{turn}")), max_tokens=8, alias=ALIAS)

        started = time.time()
        other = await router.call_provider(prefixed("X", 0), resolved, loop.time() + 10, tenant)
        moved = await router.call_provider(prefixed("P", 0), resolved, loop.time() + 10, tenant)
        await asyncio.sleep(max(0.0, started + WINDOW_S + 1.05 - time.time()))  # dep-a is free again
        again = await router.call_provider(prefixed("P", 1), resolved, loop.time() + 10, tenant)
        await router.aclose()
    assert [_name(r) for r in (other, moved, again)] == ["dep-a", "dep-b", "dep-b"]
