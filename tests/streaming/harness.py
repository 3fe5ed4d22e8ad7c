"""Streaming test harness: a router over real-socket mock servers (127.0.0.1), one per shape."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import httpx

from routeproof.core.health import HealthConfig
from routeproof.core.ledger import BudgetLimits
from routeproof.core.pricing import load_pricing
from routeproof.core.routing import resolve
from routeproof.core.types import (
    BlockStop,
    ChatRequest,
    FallbackProvider,
    Message,
    ProviderKind,
    StreamEvent,
    TenantPolicy,
    ToolDefinition,
    ToolUseDelta,
    ToolUseStart,
)
from routeproof.mock import MockProviderServer, Shape
from routeproof.observe import RouterMetrics
from routeproof.providers.anthropic import AnthropicProvider
from routeproof.providers.bedrock import BedrockProvider
from routeproof.providers.openai import OpenAIProvider
from routeproof.providers.protocol import Provider
from routeproof.router import Router
from routeproof.router_options import BudgetOptions, HealthOptions, LimitOptions
from routeproof.streaming import ProviderStream

ALIAS = "chat.stream"
MODELS = {ProviderKind.ANTHROPIC: "claude-m", ProviderKind.OPENAI: "gpt-m", ProviderKind.BEDROCK: "bedrock-m"}
PRICING = load_pricing(
    "\n".join(
        f'[{kind.value}."{model}"]\ninput_per_mtok = 3.00\noutput_per_mtok = 15.00\n'
        "cache_read_per_mtok = 0.30\ncache_write_per_mtok = 3.75\n"
        for kind, model in MODELS.items()
    )
)


@dataclass
class Fleet:
    """The three mock servers and a router over them."""

    anthropic: MockProviderServer
    openai: MockProviderServer
    bedrock: MockProviderServer
    router: Router

    def server(self, kind: ProviderKind) -> MockProviderServer:
        """The mock server behind ``kind``."""
        return {
            ProviderKind.ANTHROPIC: self.anthropic,
            ProviderKind.OPENAI: self.openai,
            ProviderKind.BEDROCK: self.bedrock,
        }[kind]


@asynccontextmanager
async def fleet(
    *,
    budget: BudgetLimits | None = None,
    attempt_timeout_ms: int = 2_000,
    health: HealthConfig | None = None,
    metrics: RouterMetrics | None = None,
) -> AsyncIterator[Fleet]:
    """Start the three mock servers and a router whose providers point at them."""
    async with (
        MockProviderServer(Shape.ANTHROPIC) as anthropic,
        MockProviderServer(Shape.OPENAI) as openai,
        MockProviderServer(Shape.BEDROCK) as bedrock,
        httpx.AsyncClient() as client,
    ):
        providers: list[Provider] = [
            AnthropicProvider(api_key="sk-ant-stream", client=client, base_url=anthropic.base_url),
            OpenAIProvider(api_key="sk-openai-stream", client=client, base_url=f"{openai.base_url}/v1"),
            BedrockProvider(
                region="us-east-1",
                access_key_id="AKIDEXAMPLE",
                secret_access_key="stream-secret",
                client=client,
                base_url=bedrock.base_url,
            ),
        ]
        router = Router(
            providers,
            limits=LimitOptions(attempt_timeout_ms=attempt_timeout_ms, stream_idle_timeout_ms=1_000),
            budgets=BudgetOptions(pricing=PRICING if budget is not None else None, limits=budget),
            health=HealthOptions(config=health),
            metrics=metrics,
        )
        yield Fleet(anthropic=anthropic, openai=openai, bedrock=bedrock, router=router)


def policy(primary: ProviderKind, *fallbacks: ProviderKind) -> TenantPolicy:
    """A policy for the streaming alias."""
    return TenantPolicy(
        primary={ALIAS: (primary, MODELS[primary])},
        fallback_chain=tuple(FallbackProvider(kind=k, model_alias_map={ALIAS: MODELS[k]}) for k in fallbacks),
    )


def request(*, tool: bool = False) -> ChatRequest:
    """A streaming request; with ``tool`` the mock answers with a tool call."""
    tools = (ToolDefinition(name="lookup", input_schema_json='{"type": "object"}'),) if tool else ()
    return ChatRequest(messages=(Message.user("stream please"),), max_tokens=64, alias=ALIAS, tools=tools)


def open_stream(
    f: Fleet, tenant: TenantPolicy, deadline: float, *, tool: bool = False, restart_on_interrupt: bool = False
) -> ProviderStream:
    """Start a streaming call."""
    resolved = resolve(ALIAS, tenant)
    assert resolved is not None
    return f.router.call_provider_streaming(
        request(tool=tool), resolved, deadline, tenant, restart_on_interrupt=restart_on_interrupt
    )


async def collect(stream: ProviderStream) -> list[StreamEvent]:
    """Every event of a stream."""
    return [event async for event in stream]


def partial_tool_calls(events: list[StreamEvent]) -> int:
    """How many tool calls reached the caller unclosed or with JSON that does not parse."""
    arguments: dict[str, str] = {}
    bad = 0
    current = ""
    for event in events:
        if isinstance(event, ToolUseStart):
            arguments[event.id] = ""
            current = event.id
        elif isinstance(event, ToolUseDelta):
            arguments[event.id] = arguments.get(event.id, "") + event.partial_json
        elif isinstance(event, BlockStop) and current in arguments:
            try:
                json.loads(arguments.pop(current) or "{}")
            except ValueError:
                bad += 1
    return bad + len(arguments)


def deadline(seconds: float) -> float:
    """An absolute deadline ``seconds`` from now on the running loop's clock."""
    return asyncio.get_running_loop().time() + seconds
