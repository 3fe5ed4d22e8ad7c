"""H0-EGRESS: "privacy tier enforcement has at least one bypass path". 10,000 fuzzed Sovereign
requests through the full router, with every provider kind configured against live loopback mock
servers (Ollama and vLLM on loopback, so their endpoints really are Private), must make zero
connection attempts, DNS lookups included.

The fuzz is a seeded generator, not Hypothesis (for speed): random routers (which kinds point
where, loopback IP or ``localhost`` + allow-list, pricing and a budget or not, health settings),
random policies (aliases over every ProviderKind, fallback chains of 0-6 random kinds with partial
alias maps, context-window failover on or off), random requests (1-5 messages of text, tool-use
and tool-result blocks, tools, system prompt, stop sequences, max_tokens), random Local failures,
random deadlines, and both request paths (``call_provider`` and ``call_provider_streaming``).
Runs on virtual time (looptime) so the retry sleeps cost nothing.
"""

from __future__ import annotations

import asyncio
import json
import random

import httpx
import pytest

from falsification.report import record_verdict
from falsification.rig import PRICING, count_egress, wall
from falsification.seeds import base, seed_range
from routeproof import BudgetOptions, HealthOptions
from routeproof.core.health import HealthConfig
from routeproof.core.ledger import BudgetLimits, parse_usd
from routeproof.core.routing import resolve
from routeproof.core.types import (
    AttemptFailure,
    AttemptFailureKind,
    ChatRequest,
    ContentBlock,
    FallbackProvider,
    Message,
    PrivacyTier,
    ProviderKind,
    Role,
    TenantPolicy,
    TextBlock,
    ToolDefinition,
    ToolResultBlock,
    ToolUseBlock,
)
from routeproof.errors import RouterError, UnknownAlias
from routeproof.mock import MockProviderServer, Shape
from routeproof.providers.anthropic import AnthropicProvider
from routeproof.providers.bedrock import BedrockProvider
from routeproof.providers.local import LocalProvider
from routeproof.providers.openai import OpenAIProvider
from routeproof.providers.protocol import Provider
from routeproof.router import Router

pytestmark = [pytest.mark.falsify, pytest.mark.asyncio, pytest.mark.looptime(end=10_000_000)]

N_REQUESTS = 10_000
REQUESTS_PER_ROUTER = 500
# one pre-registered seed per random router and its 500 requests: ROUTEPROOF_FALSIFY_SEED, else 1000
SEEDS = range(base(1_000), base(1_000) + N_REQUESTS // REQUESTS_PER_ROUTER)
BATCH = 50
KINDS = tuple(ProviderKind)
WORDS = ("secret", "patient", "record", "ledger", "über", "提供", "🙂", "", " ", "\n", '"quoted"', "{json}", "x" * 40)
FAILURES = (
    AttemptFailure(kind=AttemptFailureKind.HTTP_STATUS, http_status=503, message="busy"),
    AttemptFailure(kind=AttemptFailureKind.HTTP_STATUS, http_status=429, message="slow down"),
    AttemptFailure(kind=AttemptFailureKind.CONTEXT_OVERFLOW, http_status=400, message="context length exceeded"),
    AttemptFailure(kind=AttemptFailureKind.CONN_RESET, message="reset"),
    AttemptFailure(kind=AttemptFailureKind.ATTEMPT_TIMEOUT, message="slow"),
)


def _text(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randrange(1, 12))) or "x"


def _block(rng: random.Random, role: Role) -> ContentBlock:
    roll = rng.random()
    if roll < 0.6:
        return TextBlock(text=_text(rng))
    if role is Role.ASSISTANT:
        path = rng.choice(("/etc", "src", "提供"))
        name = rng.choice(("read", "write", "search"))
        return ToolUseBlock(id=f"toolu_{rng.randrange(10**6)}", name=name, input_json=json.dumps({"path": path}))
    return ToolResultBlock(tool_use_id=f"toolu_{rng.randrange(10**6)}", content=_text(rng), is_error=rng.random() < 0.2)


