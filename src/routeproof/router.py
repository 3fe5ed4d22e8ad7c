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

from routeproof.core import kernel
from routeproof.core.classify import HealthEffect, health_effect, is_billable
from routeproof.core.constants import PROVIDER_DEFAULT_TIMEOUT_MS
from routeproof.core.health import HealthConfig, HealthState, new_health, record_failure, record_success
from routeproof.core.kernel import (
    Action,
    AttemptFailed,
    AttemptRefused,
    AttemptSucceeded,
    BackoffPolicy,
    CallProvider,
    Event,
    Fail,
    FailKind,
    KernelState,
    Refusal,
    Sleep,
    SleepDone,
    Succeed,
)
from routeproof.core.ledger import (
    BudgetLimits,
    BudgetScope,
    LedgerState,
    Reservation,
    commit,
    new_ledger,
    periods_at,
    try_reserve,
)
from routeproof.core.ledger import Refusal as LedgerRefusal
from routeproof.core.ledger import release as ledger_release
from routeproof.core.pricing import Price, PricingTable, cost_pico_usd, worst_case_cost_pico_usd
from routeproof.core.routing import ChainPlan, CoolingPolicy, build_chain, call_plan, plan_chain
from routeproof.core.tiers import endpoint_tier
from routeproof.core.types import (
    AttemptFailure,
    AttemptRecord,
    ChatRequest,
    FailureKind,
    ProviderKind,
    ProviderResponse,
    ResolvedModel,
    SkipRecord,
    TenantPolicy,
    Usage,
)
from routeproof.errors import (
    AllProvidersFailed,
    AuthError,
    ConfigError,
    DeadlineExceeded,
    InvalidResponse,
    NoEligibleProvider,
    ProviderCallFailed,
    RouterError,
    TerminalProviderError,
)
from routeproof.observe import RouterMetrics, attempt_span, log_auth_failure, log_cap_exceeded, log_model_not_found
from routeproof.providers.protocol import Provider
from routeproof.streaming import ProviderStream

__all__ = ["Router"]


def _ms(loop_time_s: float) -> int:
    """A loop instant as the kernel's integer milliseconds (rounded: exact durations stay exact)."""
    return round(loop_time_s * 1000)


def _deadline_ms(loop_time_s: float) -> int:
    """The caller's deadline in milliseconds, floored: with ``now`` rounded, ``now_ms < deadline_ms``
    still implies the real now is before the real deadline, so no call starts after it."""
    return math.floor(loop_time_s * 1000)


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
        self._ledger: LedgerState | None = new_ledger(budget) if budget is not None else None
        self._health: HealthState = new_health(health or HealthConfig())
        self._backoff = backoff or BackoffPolicy()
        self._metrics = metrics or RouterMetrics()
        self._rng = rng or random.Random()
        self._wall_clock = wall_clock
        self._client = client

    # --- read-only views ---------------------------------------------------------------------

    @property
    def ledger(self) -> LedgerState | None:
        """The budget ledger as it stands (a frozen value)."""
        return self._ledger

    @property
    def health(self) -> HealthState:
        """Provider health as it stands (a frozen value)."""
        return self._health

    async def aclose(self) -> None:
        """Close the providers and the pooled HTTP client."""
        for provider in self._providers.values():
            await provider.aclose()
        if self._client is not None:
            await self._client.aclose()

    async def __aenter__(self) -> Router:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # --- the call ----------------------------------------------------------------------------

    def _begin(
        self, req: ChatRequest, resolved: ResolvedModel, deadline: float, policy: TenantPolicy, session_id: str
    ) -> tuple[_Call, KernelState, Action]:
        """Plan the chain, hand the kernel its plan, and get the first action (shared with streaming)."""
        started_ms = _ms(asyncio.get_running_loop().time())
        chain_plan = self._plan(resolved, policy, started_ms)
        plan = call_plan(
            chain_plan,
            policy,
            started_at_ms=started_ms,
            deadline_at_ms=_deadline_ms(deadline),
            backoff=self._backoff,
            attempt_timeout_ms=self._attempt_timeout_ms,
        )
        state, action = kernel.start(plan, started_ms)
        return _Call(self, req, session_id, chain_plan), state, action

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
                event = SleepDone(now_ms=_ms(loop.time()))
            elif isinstance(action, Succeed):
                return call.succeed(action, _ms(loop.time()) - started_ms)
            else:
                raise call.fail(action)
            before = len(state.records)
            state, action = kernel.step(state, event)
            self._observe(state.records[before:], _ms(loop.time()))

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
        if self._pricing is None:
            return None
        price = self._pricing.get(kind, model)
        if price is None and kind is not ProviderKind.LOCAL:
            raise ConfigError(f"no price for provider {kind.value!r} model {model!r} in the pricing table")
        return price

    def _reserve(
        self, kind: ProviderKind, model: str, req: ChatRequest, session_id: str
    ) -> Reservation | LedgerRefusal | None:
        if self._ledger is None:
            return None
        price = self._price(kind, model)
        amount = worst_case_cost_pico_usd(price, req) if price is not None else 0
        day, month = periods_at(max(0, int(self._wall_clock() * 1000)))
        self._ledger, outcome = try_reserve(
            self._ledger, session_id=session_id, provider=kind, amount_pico_usd=amount, day_index=day, month_index=month
        )
        return outcome

    def _settle(self, reservation: Reservation | None, *, booked_pico_usd: int, succeeded: bool) -> None:
        if reservation is None or self._ledger is None:
            return
        if succeeded:
            self._ledger = commit(self._ledger, reservation, booked_pico_usd)
        else:
            self._ledger = ledger_release(self._ledger, reservation, booked_pico_usd)

    def _cost(self, kind: ProviderKind, model: str, usage: Usage | None) -> int:
        price = self._price(kind, model)
        if price is None or usage is None:
            return 0
        return cost_pico_usd(price, usage)

    def _observe(self, records: tuple[AttemptRecord, ...], now_ms: int) -> None:
        """Report newly finished attempts: metrics, and each one's effect on its provider's health."""
        for record in records:
            self._metrics.attempt(record)
            self._health_effect(record.provider, health_effect(record.status), now_ms)

    def _health_effect(self, kind: ProviderKind, effect: HealthEffect, now_ms: int) -> None:
        if effect is HealthEffect.SUCCESS:
            self._health = record_success(self._health, kind)
        elif effect is HealthEffect.FAILURE:
            self._health = record_failure(self._health, kind, now_ms)


