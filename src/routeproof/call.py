"""One call's bookkeeping in the async shell: reservations, attempts, the response, the error.

``Call`` performs one kernel ``CallProvider`` action at a time for ``Router.call_provider`` (and
its reservation/failure steps for streaming) and turns the kernel's final ``Fail`` into the one
``RouterError`` the caller sees. It decides nothing: every branch here follows a kernel action or
a ledger outcome.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from typing import TYPE_CHECKING

from routeproof.clock import loop_ms
from routeproof.clock import timeout_at as precise_timeout_at
from routeproof.core import kernel
from routeproof.core.boundary import MAX_DETAIL_CHARS, classify_exception
from routeproof.core.classify import is_billable
from routeproof.core.kernel import (
    AttemptFailed,
    AttemptRefused,
    AttemptSucceeded,
    CallProvider,
    Event,
    Fail,
    FailKind,
    Refusal,
    Succeed,
)
from routeproof.core.ledger import BudgetScope, Reservation
from routeproof.core.ledger import Refusal as LedgerRefusal
from routeproof.core.pricing import format_usd
from routeproof.core.routing import ChainPlan
from routeproof.core.types import (
    AttemptFailure,
    ChatRequest,
    FailureKind,
    ProviderId,
    ProviderResponse,
    SkipRecord,
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
from routeproof.observe import (
    attempt_span,
    call_trace_context,
    log_auth_failure,
    log_cap_exceeded,
    log_model_not_found,
    log_turn_warning,
)

if TYPE_CHECKING:
    from routeproof.router import Router

__all__ = ["Call"]

logger = logging.getLogger("routeproof")


class Call:
    """The mutable bookkeeping of one call in the shell: the response, the refusal, the metrics."""

    def __init__(self, router: Router, req: ChatRequest, session_id: str, chain_plan: ChainPlan) -> None:
        self.router = router
        self.req = req
        self.session_id = session_id
        self.chain_plan = chain_plan
        self.skipped: list[SkipRecord] = [s.as_record() for s in chain_plan.skipped]
        self.response: ProviderResponse | None = None
        self.refusal: LedgerRefusal | None = None
        self.last_kind: ProviderId | None = None
        self.last_position: int | None = None
        self.loop = asyncio.get_running_loop()
        self.turn_warning = False  # some attempt's worst case exceeded the per-turn threshold
        self.cost_pico_usd: int | None = None  # the answered attempt's exact cost; None = unpriced
        self.trace_context = call_trace_context()  # one trace for all of this call's attempts
        self.config_error: ConfigError | None = None  # the first entry skipped as misconfigured

    def now_ms(self) -> int:
        return loop_ms(self.loop.time())

    async def begin(self, action: CallProvider) -> Reservation | AttemptRefused | AttemptFailed | None:
        """Count a failover, then reserve the attempt's worst case (or say why it may not start).

        Pricing is part of the attempt: what it raises (``ConfigError`` for an unpriced model) goes
        through :meth:`boundary` before anything is sent (a skip of this entry). The reservation is
        not: a ledger store that cannot book (``LedgerUnavailable``) fails the whole call closed.
        """
        router = self.router
        entry = action.entry
        if self.last_position is not None and self.last_position != action.position and self.last_kind is not None:
            router._metrics.failover(self.last_kind, entry.provider)
        try:
            router._price(entry.provider, entry.model)
        except Exception as exc:  # pricing belongs to the attempt boundary: core's table classifies it
            return await self.boundary(action, None, exc)
        outcome = await router._reserve(entry.provider, entry.model, self.req, self.session_id)
        if isinstance(outcome, LedgerRefusal):
            self.refusal = outcome
            if outcome.scope is BudgetScope.PROVIDER_DAILY:
                return self.skip(action, "budget_provider_daily")
            return AttemptRefused(now_ms=self.now_ms(), refusal=Refusal.TERMINAL)
        self.last_kind, self.last_position = entry.provider, action.position
        if outcome is not None and outcome.turn_warning:  # seed 003 per-turn scope: warn, then send
            self.turn_warning = True
            router._metrics.turn_warning(entry.provider)
            log_turn_warning(entry.provider, entry.model, format_usd(outcome.amount_pico_usd))
        return outcome

    def skip(self, action: CallProvider, reason: str) -> AttemptRefused:
        """Leave this chain entry out (a ``SkipRecord``) and go on down the chain."""
        entry = action.entry
        self.skipped.append(
            SkipRecord(
                provider=entry.provider, model=entry.model, fallback_position=entry.fallback_position, reason=reason
            )
        )
        return AttemptRefused(now_ms=self.now_ms(), refusal=Refusal.SKIP_PROVIDER)

    async def boundary(
        self, action: CallProvider, reservation: Reservation | None, exc: Exception
    ) -> AttemptRefused | AttemptFailed:
        """The one attempt boundary: an exception that escaped the attempt, as core's table classifies it.

        A skip releases the reservation unbilled; a failure is settled like any other failed attempt.
        """
        outcome, failure = classify_exception(exc)
        entry = action.entry
        if isinstance(exc, ConfigError) and self.config_error is None:
            self.config_error = exc  # the call's error if no other provider can take it (_no_eligible)
        if outcome is not None and outcome.skip_reason is not None:
            logger.warning(
                "router_attempt_skipped provider=%s model=%s reason=%s detail=%s",
                entry.provider.as_metric_label(),
                entry.model,
                outcome.skip_reason,
                str(exc)[:MAX_DETAIL_CHARS],
            )
            await self.router._settle(reservation, booked_pico_usd=0, succeeded=False)
            return self.skip(action, outcome.skip_reason)
        if failure is None:  # pragma: no cover - classify_exception covers every Exception
            raise exc
        return await self.failed(action, reservation, failure)

    async def failed(
        self, action: CallProvider, reservation: Reservation | None, failure: AttemptFailure
    ) -> AttemptFailed:
        """Settle a failed attempt (book only what is billable), count it against health, report it."""
        router = self.router
        entry = action.entry
        billed = router._cost(entry.provider, entry.model, failure.billed_usage) if is_billable(failure) else 0
        await router._settle(reservation, booked_pico_usd=billed, succeeded=False)
        return AttemptFailed(now_ms=self.now_ms(), failure=failure, draw=router._rng.random())

    async def attempt(self, action: CallProvider) -> Event:
        """Perform one CallProvider action and say what happened.

        Nothing raised while pricing, building, sending, reading or decoding the attempt escapes
        (but ``CancelledError``): it becomes a failed attempt or a skip (:meth:`boundary`).
        """
        router = self.router
        entry = action.entry
        begun = await self.begin(action)
        if isinstance(begun, AttemptRefused | AttemptFailed):
            return begun
        reservation = begun
        settled = False
        try:
            try:
                provider = router._providers[entry.provider]
                timeout_at = (action.issued_at_ms + action.timeout_ms) / 1000
                with attempt_span(entry.provider, entry.model, action.attempt_num, parent=self.trace_context):
                    async with precise_timeout_at(timeout_at):  # clock.py: the final wake-up is short
                        response = await provider.complete(self.req, entry.model, timeout_at=timeout_at)
                cost_pico_usd = router._known_cost(entry.provider, entry.model, response.usage)
            except ProviderCallFailed as exc:
                failure = exc.failure
            except TimeoutError:
                failure = AttemptFailure(
                    kind=FailureKind.ATTEMPT_TIMEOUT, message=f"no answer within {action.timeout_ms} ms"
                )
            except Exception as exc:  # the attempt boundary: core's table classifies it (never carries on)
                settled = True
                return await self.boundary(action, reservation, exc)
            else:
                self.cost_pico_usd = cost_pico_usd
                await router._settle(reservation, booked_pico_usd=cost_pico_usd or 0, succeeded=True)
                settled = True
                self.response = response
                return AttemptSucceeded(now_ms=self.now_ms())
            settled = True
            return await self.failed(action, reservation, failure)
        finally:
            if not settled:  # cancelled: never leak the reservation
                await router._settle(reservation, booked_pico_usd=0, succeeded=False)

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
            cost_pico_usd=self.cost_pico_usd,
            budget_turn_warning=self.turn_warning,
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
        if self.config_error is not None and not action.records:
            # nothing could be sent: the configuration error that skipped the chain, naming its value
            return self.config_error.with_attempts(action.records)
        earliest = self.chain_plan.earliest_return_ms
        return NoEligibleProvider(
            skipped, earliest_at=None if earliest is None else earliest / 1000, attempts=action.records
        )


def _failure_error(provider: ProviderId, failure: AttemptFailure) -> RouterError:
    """The error describing one failed attempt (the ``last_error`` of AllProvidersFailed)."""
    if failure.kind is FailureKind.HTTP_STATUS and failure.http_status is not None:
        return TerminalProviderError(
            provider, failure.http_status, failure.message, retry_after_ms=failure.retry_after_ms
        )
    if failure.kind is FailureKind.INVALID_RESPONSE:
        return InvalidResponse(failure.message, provider=provider)
    return RouterError(f"{provider.as_metric_label()}: {failure.kind.value} {failure.message}".rstrip())
