"""Shared rig for the router-level rows: mock-server providers, policies, and a socket-level egress counter.

``count_egress`` counts every outbound connection attempt the process makes while it is active,
DNS lookups included, at the lowest layers Python code can reach:

* ``socket.socket.connect`` / ``connect_ex`` (every blocking or non-blocking TCP/UDP connect);
* ``socket.getaddrinfo`` (the stdlib resolver: ``socket.create_connection``, ``urllib``, ...);
* the running event loop's ``create_connection``, ``sock_connect`` and ``getaddrinfo`` (what
  asyncio, anyio and therefore httpx/httpcore use), patched on the loop's class.

The originals are always called, so counting never changes behaviour; the control runs of
FALSIFY-MPA-001 show the counter does see the router's real connections.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import socket
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from routeproof.core.pricing import PricingTable, load_pricing
from routeproof.core.routing import resolve
from routeproof.core.types import (
    ChatRequest,
    FallbackProvider,
    Message,
    PrivacyTier,
    ProviderKind,
    ResolvedModel,
    TenantPolicy,
)
from routeproof.mock import MockProviderServer, Shape
from routeproof.providers.anthropic import AnthropicProvider
from routeproof.providers.bedrock import BedrockProvider
from routeproof.providers.local import LocalProvider
from routeproof.providers.openai import OpenAIProvider
from routeproof.providers.protocol import Provider

__all__ = [
    "ALIAS",
    "PRICING",
    "EgressLog",
    "count_egress",
    "mock_providers",
    "percentile",
    "policy",
    "request",
    "resolved_for",
    "wall",
]

ALIAS = "chat.smart"
PRICING: PricingTable = load_pricing(
    (Path(__file__).resolve().parents[1] / "config" / "pricing.toml").read_text(encoding="utf-8")
)
MODELS: dict[ProviderKind, str] = {
    ProviderKind.ANTHROPIC: "claude-sonnet-4-20250514",
    ProviderKind.OPENAI: "gpt-4o-mini",
    ProviderKind.BEDROCK: "anthropic.claude-sonnet-4-20250514-v1:0",
    ProviderKind.LOCAL: "llama-3.2-3b.apr",
}


@dataclass
class EgressLog:
    """What the patched entry points saw: one (entry point, target) pair per attempt."""

    attempts: list[tuple[str, str]] = field(default_factory=list)

    @property
    def count(self) -> int:
        """Connection attempts and DNS lookups seen."""
        return len(self.attempts)

    def summary(self) -> str:
        """Per entry point counts, e.g. ``loop.create_connection=3, loop.sock_connect=3``."""
        counts: dict[str, int] = {}
        for name, _ in self.attempts:
            counts[name] = counts.get(name, 0) + 1
        return ", ".join(f"{k}={v}" for k, v in sorted(counts.items())) or "none"


def _target(args: Sequence[object]) -> str:
    return " ".join(repr(a) for a in args[:2])


@contextlib.contextmanager
def count_egress(loop: asyncio.AbstractEventLoop | None = None) -> Iterator[EgressLog]:
    """Count every connect and DNS lookup while active (sync socket API and ``loop``'s class)."""
    log = EgressLog()
    patched: list[tuple[object, str, object]] = []

    def patch_sync(owner: object, name: str, label: str) -> None:
        original: Callable[..., Any] = getattr(owner, name)

        @functools.wraps(original)
        def counted(*args: object, **kwargs: object) -> Any:
            log.attempts.append((label, _target(args[1:] if label.startswith("socket.socket") else args)))
            return original(*args, **kwargs)

        patched.append((owner, name, original))
        setattr(owner, name, counted)

    def patch_async(owner: object, name: str, label: str) -> None:
        original: Callable[..., Awaitable[Any]] = getattr(owner, name)

        @functools.wraps(original)
        async def counted(self: object, *args: object, **kwargs: object) -> Any:
            log.attempts.append((label, _target(args)))
            return await original(self, *args, **kwargs)

        patched.append((owner, name, original))
        setattr(owner, name, counted)

    patch_sync(socket.socket, "connect", "socket.socket.connect")
    patch_sync(socket.socket, "connect_ex", "socket.socket.connect_ex")
    patch_sync(socket, "getaddrinfo", "socket.getaddrinfo")
    if loop is not None:
        cls = type(loop)
        for name in ("create_connection", "sock_connect", "getaddrinfo"):
            patch_async(cls, name, f"loop.{name}")
    try:
        yield log
    finally:
        for owner, name, original in reversed(patched):
            setattr(owner, name, original)


def mock_providers(
    client: httpx.AsyncClient, servers: dict[ProviderKind, MockProviderServer], local: LocalProvider | None = None
) -> list[Provider]:
    """Provider clients pointed at the mock servers (by kind), plus the in-process Local model."""
    out: list[Provider] = []
    for kind, server in servers.items():
        if kind is ProviderKind.ANTHROPIC:
            out.append(AnthropicProvider(api_key="sk-ant-falsify", client=client, base_url=server.base_url))
        elif kind is ProviderKind.BEDROCK:
            out.append(
                BedrockProvider(
                    region="us-east-1",
                    access_key_id="AKIDEXAMPLE",
                    secret_access_key="falsify-secret",
                    client=client,
                    base_url=server.base_url,
                )
            )
        else:
            out.append(OpenAIProvider(kind=kind, api_key="sk-falsify", client=client, base_url=server.base_url + "/v1"))
    out.append(local if local is not None else LocalProvider())
    return out


SHAPES: dict[ProviderKind, Shape] = {
    ProviderKind.ANTHROPIC: Shape.ANTHROPIC,
    ProviderKind.OPENAI: Shape.OPENAI,
    ProviderKind.BEDROCK: Shape.BEDROCK,
}


def policy(
    primary: ProviderKind, fallbacks: Sequence[ProviderKind] = (), tier: PrivacyTier = PrivacyTier.STANDARD
) -> TenantPolicy:
    """A policy whose alias points at ``primary`` and falls back through ``fallbacks``."""
    return TenantPolicy(
        tenant_id="falsify",
        privacy_tier=tier,
        primary={ALIAS: (primary, MODELS[primary])},
        fallback_chain=tuple(FallbackProvider(kind=k, model_alias_map={ALIAS: MODELS[k]}) for k in fallbacks),
    )


def resolved_for(tenant: TenantPolicy, alias: str = ALIAS) -> ResolvedModel:
    """The alias resolved the only way production code may: through ``resolve``."""
    result = resolve(alias, tenant)
    assert result is not None
    return result


def request(text: str = "What is 2 + 2?", max_tokens: int = 64) -> ChatRequest:
    """A small user request for the rig's alias."""
    return ChatRequest(messages=(Message.user(text),), max_tokens=max_tokens, alias=ALIAS)


def percentile(values: Sequence[float], q: float) -> float:
    """The nearest-rank ``q``-quantile (0 < q <= 1) of ``values``; inf when it lands on an inf."""
    ordered = sorted(values)
    rank = max(1, -(-int(q * 10_000) * len(ordered) // 10_000))
    return ordered[rank - 1]


@contextlib.contextmanager
def wall(label: str) -> Iterator[None]:
    """Print the wall time a row took."""
    start = time.perf_counter()
    try:
        yield
    finally:
        print(f"{label}: wall time {time.perf_counter() - start:.2f} s")
