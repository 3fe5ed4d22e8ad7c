"""The chaos rig: mock providers behind Toxiproxy proxies, and the router built over them.

``build_router`` is the one place that knows the Router's constructor and the provider classes:
when the public API changes (named provider instances, new config), only it changes.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass

import httpx

from chaos.toxi import ClientProxy, Toxi
from routeproof.core.health import HealthConfig
from routeproof.core.ledger import BudgetLimits
from routeproof.core.pricing import load_pricing
from routeproof.core.routing import resolve
from routeproof.core.types import (
    ChatRequest,
    FallbackProvider,
    Message,
    ProviderKind,
    ResolvedModel,
    TenantPolicy,
    ToolDefinition,
)
from routeproof.mock import MockProviderServer, Scripted, Shape
from routeproof.providers.anthropic import AnthropicProvider
from routeproof.providers.bedrock import BedrockProvider
from routeproof.providers.openai import OpenAIProvider
from routeproof.providers.protocol import Provider
from routeproof.router import Router
from routeproof.router_options import BudgetOptions, HealthOptions, LimitOptions

__all__ = ["ALIAS", "KINDS", "Fleet", "RouterKnobs", "build_router", "fleet", "policy", "request", "resolved"]

ALIAS = "chat.chaos"
A, OA, BR = ProviderKind.ANTHROPIC, ProviderKind.OPENAI, ProviderKind.BEDROCK
KINDS: tuple[ProviderKind, ...] = (A, OA, BR)
SHAPES = {A: Shape.ANTHROPIC, OA: Shape.OPENAI, BR: Shape.BEDROCK}
MODELS = {A: "claude-chaos", OA: "gpt-chaos", BR: "bedrock-chaos"}
PRICING = load_pricing(
    "\n".join(
        f'[{kind.value}."{model}"]\ninput_per_mtok = 3.00\noutput_per_mtok = 15.00\n'
        "cache_read_per_mtok = 0.30\ncache_write_per_mtok = 3.75\n"
        for kind, model in MODELS.items()
    )
)
# Large enough never to refuse a chaos call: the ledger is here to show reservations are settled.
BUDGET = BudgetLimits(session_limit_pico_usd=10**18, monthly_limit_pico_usd=10**18)
_serial = itertools.count(1)


@dataclass(frozen=True, slots=True, kw_only=True)
class RouterKnobs:
    """The router settings a scenario may change."""

    attempt_timeout_ms: int = 600
    stream_idle_timeout_ms: int = 1_000
    cooldown_ms: int = 1_000
    failure_threshold: int = 2


def build_router(endpoints: Mapping[ProviderKind, str], client: httpx.AsyncClient, knobs: RouterKnobs) -> Router:
    """THE adapter: a Router whose Anthropic/OpenAI/Bedrock providers talk to ``endpoints``
    (base URLs of the Toxiproxy proxies), with a budget ledger, pricing and short cooldowns."""
    providers: list[Provider] = [
        AnthropicProvider(api_key="sk-ant-chaos", client=client, base_url=endpoints[A]),
        OpenAIProvider(kind=OA, api_key="sk-chaos", client=client, base_url=f"{endpoints[OA]}/v1"),
        BedrockProvider(
            region="us-east-1",
            access_key_id="AKIDEXAMPLE",
            secret_access_key="chaos-secret",
            client=client,
            base_url=endpoints[BR],
        ),
    ]
    return Router(
        providers,
        client=client,
        limits=LimitOptions(
            attempt_timeout_ms=knobs.attempt_timeout_ms, stream_idle_timeout_ms=knobs.stream_idle_timeout_ms
        ),
        budgets=BudgetOptions(pricing=PRICING, limits=BUDGET),
        health=HealthOptions(
            config=HealthConfig(failure_threshold=knobs.failure_threshold, cooldown_ms=knobs.cooldown_ms)
        ),
    )


def policy(primary: ProviderKind) -> TenantPolicy:
    """``primary`` first, then the other two shapes in a fixed order."""
    return TenantPolicy(
        tenant_id="chaos",
        primary={ALIAS: (primary, MODELS[primary])},
        fallback_chain=tuple(
            FallbackProvider(kind=k, model_alias_map={ALIAS: MODELS[k]}) for k in KINDS if k is not primary
        ),
    )


def resolved(tenant: TenantPolicy) -> ResolvedModel:
    """The alias resolved through ``resolve`` (the only way production code may)."""
    result = resolve(ALIAS, tenant)
    assert result is not None
    return result


def request(*, tool: bool, text: str = "chaos please") -> ChatRequest:
    """A small request; with ``tool`` the mocks answer with a tool call."""
    tools = (ToolDefinition(name="lookup", input_schema_json='{"type": "object"}'),) if tool else ()
    return ChatRequest(messages=(Message.user(text),), max_tokens=64, alias=ALIAS, tools=tools)


@dataclass
class Fleet:
    """Three mock servers, a proxy in front of each, and the router over the proxies."""

    servers: dict[ProviderKind, MockProviderServer]
    proxies: dict[ProviderKind, ClientProxy]
    router: Router
    toxi: Toxi

    async def call_toxi(self, method: str, *args: object, **kwargs: object) -> None:
        """Run one blocking Toxi call off the event loop."""
        await asyncio.to_thread(getattr(self.toxi, method), *args, **kwargs)


@contextlib.asynccontextmanager
async def fleet(toxi: Toxi, knobs: RouterKnobs, primary_step: Scripted, primary: ProviderKind) -> AsyncIterator[Fleet]:
    """Start the mocks, put a fresh proxy in front of each, build the router; tear all down after."""
    servers = {kind: MockProviderServer(SHAPES[kind]) for kind in KINDS}
    serial = next(_serial)
    proxies: dict[ProviderKind, ClientProxy] = {}
    async with contextlib.AsyncExitStack() as stack:
        for server in servers.values():
            await stack.enter_async_context(server)
        servers[primary].set_default(primary_step)
        for kind, server in servers.items():
            name = f"chaos{serial}-{kind.value}"
            proxies[kind] = await asyncio.to_thread(toxi.create, name, f"127.0.0.1:{server.port}")
            stack.push_async_callback(asyncio.to_thread, toxi.destroy, proxies[kind])
        client = await stack.enter_async_context(httpx.AsyncClient())
        endpoints = {kind: f"http://{proxy.listen}" for kind, proxy in proxies.items()}
        router = build_router(endpoints, client, knobs)
        yield Fleet(servers=servers, proxies=proxies, router=router, toxi=toxi)