class _Call:
    """The mutable bookkeeping of one call in the shell: the response, the refusal, the metrics."""

    def __init__(self, router: Router, req: ChatRequest, session_id: str, chain_plan: ChainPlan) -> None:
        self.router = router
        self.req = req
        self.session_id = session_id
        self.chain_plan = chain_plan
        self.skipped: list[SkipRecord] = [s.as_record() for s in chain_plan.skipped]
        self.response: ProviderResponse | None = None
        self.refusal: LedgerRefusal | None = None
        self.last_kind: ProviderKind | None = None
        self.last_position: int | None = None
        self.loop = asyncio.get_running_loop()

    def now_ms(self) -> int:
        return _ms(self.loop.time())

    def begin(self, action: CallProvider) -> Reservation | AttemptRefused | None:
        """Count a failover, then reserve the attempt's worst case (or say why it may not start)."""
        router = self.router
        entry = action.entry
        if self.last_position is not None and self.last_position != action.position and self.last_kind is not None:
            router._metrics.failover(self.last_kind, entry.provider)
        outcome = router._reserve(entry.provider, entry.model, self.req, self.session_id)
        if isinstance(outcome, LedgerRefusal):
            self.refusal = outcome
            if outcome.scope is BudgetScope.PROVIDER_DAILY:
                self.skipped.append(
                    SkipRecord(
                        provider=entry.provider,
                        model=entry.model,
                        fallback_position=entry.fallback_position,
                        reason="budget_provider_daily",
                    )
                )
                return AttemptRefused(now_ms=self.now_ms(), refusal=Refusal.SKIP_PROVIDER)
            return AttemptRefused(now_ms=self.now_ms(), refusal=Refusal.TERMINAL)
        self.last_kind, self.last_position = entry.provider, action.position
        return outcome

    def failed(self, action: CallProvider, reservation: Reservation | None, failure: AttemptFailure) -> AttemptFailed:
        """Settle a failed attempt (book only what is billable), count it against health, report it."""
        router = self.router
        entry = action.entry
        billed = router._cost(entry.provider, entry.model, failure.billed_usage) if is_billable(failure) else 0
        router._settle(reservation, booked_pico_usd=billed, succeeded=False)
        return AttemptFailed(now_ms=self.now_ms(), failure=failure, draw=router._rng.random())

    async def attempt(self, action: CallProvider) -> Event:
        """Perform one CallProvider action and say what happened."""
        router = self.router
        entry = action.entry
        begun = self.begin(action)
        if isinstance(begun, AttemptRefused):
            return begun
        reservation = begun
        provider = router._providers[entry.provider]
        timeout_at = (action.issued_at_ms + action.timeout_ms) / 1000
        settled = False
        try:
            try:
                with attempt_span(entry.provider, entry.model, action.attempt_num):
                    async with asyncio.timeout_at(timeout_at):
                        response = await provider.complete(self.req, entry.model, timeout_at=timeout_at)
            except ProviderCallFailed as exc:
                failure = exc.failure
            except TimeoutError:
                failure = AttemptFailure(
                    kind=FailureKind.ATTEMPT_TIMEOUT, message=f"no answer within {action.timeout_ms} ms"
                )
            else:
                router._settle(
                    reservation,
                    booked_pico_usd=router._cost(entry.provider, entry.model, response.usage),
                    succeeded=True,
                )
                settled = True
                self.response = response
                return AttemptSucceeded(now_ms=self.now_ms())
            settled = True
            return self.failed(action, reservation, failure)
        finally:
            if not settled:  # cancelled (or a bug escaping): never leak the reservation
                router._settle(reservation, booked_pico_usd=0, succeeded=False)

    def succeed(self, action: Succeed, latency_ms: int) -> ProviderResponse:
        """The response the caller gets: normalised, with the attempt history and the skips."""
        assert self.response is not None
        outcome_provider = action.entry.provider
        self.router._metrics.call(outcome_provider, action.entry.model, "succeeded", len(action.records))
        return replace(
            self.response,
            attempts=action.records,
            latency_ms=latency_ms,
            provider=outcome_provider,
            model=action.entry.model,
            skipped=tuple(self.skipped),
        )

    def fail(self, action: Fail) -> RouterError:
        """The error the call raises, with the attempt records; metrics and sev logs on the way."""
        metrics = self.router._metrics
        entry = action.entry
        provider = entry.provider if entry is not None else None
        model = entry.model if entry is not None else ""
        failure = action.failure
        error: RouterError
        outcome = "all_failed"
        if action.kind is FailKind.DEADLINE:
            metrics.deadline()
            error = DeadlineExceeded(attempts=action.records)
        elif action.kind is FailKind.AUTH and provider is not None and failure is not None:
            outcome = "auth_error"
            log_auth_failure(provider, failure.http_status)
            error = AuthError(provider, failure.http_status or 401, attempts=action.records)
        elif action.kind is FailKind.TERMINAL and provider is not None and failure is not None:
            outcome = "terminal_4xx"
            if failure.http_status == 404:
                log_model_not_found(provider, model)
            error = TerminalProviderError(
                provider, failure.http_status or 400, failure.message, attempts=action.records
            )
        elif action.kind is FailKind.ATTEMPTS_CAP:
            log_cap_exceeded(len(action.records))
            error = InvalidResponse(kernel.ATTEMPTS_CAP_REASON, attempts=action.records)
        elif action.kind is FailKind.BUDGET and self.refusal is not None:
            error = self.refusal.to_error()
            error.attempts = action.records
        elif action.kind is FailKind.NO_ELIGIBLE or (action.kind is FailKind.ALL_FAILED and not action.records):
            error = self._no_eligible(action)
        else:
            last = _failure_error(provider, failure) if provider is not None and failure is not None else None
            error = AllProvidersFailed(last_error=last, attempts=action.records)
        metrics.call(provider, model, outcome, len(action.records))
        return error

    def _no_eligible(self, action: Fail) -> RouterError:
        skipped = ", ".join(f"{s.provider.value}/{s.model}: {s.reason}" for s in self.skipped) or "empty chain"
        if self.refusal is not None and not action.records:
            error: RouterError = self.refusal.to_error()
            error.attempts = action.records
            return error
        earliest = self.chain_plan.earliest_return_ms
        return NoEligibleProvider(
            skipped, earliest_at=None if earliest is None else earliest / 1000, attempts=action.records
        )


def _failure_error(provider: ProviderKind, failure: AttemptFailure) -> RouterError:
    """The error describing one failed attempt (the ``last_error`` of AllProvidersFailed)."""
    if failure.kind is FailureKind.HTTP_STATUS and failure.http_status is not None:
        return TerminalProviderError(
            provider, failure.http_status, failure.message, retry_after_ms=failure.retry_after_ms
        )
    if failure.kind is FailureKind.INVALID_RESPONSE:
        return InvalidResponse(failure.message, provider=provider)
    return RouterError(f"{provider.as_metric_label()}: {failure.kind.value} {failure.message}".rstrip())
