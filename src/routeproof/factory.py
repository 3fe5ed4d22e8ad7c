"""Build a ready Router (and a tenant policy) from a validated ``agent.toml`` configuration."""

from __future__ import annotations

import os
from collections.abc import Mapping

import httpx

from routeproof.config import BackoffPolicy as ConfiguredBackoff
from routeproof.config import RoutingConfig, build_providers, load_config
from routeproof.core.health import HealthConfig
from routeproof.core.kernel import BackoffPolicy
from routeproof.core.ledger import BudgetLimits
from routeproof.core.pricing import load_pricing, parse_usd
from routeproof.core.types import FallbackProvider, PrivacyTier, TenantPolicy
from routeproof.errors import ConfigError
from routeproof.ledger_store import LedgerConfig, load_ledger_config, open_store
from routeproof.router import Router

__all__ = ["load_router", "router_from_config", "tenant_policy"]


def router_from_config(
    config: RoutingConfig, *, client: httpx.AsyncClient | None = None, ledger: LedgerConfig | None = None
) -> Router:
    """A Router over the configured providers, sharing one pooled client that the Router closes;
    its budget ledger lives where ``ledger`` (the ``[ledger]`` table) says, in memory by default."""
    pooled = client or httpx.AsyncClient()
    providers = build_providers(config, pooled)
    pricing = None
    if config.pricing_path is not None:
        try:
            pricing = load_pricing(config.pricing_path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(f"pricing file {str(config.pricing_path)!r} cannot be read: {exc}") from exc
    daily = tuple(
        (p.kind, parse_usd(p.daily_budget_usd, what=f"{p.name}.daily_budget_usd"))
        for p in config.providers
        if p.daily_budget_usd is not None
    )
    budget = BudgetLimits(provider_daily_pico_usd=daily) if daily and pricing is not None else None
    if daily and pricing is None:
        raise ConfigError("daily_budget_usd is set but no pricing file is configured: costs cannot be bounded")
    backoff = BackoffPolicy(
        full_jitter=config.backoff.policy is ConfiguredBackoff.FULL_JITTER,
        base_ms=config.backoff.base_ms,
        cap_ms=config.backoff.cap_ms,
    )
    store = None
    if ledger is not None and ledger.backend != "memory":
        if pricing is None:
            raise ConfigError(f"ledger.backend = {ledger.backend!r} needs a pricing file: costs cannot be bounded")
        store, budget = open_store(ledger, budget or BudgetLimits()), None
    return Router(
        providers.values(),
        pricing=pricing,
        budget=budget,
        ledger_store=store,
        health=HealthConfig(
            failure_threshold=config.failover.failure_threshold, cooldown_ms=config.failover.cooldown_ms
        ),
        backoff=backoff,
        private_allow_list=config.private_hosts,
        client=pooled,
    )


def load_router(path: str | os.PathLike[str], *, environ: Mapping[str, str] | None = None) -> Router:
    """Load ``agent.toml`` (keys from the environment) and build its Router."""
    return router_from_config(load_config(path, environ=environ), ledger=load_ledger_config(path, environ=environ)[0])


def tenant_policy(
    config: RoutingConfig, alias: str = "default", *, privacy_tier: PrivacyTier = PrivacyTier.STANDARD
) -> TenantPolicy:
    """A policy routing ``alias`` through the configured providers in priority order (seed 003)."""
    ordered = sorted(config.providers, key=lambda p: p.priority)
    if not ordered:
        raise ConfigError("no providers configured")
    first, *rest = ordered
    return TenantPolicy(
        privacy_tier=privacy_tier,
        primary={alias: (first.kind, first.model)},
        fallback_chain=tuple(FallbackProvider(kind=p.kind, model_alias_map={alias: p.model}) for p in rest),
    )
