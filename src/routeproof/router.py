"""The async shell: ``Router.call_provider`` runs the kernel and performs its actions.

It decides nothing the kernel can decide. It asks :mod:`routeproof.core.kernel` what to do next
(call a provider within a timeout, sleep, succeed, fail), does it with asyncio, and reports what
happened back. Around each attempt it reserves the worst-case cost in the ledger and settles it,
updates provider health, opens an attempt span and reports metrics.
"""

from __future__ import annotations

import asyncio
import math
import random
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace

import httpx

from routeproof.admission import DEFAULT_MAX_IN_FLIGHT_PER_PROVIDER, Admission
from routeproof.call import Call
from routeproof.clock import deadline_ms, loop_ms
from routeproof.core import kernel
from routeproof.core.classify import HealthEffect, health_effect
from routeproof.core.constants import MAX_ATTEMPTS_PER_PROVIDER, PROVIDER_DEFAULT_TIMEOUT_MS
from routeproof.core.health import HealthConfig, HealthState, new_health, record_failure, record_success
from routeproof.core.kernel import (
    Action,
    BackoffPolicy,
    CallProvider,
    KernelState,
    Sleep,
    SleepDone,
    Succeed,
)
from routeproof.core.latency import (
    LatencyConfig,
    LatencyState,
    breaching,
    new_latency,
    probe_due,
    record_demotion,
    record_latency,
    start_probe,
)
from routeproof.core.ledger import (
    BudgetLimits,
    LedgerState,
    Reservation,
    limits_ok,
    with_limits,
)
from routeproof.core.ledger import Refusal as LedgerRefusal
from routeproof.core.ledger import well_formed as ledger_well_formed
from routeproof.core.pricing import FREE, Price, PricingTable, cost_pico_usd, worst_case_cost_pico_usd
from routeproof.core.routing import ChainPlan, CoolingPolicy, build_chain, call_plan, plan_chain
from routeproof.core.tiers import endpoint_tier
from routeproof.core.types import (
    AttemptRecord,
    ChatRequest,
    PrivacyTier,
    ProviderKind,
    ProviderResponse,
    ResolvedModel,
    TenantPolicy,
    Usage,
)
from routeproof.deadline import check_deadline, past_deadline_hint
from routeproof.errors import (
    ConfigError,
    DeadlineExceeded,
)
from routeproof.ledger_store import LedgerStore, MemoryLedgerStore
from routeproof.observe import RouterMetrics, log_budget_override
from routeproof.providers.protocol import Provider
from routeproof.streaming import ProviderStream

__all__ = ["Router"]


