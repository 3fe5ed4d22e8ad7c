"""The async shell's front door: ``Router`` validates its configuration, builds the ports once,
and hands each call to the one driver loop.

It decides nothing the kernel can decide. ``call_provider`` and ``call_provider_streaming`` run
:mod:`routeproof.driver` (ask the kernel what to do next, do it, report back) over the services in
:class:`routeproof.ports.Ports`: providers, ledger, health, metrics, admission, randomness.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from types import MappingProxyType
from typing import Unpack

import httpx

from routeproof.admission import Admission
from routeproof.clock import s_of_ms
from routeproof.core import kernel
from routeproof.core.health import HealthConfig, HealthState
from routeproof.core.kernel import BackoffPolicy
from routeproof.core.latency import LatencyConfig, LatencyState, new_latency
from routeproof.core.ledger import (
    BudgetLimits,
    LedgerState,
    limits_ok,
    with_limits,
)
from routeproof.core.ledger import well_formed as ledger_well_formed
from routeproof.core.tiers import endpoint_tier
from routeproof.core.types import (
    ChatRequest,
    PrivacyTier,
    ProviderId,
    ProviderResponse,
    ResolvedModel,
    TenantPolicy,
)
from routeproof.driver import complete
from routeproof.errors import ConfigError
from routeproof.health_store import HealthStore, MemoryHealthStore
from routeproof.ledger_store import LedgerStore, MemoryLedgerStore
from routeproof.observe import RouterMetrics, log_budget_override
from routeproof.ports import HealthBook, Instrumentation, Ledger, Planning, Ports, StreamTimeouts
from routeproof.providers.protocol import Provider
from routeproof.registry import keyed_by_instance, kind_of, names, provider_timeouts, registry
from routeproof.router_options import BudgetOptions, HealthOptions, LegacyRouterOptions, LimitOptions, from_legacy
from routeproof.streaming import ProviderStream
from routeproof.traffic_store.port import Traffic, TrafficConfig
from routeproof.traffic_store.protocol import TrafficStore

__all__ = ["Router"]


class Router:
    """Holds the provider clients, the budget ledger, provider health and the metric instruments."""

    def __init__(
        self,
        providers: Iterable[Provider] | Mapping[str, Provider],
        *,
        limits: LimitOptions | None = None,
        budgets: BudgetOptions | None = None,
        health: HealthOptions | HealthConfig | None = None,
        backoff: BackoffPolicy | None = None,
        private_allow_list: frozenset[str] = frozenset(),
        metrics: RouterMetrics | None = None,
        rng: random.Random | None = None,
        wall_clock: Callable[[], float] = time.time,
        client: httpx.AsyncClient | None = None,
        declared_tiers: Mapping[str, PrivacyTier] | None = None,
        traffic: TrafficConfig | None = None,
        traffic_store: TrafficStore | None = None,
        **legacy: Unpack[LegacyRouterOptions],
    ) -> None:
        """``limits``, ``budgets`` and ``health`` group the options (routeproof.router_options); the old
        flat keywords (``**legacy``, ``health=HealthConfig(...)``) still work, with a DeprecationWarning."""
        for value, kind, name in ((limits, LimitOptions, "limits"), (budgets, BudgetOptions, "budgets")):
            if value is not None and not isinstance(value, kind):
                raise ConfigError(f"{name} must be a {kind.__name__} or None, got {value!r}")
        if health is not None and not isinstance(health, HealthOptions | HealthConfig):
            raise ConfigError(f"health must be a HealthOptions or None, got {health!r}")
        limit, money, health_options = from_legacy(legacy, limits, budgets, health)
        pricing, budget, ledger_store = money.pricing, money.limits, money.ledger_store
        health_store, latency = health_options.health_store, health_options.latency
        max_attempts_per_provider = limit.max_attempts_per_provider
        self._attempt_timeout_ms = limit.attempt_timeout_ms
        self._max_attempts_per_provider = max_attempts_per_provider
        idle_ms = limit.stream_idle_timeout_ms
        self._stream_idle_timeout_s = None if idle_ms is None else s_of_ms(idle_ms)
        self._cooling = health_options.cooling
        # The provider registry, keyed by instance (core/identity.py): a provider named after its
        # kind is keyed by the kind member, any other name by a ProviderName bound to its kind.
        self._providers: dict[ProviderId, Provider] = registry(providers)
        self._ids: dict[str, ProviderId] = names(self._providers)
        self._provider_timeouts_ms = provider_timeouts(limit.provider_timeouts_ms, self._ids)
        declared = keyed_by_instance(declared_tiers or {}, self._ids, "declared_tiers")
        for ident, tier in declared.items():
            if not isinstance(tier, PrivacyTier):
                raise ConfigError(f"declared tier of {ident.value!r} must be a PrivacyTier, got {tier!r}")
        # A declared tier may lower a provider's privacy (treat a localhost model as Standard), never
        # raise it above what its endpoint proves: the effective tier is the less private of the two.
        self._endpoint_tiers = {
            ident: max(
                endpoint_tier(kind_of(ident), p.base_url, private_allow_list),
                declared.get(ident, PrivacyTier.SOVEREIGN),
            )
            for ident, p in self._providers.items()
        }
        self._pricing = pricing
        # Plain checks, not contracts: ``python -O`` strips icontract, and these must still hold.
        if budget is not None and (not isinstance(budget, BudgetLimits) or not limits_ok(budget)):
            raise ConfigError(f"budget limits must be None or non-negative int pico-USD, got {budget!r}")
        if backoff is not None and not _backoff_valid(backoff, max_attempts_per_provider):
            raise ConfigError(
                f"backoff {backoff!r} is unusable: base_ms in (0, cap_ms] for full jitter, delays >= 0, "
                f"jitter_percent in 0..100, one delay per retry"
            )
        if budget is not None and pricing is None:
            raise ConfigError("a budget needs a pricing table: without prices no call can be bounded")
        if budget is not None and ledger_store is not None:
            raise ConfigError("give the budget limits to the ledger store, not to the Router as well")
        if ledger_store is not None and pricing is None:
            raise ConfigError("a ledger store needs a pricing table: without prices no call can be bounded")
        # The one port to the budget ledger: memory (today's behaviour) unless a store is given.
        self._ledger_store: LedgerStore | None = (
            ledger_store if ledger_store is not None else MemoryLedgerStore(budget) if budget is not None else None
        )
        if health_options.config is not None and health_store is not None:
            raise ConfigError("give the health config to the health store, not to the Router as well")
        # The one store of provider health: this process only (memory) unless a shared one is given.
        self._health_store: HealthStore = health_store or MemoryHealthStore(health_options.config or HealthConfig())
        health_book = HealthBook(self._health_store, self._new_latency(latency))
        self._health_book = health_book
        self._backoff = backoff or BackoffPolicy()
        self._rng = rng or random.Random()
        self._wall_clock = wall_clock
        self._client = client
        metrics = metrics or RouterMetrics()
        self._admission = Admission(
            max_in_flight=limit.max_in_flight,
            max_in_flight_per_provider=limit.max_in_flight_per_provider,
            metrics=metrics,
        )
        # The one frozen set of services every call uses (ports.py): built once, here.
        self._ports = Ports(
            providers=MappingProxyType(self._providers),
            ledger=Ledger(
                store=self._ledger_store, pricing=self._pricing, wall_clock=wall_clock, ids=MappingProxyType(self._ids)
            ),
            health=health_book,
            metrics=metrics,
            admission=self._admission,
            draw=self._rng.random,
            planning=Planning(
                ids=MappingProxyType(self._ids),
                endpoint_tiers=MappingProxyType(self._endpoint_tiers),
                cooling=self._cooling,
                backoff=self._backoff,
                attempt_timeout_ms=self._attempt_timeout_ms,
                provider_timeouts_ms=MappingProxyType(self._provider_timeouts_ms),
                max_attempts_per_provider=self._max_attempts_per_provider,
            ),
            timeouts=StreamTimeouts(idle_timeout_s=self._stream_idle_timeout_s),
            traffic=self._new_traffic(traffic, traffic_store),
        )

    def _new_traffic(self, traffic: TrafficConfig | None, store: TrafficStore | None) -> Traffic:
        """The traffic port; every deployment the traffic config names must be a configured provider."""
        if traffic is not None and not isinstance(traffic, TrafficConfig):
            raise ConfigError(f"traffic must be a TrafficConfig, got {traffic!r}")
        named = (
            set() if traffic is None else {*traffic.members, *traffic.limits, *traffic.affinity_ttl_ms_by_deployment}
        )
        unknown = sorted(named - set(self._ids))
        if unknown:
            raise ConfigError(
                f"traffic names providers that are not configured: {unknown!r} (known: {sorted(self._ids)})"
            )
        if traffic is not None:  # keyed by instance identity (a provider alone of its kind is its kind)
            traffic = replace(
                traffic,
                members={self._ids[k].value: v for k, v in traffic.members.items()},
                limits={self._ids[k].value: v for k, v in traffic.limits.items()},
                affinity_ttl_ms_by_deployment={
                    self._ids[k].value: v for k, v in traffic.affinity_ttl_ms_by_deployment.items()
                },
            )
        return Traffic(traffic, store)

    @staticmethod
    def _new_latency(latency: LatencyConfig | None) -> LatencyState:
        if latency is not None and not isinstance(latency, LatencyConfig):
            raise ConfigError(f"latency must be a LatencyConfig, got {latency!r}")
        return new_latency(latency or LatencyConfig())

    @property
    def _metrics(self) -> Instrumentation:
        """The metrics hook the calls report to (replaceable: ``router._metrics = RouterMetrics(...)``)."""
        return self._ports.metrics

    @_metrics.setter
    def _metrics(self, metrics: Instrumentation) -> None:
        self._ports = replace(self._ports, metrics=metrics)

    # --- read-only views ---------------------------------------------------------------------

    @property
    def ledger(self) -> LedgerState | None:
        """The budget ledger as it stands (a frozen value) when it lives in this process's memory."""
        store = self._ledger_store
        return store.state if isinstance(store, MemoryLedgerStore) else None

    @property
    def ledger_store(self) -> LedgerStore | None:
        """The store holding the budget ledger (None when there is no budget)."""
        return self._ledger_store

    def override_budget(self, limits: BudgetLimits, *, reason: str) -> None:
        """The explicit user override a hard stop needs (seed 003: monthly "require explicit user
        override"): replace the budget limits, logged at WARNING with the old and new limits and
        ``reason``. Lowering a limit below what is already spent plus reserved is refused. A durable
        store's limits come from the configuration every replica shares: change it there instead."""
        store = self._ledger_store
        if store is None:
            raise ConfigError("this router has no budget to override (construct it with budget=...)")
        if not isinstance(store, MemoryLedgerStore):
            raise ConfigError(
                f"the {store.description} ledger is shared: its limits come from the configuration all replicas "
                "load ([driver.budget] in agent.toml); change them there, not in one process"
            )
        if not isinstance(reason, str) or not reason.strip():
            raise ConfigError(f"a budget override needs a non-empty reason, got {reason!r}")
        old = store.state.limits
        if not limits_ok(limits) or not ledger_well_formed(replace(store.state, limits=limits)):
            raise ConfigError(f"budget override {limits!r} is below what is already spent and reserved")
        store.replace_state(with_limits(store.state, limits))
        log_budget_override(old, limits, reason)

    @property
    def latency(self) -> LatencyState:
        """Recent per-provider latencies (the latency-SLA trigger's input), a frozen value."""
        return self._health_book.latency()

    @property
    def health(self) -> HealthState:
        """Provider health as it stands (a frozen value)."""
        return self._health_book.snapshot()

    @property
    def traffic_store(self) -> TrafficStore:
        """The store rate-limit windows and retry buckets live in (the gateway's tenant limits too)."""
        return self._ports.traffic.store

    @property
    def health_store(self) -> HealthStore:
        """The store provider health lives in (memory unless a shared one was given)."""
        return self._health_store

    async def aclose(self) -> None:
        """Close the providers, the ledger store and the pooled HTTP client."""
        for provider in self._providers.values():
            await provider.aclose()
        if self._ledger_store is not None:
            await self._ledger_store.aclose()
        await self._health_store.aclose()
        await self._ports.traffic.store.aclose()
        if self._client is not None:
            await self._client.aclose()

    async def __aenter__(self) -> Router:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # --- the call ----------------------------------------------------------------------------

    async def call_provider(
        self,
        req: ChatRequest,
        resolved: ResolvedModel,
        deadline: float,
        policy: TenantPolicy,
        *,
        session_id: str = "default",
    ) -> ProviderResponse:
        """Call the resolved provider with retry and failover, within ``deadline`` (loop time, s)."""
        return await complete(  # driver.py
            self._ports, req, resolved, deadline=deadline, policy=policy, session_id=session_id
        )

    def call_provider_streaming(
        self,
        req: ChatRequest,
        resolved: ResolvedModel,
        deadline: float,
        policy: TenantPolicy,
        *,
        session_id: str = "default",
        restart_on_interrupt: bool = False,
    ) -> ProviderStream:
        """Stream the answer as provider-neutral events: retry and failover before the first token,
        committed after it; ends with exactly one MessageStop or one StreamError (see streaming.py)."""
        return ProviderStream(
            self._ports,
            req,
            resolved,
            deadline,
            policy,
            session_id=session_id,
            restart_on_interrupt=restart_on_interrupt,
        )


def _backoff_valid(backoff: BackoffPolicy, max_attempts_per_provider: int) -> bool:
    """The kernel's own plan check applied to ``backoff`` (plain code: kept under ``python -O``)."""
    if not isinstance(backoff, BackoffPolicy):
        return False
    plan = kernel.CallPlan(
        chain=(),
        started_at_ms=0,
        deadline_at_ms=0,
        backoff=backoff,
        max_attempts_per_provider=max_attempts_per_provider,
    )
    return kernel.plan_valid(plan)