def _request(rng: random.Random, alias: str) -> ChatRequest:
    messages = []
    for i in range(rng.randrange(1, 6)):
        role = Role.USER if i % 2 == 0 else Role.ASSISTANT
        messages.append(Message(role=role, content=tuple(_block(rng, role) for _ in range(rng.randrange(1, 4)))))
    tools = tuple(
        ToolDefinition(name=rng.choice(("read", "write", "search")), description=_text(rng))
        for _ in range(rng.randrange(0, 3))
    )
    return ChatRequest(
        messages=tuple(messages),
        max_tokens=rng.randrange(1, 513),
        system=_text(rng) if rng.random() < 0.5 else None,
        tools=tools,
        temperature=rng.choice((None, 0.0, 0.7)),
        stop_sequences=tuple(_text(rng) for _ in range(rng.randrange(0, 2))),
        alias=alias,
    )


def _policy(rng: random.Random) -> TenantPolicy:
    aliases = [f"alias-{n}" for n in range(rng.randrange(1, 4))]

    def kind() -> ProviderKind:  # Local 40 % of the time, so that many calls get past the tier filter
        return ProviderKind.LOCAL if rng.random() < 0.4 else rng.choice(KINDS)

    primary = {a: (kind(), f"model-{rng.randrange(5)}") for a in aliases}
    fallbacks = tuple(
        FallbackProvider(
            kind=kind(),
            model_alias_map={a: f"fb-model-{rng.randrange(5)}" for a in aliases if rng.random() < 0.7},
        )
        for _ in range(rng.randrange(0, 7))
    )
    return TenantPolicy(
        tenant_id=f"tenant-{rng.randrange(100)}",
        privacy_tier=PrivacyTier.SOVEREIGN,
        primary=primary,
        fallback_chain=fallbacks,
        context_window_failover=rng.random() < 0.5,
    )


def _router(
    rng: random.Random, client: httpx.AsyncClient, servers: dict[Shape, MockProviderServer], local: LocalProvider
) -> Router:
    def url(shape: Shape) -> str:
        server = servers[shape]
        return f"http://localhost:{server.port}" if rng.random() < 0.5 else server.base_url

    providers: list[Provider] = [local]
    if rng.random() < 0.9:
        providers.append(AnthropicProvider(api_key="sk-ant-fuzz", client=client, base_url=url(Shape.ANTHROPIC)))
    if rng.random() < 0.9:
        providers.append(
            BedrockProvider(
                region="us-east-1",
                access_key_id="AKIDFUZZ",
                secret_access_key="fuzz",
                client=client,
                base_url=url(Shape.BEDROCK),
            )
        )
    for kind in (ProviderKind.OPENAI, ProviderKind.OPENROUTER, ProviderKind.OLLAMA, ProviderKind.VLLM):
        if rng.random() < 0.9:
            providers.append(
                OpenAIProvider(kind=kind, api_key="sk-fuzz", client=client, base_url=url(Shape.OPENAI) + "/v1")
            )
    with_budget = rng.random() < 0.5
    return Router(
        providers,
        private_allow_list=frozenset({"localhost", "ollama.internal"}) if rng.random() < 0.5 else frozenset(),
        rng=random.Random(rng.randrange(2**32)),
        budgets=BudgetOptions(
            pricing=PRICING if with_budget else None,
            limits=BudgetLimits(session_limit_pico_usd=parse_usd("0.01")) if with_budget else None,
        ),
        health=HealthOptions(
            config=HealthConfig(failure_threshold=rng.randrange(1, 4), cooldown_ms=rng.choice((0, 1_000, 30_000)))
        ),
    )


async def test_h0_egress_10k_fuzzed_sovereign_requests() -> None:
    """H0-EGRESS: 10,000 fuzzed Sovereign requests (both request paths, 20 random routers, one seed each)
    make zero connect/DNS attempts under every seed and the mock servers accept zero connections."""
    with wall("H0-EGRESS"):
        await _run()


