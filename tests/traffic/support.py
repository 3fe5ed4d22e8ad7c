"""Shared helpers for the traffic tests: scripted deployments of one alias and a router over them."""

from __future__ import annotations

import random
from collections.abc import Sequence

from routeproof.core.routing import resolve
from routeproof.core.types import ChatRequest, FallbackProvider, Message, ProviderName, ResolvedModel, TenantPolicy
from routeproof.router import Router
from routeproof.testing import ScriptedProvider
from routeproof.traffic import TrafficConfig, TrafficStore

ALIAS = "chat"
MODEL = "m"


def policy(names: Sequence[str]) -> TenantPolicy:
    """``names[0]`` first, then the others in order, all serving ``ALIAS``."""
    first, *rest = names
    return TenantPolicy(
        primary={ALIAS: (ProviderName(first), MODEL)},
        fallback_chain=tuple(FallbackProvider(kind=ProviderName(n), model_alias_map={ALIAS: MODEL}) for n in rest),
    )


def resolved(tenant: TenantPolicy) -> ResolvedModel:
    """The alias resolved through ``resolve``."""
    return resolve(ALIAS, tenant)


def request(max_tokens: int = 16) -> ChatRequest:
    """A small request for ``ALIAS``."""
    return ChatRequest(messages=(Message.user("hi"),), max_tokens=max_tokens, alias=ALIAS)


def router(
    providers: Sequence[ScriptedProvider],
    traffic: TrafficConfig,
    *,
    seed: int = 1,
    store: TrafficStore | None = None,
    wall_clock: object = None,
) -> Router:
    """A router over ``providers`` with ``traffic`` and a seeded rng."""
    kwargs: dict[str, object] = {}
    if wall_clock is not None:
        kwargs["wall_clock"] = wall_clock
    return Router(providers, traffic=traffic, traffic_store=store, rng=random.Random(seed), **kwargs)  # type: ignore[arg-type]  # kwargs: the optional wall clock
