"""Build a ready Router (and a tenant policy) from a validated ``agent.toml`` configuration."""

from __future__ import annotations

import os
from collections.abc import Mapping
from decimal import Decimal

import httpx

from routeproof.config import BackoffKind, RoutingConfig, build_providers, load_config
from routeproof.core.health import HealthConfig
from routeproof.core.identity import instance_ids, parse_provider
from routeproof.core.kernel import BackoffPolicy
from routeproof.core.latency import LatencyConfig
from routeproof.core.ledger import BudgetLimits
from routeproof.core.pricing import PricingTable, load_pricing, parse_usd
from routeproof.core.types import FallbackProvider, PrivacyTier, ProviderKind, TenantPolicy
from routeproof.errors import ConfigError
from routeproof.health_store import HealthStoreConfig, load_health_config, open_health_store
from routeproof.ledger_store import LedgerConfig, load_ledger_config, open_store
from routeproof.router import Router
from routeproof.router_options import BudgetOptions, HealthOptions, LimitOptions
from routeproof.traffic import DeploymentLimits, Member, TrafficConfig
from routeproof.traffic_store.config import TrafficStoreConfig, load_traffic_config, open_traffic_store
from routeproof.transport import make_client

__all__ = ["load_router", "router_from_config", "tenant_policy", "traffic_config"]


def router_from_config(
    config: RoutingConfig,
    *,
    client: httpx.AsyncClient | None = None,
    ledger: LedgerConfig | None = None,
    health_store: HealthStoreConfig | None = None,
    traffic_store: TrafficStoreConfig | None = None,
) -> Router:
    """A Router over the configured providers, sharing one pooled client that the Router closes;
    its budget ledger lives where ``ledger`` says, by default where the file's ``[ledger]`` table
    said (``config.ledger``), in memory when it has none."""
    ledger = ledger if ledger is not None else config.ledger
    admission = config.admission
    pricing = None
    if config.pricing_path is not None:
        try:
            pricing = load_pricing(config.pricing_path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(f"pricing file {str(config.pricing_path)!r} cannot be read: {exc}") from exc
    budget = _budget_limits(config)
    if budget is not None:
        _check_priced(config, pricing)
    pooled = client or make_client(admission.transport)  # transport.py: the measured default
    providers = build_providers(config, pooled)
    backoff = BackoffPolicy(
        full_jitter=config.backoff.policy is BackoffKind.FULL_JITTER,
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
        backoff=backoff,
        private_allow_list=config.private_hosts,
        client=pooled,
        declared_tiers={p.name: p.privacy_tier for p in config.providers},
        traffic=traffic_config(config),
        traffic_store=open_traffic_store(traffic_store or TrafficStoreConfig()),
        limits=LimitOptions(
            provider_timeouts_ms={p.name: p.timeout_ms for p in config.providers},
            max_attempts_per_provider=config.backoff.max_attempts_per_provider,
            max_in_flight=admission.max_in_flight or None,  # 0: no limit
            max_in_flight_per_provider=admission.max_in_flight_per_provider or None,
        ),
        budgets=BudgetOptions(pricing=pricing, limits=budget, ledger_store=store),
        health=HealthOptions(
            health_store=open_health_store(
                health_store or HealthStoreConfig(),
                HealthConfig(
                    failure_threshold=config.failover.failure_threshold, cooldown_ms=config.failover.cooldown_ms
                ),
            ),
            latency=LatencyConfig(sla_ms=config.failover.latency_sla_ms),
        ),
    )


def traffic_config(config: RoutingConfig) -> TrafficConfig:
    """``[driver.traffic]`` and each provider's ``priority``/``weight``/``rpm``/``tpm`` (issue 32):
    providers at one priority form a group, balanced by the strategy."""
    settings = config.traffic
    return TrafficConfig(
        strategy=settings.strategy,
        members={p.name: Member(priority=p.priority, weight_micro=p.weight_micro) for p in config.providers},
        limits={
            p.name: DeploymentLimits(rpm=p.rpm, tpm=p.tpm)
            for p in config.providers
            if p.rpm is not None or p.tpm is not None
        },
        retry_budget=settings.retry_budget,
        wait_for_capacity=settings.wait_for_capacity,
        affinity_ttl_ms=settings.affinity_ttl_ms,
        affinity_ttl_ms_by_deployment={p.name: p.cache_ttl_ms for p in config.providers if p.cache_ttl_ms is not None},
        hedges=settings.hedges,
    )


def load_router(path: str | os.PathLike[str], *, environ: Mapping[str, str] | None = None) -> Router:
    """Load ``agent.toml`` (keys from the environment) and build its Router."""
    return router_from_config(
        load_config(path, environ=environ),
        ledger=load_ledger_config(path, environ=environ)[0],
        health_store=load_health_config(path, environ=environ),
        traffic_store=load_traffic_config(path, environ=environ),
    )


def tenant_policy(
    config: RoutingConfig, alias: str = "default", *, privacy_tier: PrivacyTier = PrivacyTier.STANDARD
) -> TenantPolicy:
    """A policy routing ``alias`` through the configured providers in priority order (seed 003)."""
    ordered = list(config.providers)  # priority order, the environment's default provider first
    if not ordered:
        raise ConfigError("no providers configured")
    first, *rest = ordered
    return TenantPolicy(
        privacy_tier=privacy_tier,
        primary={alias: (parse_provider(first.name), first.model)},
        fallback_chain=tuple(
            FallbackProvider(kind=parse_provider(p.name), model_alias_map={alias: p.model}) for p in rest
        ),
    )


def _usd(value: Decimal | None, what: str) -> int | None:
    return None if value is None else parse_usd(value, what=what)


def _budget_limits(config: RoutingConfig) -> BudgetLimits | None:
    """The configured budget scopes in pico-USD, or None when no budget is set at all."""
    ids = instance_ids((p.name, p.kind) for p in config.providers)  # the ledger scope is per instance
    daily = tuple(
        (ids[p.name], parse_usd(p.daily_budget_usd, what=f"driver.providers.{p.name}.daily_budget_usd"))
        for p in config.providers
        if p.daily_budget_usd is not None
    )
    limits = BudgetLimits(
        turn_warning_pico_usd=_usd(config.budget.turn_warning_usd, "driver.budget.turn_warning_usd"),
        session_limit_pico_usd=_usd(config.budget.session_usd, "driver.budget.session_usd"),
        monthly_limit_pico_usd=_usd(config.budget.monthly_usd, "driver.budget.monthly_usd"),
        provider_daily_pico_usd=daily,
    )
    return None if limits == BudgetLimits() else limits


def _check_priced(config: RoutingConfig, pricing: PricingTable | None) -> None:
    """With any budget set, every model the configuration can route to must have a price (Local,
    in-process, is free when unpriced): checked here, at load, naming every unpriced model."""
    if pricing is None:
        raise ConfigError("a budget is set but no pricing file is configured: costs cannot be bounded")
    unpriced = [
        f"{p.name} ({p.kind.value} {p.model!r})"
        for p in config.providers
        if p.kind is not ProviderKind.LOCAL and pricing.get(p.kind, p.model) is None
    ]
    if unpriced:
        raise ConfigError(
            f"a budget is set but the pricing file {str(config.pricing_path)!r} has no price for: "
            + ", ".join(unpriced)
        )
