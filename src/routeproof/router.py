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

import httpx

from routeproof.call import Call, deadline_ms, loop_ms
from routeproof.core import kernel
from routeproof.core.classify import HealthEffect, health_effect
from routeproof.core.constants import PROVIDER_DEFAULT_TIMEOUT_MS
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
from routeproof.core.ledger import BudgetLimits, LedgerState, Reservation
from routeproof.core.ledger import Refusal as LedgerRefusal
from routeproof.core.pricing import Price, PricingTable, cost_pico_usd, worst_case_cost_pico_usd
from routeproof.core.routing import ChainPlan, CoolingPolicy, build_chain, call_plan, plan_chain
from routeproof.core.tiers import endpoint_tier
from routeproof.core.types import (
    AttemptRecord,
    ChatRequest,
    ProviderKind,
    ProviderResponse,
    ResolvedModel,
    TenantPolicy,
    Usage,
)
from routeproof.errors import (
    ConfigError,
)
from routeproof.ledger_store import LedgerStore, MemoryLedgerStore
from routeproof.observe import RouterMetrics
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
    ) -> None:
        if not 0 < attempt_timeout_s <= PROVIDER_DEFAULT_TIMEOUT_MS / 1000:
            raise ConfigError(f"attempt_timeout_s must be in (0, 30], got {attempt_timeout_s!r}")
        self._attempt_timeout_ms = max(1, math.floor(attempt_timeout_s * 1000))
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
        self._endpoint_tiers = {
            kind: endpoint_tier(kind, p.base_url, private_allow_list) for kind, p in self._providers.items()
        }
        self._pricing = pricing
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
        self._backoff = backoff or BackoffPolicy()
        self._metrics = metrics or RouterMetrics()
        self._rng = rng or random.Random()
        self._wall_clock = wall_clock
        self._client = client

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
        started_ms = loop_ms(asyncio.get_running_loop().time())
        chain_plan = self._plan(resolved, policy, started_ms)
        plan = call_plan(
            chain_plan,
            policy,
            started_at_ms=started_ms,
            deadline_at_ms=deadline_ms(deadline),
            backoff=self._backoff,
            attempt_timeout_ms=self._attempt_timeout_ms,
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
        )

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
                event = await call.attempt(action)
            elif isinstance(action, Sleep):
                await asyncio.sleep(action.duration_ms / 1000)
                event = SleepDone(now_ms=loop_ms(loop.time()))
            elif isinstance(action, Succeed):
                return call.succeed(action, loop_ms(loop.time()) - started_ms)
            else:
                raise call.fail(action)
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
        return None if self._pricing is None else self._pricing.price_of_call(kind, model)

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
        price = self._price(kind, model)
        if price is None or usage is None:
            return 0
        return cost_pico_usd(price, usage)

    def _observe(self, records: tuple[AttemptRecord, ...], now_ms: int, *, success_settled_later: bool = False) -> None:
        """Report newly finished attempts: metrics, and each one's effect on its provider's health.

        A streamed attempt "succeeds" at its first token; whether the provider really delivered is
        known only at the stream's end, so streaming passes ``success_settled_later`` and applies the
        health effect when the stream is settled (core/stream_rules.py).
        """
        for record in records:
            self._metrics.attempt(record)
            effect = health_effect(record.status)
            if not (success_settled_later and effect is HealthEffect.SUCCESS):
                self._health_effect(record.provider, effect, now_ms)

    def _health_effect(self, kind: ProviderKind, effect: HealthEffect, now_ms: int) -> None:
        if effect is HealthEffect.SUCCESS:
            self._health = record_success(self._health, kind)
        elif effect is HealthEffect.FAILURE:
            self._health = record_failure(self._health, kind, now_ms)