class Router:
    """Holds the provider clients, the budget ledger, provider health and the metric instruments."""

    def __init__(
        self,
        providers: Iterable[Provider] | Mapping[ProviderKind, Provider],
        *,
        pricing: PricingTable | None = None,
        budget: BudgetLimits | None = None,
        health: HealthConfig | None = None,
        backoff: BackoffPolicy | None = None,
        private_allow_list: frozenset[str] = frozenset(),
        metrics: RouterMetrics | None = None,
        rng: random.Random | None = None,
        wall_clock: Callable[[], float] = time.time,
        client: httpx.AsyncClient | None = None,
        attempt_timeout_s: float = PROVIDER_DEFAULT_TIMEOUT_MS / 1000,
        stream_idle_timeout_s: float | None = 30.0,
        cooling: CoolingPolicy = CoolingPolicy.DEMOTE,
        ledger_store: LedgerStore | None = None,
        provider_timeouts_ms: Mapping[ProviderKind, int] | None = None,
        max_attempts_per_provider: int = MAX_ATTEMPTS_PER_PROVIDER,
        declared_tiers: Mapping[ProviderKind, PrivacyTier] | None = None,
        latency: LatencyConfig | None = None,
        max_in_flight: int | None = None,
        max_in_flight_per_provider: int | None = DEFAULT_MAX_IN_FLIGHT_PER_PROVIDER,
    ) -> None:
        if isinstance(attempt_timeout_s, bool) or not isinstance(attempt_timeout_s, int | float):
            raise ConfigError(f"attempt_timeout_s must be a number of seconds, got {attempt_timeout_s!r}")
        if not 0 < attempt_timeout_s <= PROVIDER_DEFAULT_TIMEOUT_MS / 1000:
            raise ConfigError(f"attempt_timeout_s must be in (0, 30], got {attempt_timeout_s!r}")
        self._attempt_timeout_ms = max(1, math.floor(attempt_timeout_s * 1000))
        self._provider_timeouts_ms = _provider_timeouts(provider_timeouts_ms or {})
        if (
            isinstance(max_attempts_per_provider, bool)
            or not isinstance(max_attempts_per_provider, int)
            or not 1 <= max_attempts_per_provider <= MAX_ATTEMPTS_PER_PROVIDER
        ):
            raise ConfigError(
                f"max_attempts_per_provider must be an int in 1..{MAX_ATTEMPTS_PER_PROVIDER}, "
                f"got {max_attempts_per_provider!r}"
            )
        self._max_attempts_per_provider = max_attempts_per_provider
        if stream_idle_timeout_s is not None and stream_idle_timeout_s <= 0:
            raise ConfigError(f"stream_idle_timeout_s must be > 0 or None, got {stream_idle_timeout_s!r}")
        self._stream_idle_timeout_s = stream_idle_timeout_s
        self._cooling = cooling
        items = providers.values() if isinstance(providers, Mapping) else providers
        self._providers: dict[ProviderKind, Provider] = {}
        for provider in items:
            if not provider.kind.is_supported:
                raise ConfigError(f"provider kind {provider.kind.value!r} is declared but not implemented yet")
            if provider.kind in self._providers:
                raise ConfigError(f"two providers of kind {provider.kind.value!r}: one per kind")
            self._providers[provider.kind] = provider
        declared = dict(declared_tiers or {})
        for kind, tier in declared.items():
            if not isinstance(tier, PrivacyTier):
                raise ConfigError(f"declared tier of {kind!r} must be a PrivacyTier, got {tier!r}")
        # A declared tier may lower a provider's privacy (treat a localhost model as Standard), never
        # raise it above what its endpoint proves: the effective tier is the less private of the two.
        self._endpoint_tiers = {
            kind: max(endpoint_tier(kind, p.base_url, private_allow_list), declared.get(kind, PrivacyTier.SOVEREIGN))
            for kind, p in self._providers.items()
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
        self._health: HealthState = new_health(health or HealthConfig())
        if latency is not None and not isinstance(latency, LatencyConfig):
            raise ConfigError(f"latency must be a LatencyConfig, got {latency!r}")
        self._latency: LatencyState = new_latency(latency or LatencyConfig())
        self._backoff = backoff or BackoffPolicy()
        self._metrics = metrics or RouterMetrics()
        self._rng = rng or random.Random()
        self._wall_clock = wall_clock
        self._client = client
        self._admission = Admission(
            max_in_flight=max_in_flight, max_in_flight_per_provider=max_in_flight_per_provider, metrics=self._metrics
        )

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
        return self._latency

    @property
    def health(self) -> HealthState:
        """Provider health as it stands (a frozen value)."""
        return self._health

    async def aclose(self) -> None:
        """Close the providers, the ledger store and the pooled HTTP client."""
        for provider in self._providers.values():
            await provider.aclose()
        if self._ledger_store is not None:
            await self._ledger_store.aclose()
        if self._client is not None:
            await self._client.aclose()

    async def __aenter__(self) -> Router:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # --- the call ----------------------------------------------------------------------------

    def _begin(
        self, req: ChatRequest, resolved: ResolvedModel, deadline: float, policy: TenantPolicy, session_id: str
    ) -> tuple[Call, KernelState, Action]:
        """Plan the chain, hand the kernel its plan, and get the first action (shared with streaming)."""
        now_s = asyncio.get_running_loop().time()
        check_deadline(deadline, now_s)
        started_ms = loop_ms(now_s)
        chain_plan = self._plan(resolved, policy, started_ms)
        plan = call_plan(
            chain_plan,
            policy,
            started_at_ms=started_ms,
            deadline_at_ms=deadline_ms(deadline),
            backoff=self._backoff,
            attempt_timeout_ms=self._attempt_timeout_ms,
            provider_timeouts_ms=self._provider_timeouts_ms,
            max_attempts_per_provider=self._max_attempts_per_provider,
        )
        state, action = kernel.start(plan, started_ms)
        return Call(self, req, session_id, chain_plan), state, action

    def _plan(self, resolved: ResolvedModel, policy: TenantPolicy, now_ms: int) -> ChainPlan:
        return plan_chain(
            build_chain(resolved, policy),
            policy.privacy_tier,
            endpoint_tiers=self._endpoint_tiers,
            configured=frozenset(self._providers),
            health=self._health,
            now_ms=now_ms,
            cooling_policy=self._cooling,
            slow=self._slow(now_ms, resolved, policy),
        )

    def _slow(self, now_ms: int, resolved: ResolvedModel, policy: TenantPolicy) -> frozenset[ProviderKind]:
        """This call's providers to demote for the latency SLA; one due a probe is left in front, once."""
        chain = frozenset(e.provider for e in build_chain(resolved, policy))
        slow = breaching(self._latency, now_ms) & chain
        due = frozenset(k for k in slow if probe_due(self._latency, k, now_ms))
        for kind in due:
            self._latency = start_probe(self._latency, kind, now_ms)
        for kind in slow - due:
            self._latency = record_demotion(self._latency, kind)
        return slow - due

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
        loop = asyncio.get_running_loop()
        call, state, action = self._begin(req, resolved, deadline, policy, session_id)
        started_ms = state.plan.started_at_ms
        while True:
            if isinstance(action, CallProvider):
                # admission (admission.py): queue for a local slot; time queued is not the provider's
                state, action, slot = await self._admission.admit(state, action)
                if slot is None or not isinstance(action, CallProvider):
                    continue  # the call ended while it queued: the kernel's Fail is handled above
                with slot:
                    event = await call.attempt(action)
            elif isinstance(action, Sleep):
                await asyncio.sleep(action.duration_ms / 1000)
                event = SleepDone(now_ms=loop_ms(loop.time()))
            elif isinstance(action, Succeed):
                return call.succeed(action, loop_ms(loop.time()) - started_ms)
            else:
                error = call.fail(action)
                if isinstance(error, DeadlineExceeded) and deadline_ms(deadline) <= started_ms:
                    hint = past_deadline_hint(deadline, started_ms / 1000)
                    raise DeadlineExceeded(f"caller deadline exceeded: {hint}", attempts=error.attempts)
                raise error
            before = len(state.records)
            state, action = kernel.step(state, event)
            self._observe(state.records[before:], loop_ms(loop.time()))

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
            self, req, resolved, deadline, policy, session_id=session_id, restart_on_interrupt=restart_on_interrupt
        )

    # --- pieces the call and the streaming call share ------------------------------------------

    def _price(self, kind: ProviderKind, model: str) -> Price | None:
        """The price a call is booked at. With a budget every routed model must be priced (the
        factory checks it at load; a Router built by hand fails here, before anything is sent).
        Without a budget an unpriced model has an unknown cost (None), never an error."""
        if self._pricing is None:
            return None
        if self._ledger_store is None:
            price = self._pricing.get(kind, model)
            return price if price is not None or kind is not ProviderKind.LOCAL else FREE
        return self._pricing.price_of_call(kind, model)

    async def _reserve(
        self, kind: ProviderKind, model: str, req: ChatRequest, session_id: str
    ) -> Reservation | LedgerRefusal | None:
        """Reserve the attempt's worst case in the ledger store (raises LedgerUnavailable: fail closed)."""
        if self._ledger_store is None:
            return None
        price = self._price(kind, model)
        amount = worst_case_cost_pico_usd(price, req) if price is not None else 0
        return await self._ledger_store.try_reserve(
            session_id=session_id, provider=kind, amount_pico_usd=amount, now_ms=max(0, int(self._wall_clock() * 1000))
        )

    async def _settle(self, reservation: Reservation | None, *, booked_pico_usd: int, succeeded: bool) -> None:
        """Commit or release in the ledger store; one it cannot reach queues it (or the lease books it)."""
        if reservation is None or self._ledger_store is None:
            return
        now_ms = max(0, int(self._wall_clock() * 1000))
        if succeeded:
            await self._ledger_store.commit(reservation, booked_pico_usd, now_ms=now_ms)
        else:
            await self._ledger_store.release(reservation, booked_pico_usd, now_ms=now_ms)

    def _cost(self, kind: ProviderKind, model: str, usage: Usage | None) -> int:
        return self._known_cost(kind, model, usage) or 0

    def _known_cost(self, kind: ProviderKind, model: str, usage: Usage | None) -> int | None:
        """The exact cost of ``usage`` in pico-USD, or None when the model has no price."""
        price = self._price(kind, model)
        if price is None or usage is None:
            return None
        return cost_pico_usd(price, usage)

    def _observe(self, records: tuple[AttemptRecord, ...], now_ms: int, *, success_settled_later: bool = False) -> None:
        """Report newly finished attempts: metrics, and each one's effect on its provider's health.

        A streamed attempt "succeeds" at its first token; whether the provider really delivered is
        known only at the stream's end, so streaming passes ``success_settled_later`` and applies the
        health effect when the stream is settled (core/stream_rules.py).
        """
        for record in records:
            self._metrics.attempt(record)
            if record.http_status is not None:  # answered: the latency-SLA trigger's sample
                latency_ms = record.first_token_ms if record.first_token_ms is not None else record.elapsed_ms
                self._latency = record_latency(self._latency, record.provider, now_ms, latency_ms)
            effect = health_effect(record.status)
            if not (success_settled_later and effect is HealthEffect.SUCCESS):
                self._health_effect(record.provider, effect, now_ms)

    def _health_effect(self, kind: ProviderKind, effect: HealthEffect, now_ms: int) -> None:
        if effect is HealthEffect.SUCCESS:
            self._health = record_success(self._health, kind)
        elif effect is HealthEffect.FAILURE:
            self._health = record_failure(self._health, kind, now_ms)


def _provider_timeouts(timeouts: Mapping[ProviderKind, int]) -> dict[ProviderKind, int]:
    """Validated per-provider attempt timeouts (agent.toml's ``timeout_ms``), in ms."""
    checked: dict[ProviderKind, int] = {}
    for kind, timeout_ms in timeouts.items():
        if not isinstance(kind, ProviderKind):
            raise ConfigError(f"provider_timeouts_ms keys must be ProviderKind, got {kind!r}")
        if (
            isinstance(timeout_ms, bool)
            or not isinstance(timeout_ms, int)
            or not 0 < timeout_ms <= PROVIDER_DEFAULT_TIMEOUT_MS
        ):
            raise ConfigError(
                f"timeout_ms of {kind.value!r} must be an int in 1..{PROVIDER_DEFAULT_TIMEOUT_MS}, got {timeout_ms!r}"
            )
        checked[kind] = timeout_ms
    return checked


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