async def _run() -> None:
    loop = asyncio.get_running_loop()
    servers = {shape: MockProviderServer(shape) for shape in Shape}
    for server in servers.values():
        await server.start()
    outcomes: dict[str, int] = {}
    remote_answers = 0
    leaking_seeds: list[int] = []  # seeds under which a connect/DNS attempt or a non-local attempt was seen

    def note(key: str) -> None:
        outcomes[key] = outcomes.get(key, 0) + 1

    async def one(router: Router, local: LocalProvider, rng: random.Random, i: int) -> None:
        nonlocal remote_answers
        tenant = _policy(rng)
        alias = rng.choice(list(tenant.primary)) if rng.random() < 0.95 else "unknown-alias"
        try:
            resolved = resolve(alias, tenant)
        except UnknownAlias:
            note("unresolved alias")
            return
        if rng.random() < 0.2:
            local.script_failures(rng.choices(FAILURES, k=rng.randrange(1, 4)))
        req = _request(rng, alias)
        deadline = loop.time() + rng.choice((-1.0, 0.5, 30.0, 30.0, 60.0))
        session = f"session-{i % 7}"
        try:
            if rng.random() < 0.1:
                async for _ in router.call_provider_streaming(req, resolved, deadline, tenant, session_id=session):
                    pass
                note("stream ended")
            else:
                resp = await router.call_provider(req, resolved, deadline, tenant, session_id=session)
                note(f"answered by {resp.provider.value if resp.provider else '?'}")
                if resp.provider is not ProviderKind.LOCAL or any(
                    a.provider is not ProviderKind.LOCAL for a in resp.attempts
                ):
                    remote_answers += 1
        except RouterError as exc:
            note(type(exc).__name__)
            if any(a.provider is not ProviderKind.LOCAL for a in exc.attempts):
                remote_answers += 1

    try:
        async with httpx.AsyncClient() as client:
            with count_egress(loop) as egress:
                for seed, start in zip(SEEDS, range(0, N_REQUESTS, REQUESTS_PER_ROUTER), strict=True):
                    rng = random.Random(seed)
                    before = (egress.count, remote_answers)
                    local = LocalProvider()
                    router = _router(rng, client, servers, local)
                    for batch in range(start, start + REQUESTS_PER_ROUTER, BATCH):
                        await asyncio.gather(*(one(router, local, rng, i) for i in range(batch, batch + BATCH)))
                    await router.aclose()
                    if (egress.count, remote_answers) != before:
                        leaking_seeds.append(seed)
            accepted = {shape.value: s.connections_accepted for shape, s in servers.items()}
            journaled = sum(len(s.journal) for s in servers.values())
            # control: the same counter on this (virtual-time) loop sees a Standard-tier call's connection
            with count_egress(loop) as control:
                anthropic = AnthropicProvider(
                    api_key="sk-ant-fuzz", client=client, base_url=servers[Shape.ANTHROPIC].base_url
                )
                standard = TenantPolicy(primary={"a": (ProviderKind.ANTHROPIC, "claude-sonnet-4-20250514")})
                resolved = resolve("a", standard)
                assert resolved is not None
                async with Router([anthropic]) as router:
                    await router.call_provider(
                        _request(random.Random(SEEDS[0]), "a"), resolved, loop.time() + 30, standard
                    )
    finally:
        for server in servers.values():
            await server.stop()
    survived = (
        egress.count == 0
        and sum(accepted.values()) == 0
        and journaled == 0
        and remote_answers == 0
        and not leaking_seeds
    )
    record_verdict(
        "H0-EGRESS",
        evidence=(
            f"{N_REQUESTS} fuzzed Sovereign requests, {N_REQUESTS // REQUESTS_PER_ROUTER} random routers with every "
            f"kind on live loopback mocks: {egress.count} connect/DNS attempts ({egress.summary()}), "
            f"connections accepted {accepted}, {remote_answers} non-local attempts; "
            f"seeds with egress {leaking_seeds or 'none'}; "
            f"outcomes {dict(sorted(outcomes.items()))}; control Standard call: {control.count} attempts seen"
        ),
        survived=survived,
        procedure="all-seeds statement: every seed draws one random router and its 500 fuzzed requests; one "
        "connect/DNS attempt, accepted connection or non-local attempt under any seed falsifies",
        seeds=f"{seed_range(SEEDS)}, {REQUESTS_PER_ROUTER} requests each",
    )
    assert control.count > 0, "the counter must see the control call's connection"
    assert survived, egress.attempts[:5]
