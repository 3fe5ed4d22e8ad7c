"""One call's bookkeeping in the async shell: reservations, skips, the response, the error.

``Call`` holds what one call learns on the way (the ledger's refusal, the skips, the answered
attempt's cost) for the one driver loop (driver.py), and turns the kernel's final ``Fail`` into
the one ``RouterError`` the caller sees by looking it up in core's tables (core/outcomes.py). It
decides nothing: every branch here follows a kernel action, a ledger outcome or a table row. It
reaches the world only through the ports (ports.py).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable

from routeproof.clock import loop_now_ms
from routeproof.core import kernel
from routeproof.core.boundary import MAX_DETAIL_CHARS, classify_exception, skip_reason_of
from routeproof.core.classify import is_billable
from routeproof.core.hedge import cancelled_booking_pico_usd
from routeproof.core.kernel import AttemptFailed, AttemptRefused, CallProvider, Fail, Succeed
from routeproof.core.ledger import BudgetRefusal, Reservation
from routeproof.core.outcomes import (
    BUDGET_SKIP_REASON,
    CallOutcome,
    ErrorKind,
    LastErrorKind,
    NoEligibleCause,
    call_failure,
    last_error_kind,
    no_eligible_cause,
    refusal_for,
)
from routeproof.core.pricing import format_usd
from routeproof.core.rate_limit import RateVerdict
from routeproof.core.routing import ChainPlan, Skipped
from routeproof.core.types import (
    AttemptFailure,
    ChatRequest,
    ProviderId,
    ProviderResponse,
    SkipRecord,
    Usage,
)
from routeproof.errors import (
    AllProvidersFailed,
    AuthError,
    ConfigError,
    DeadlineExceeded,
    InvalidResponse,
    NoEligibleProvider,
    ProviderHTTPError,
    RouterError,
    TerminalProviderError,
)
from routeproof.observe import (
    call_trace_context,
    log_auth_failure,
    log_cap_exceeded,
    log_model_not_found,
    log_turn_warning,
)
from routeproof.ports import Ports
from routeproof.traffic_store.port import header_limit_reason, rate_limit_reason
from routeproof.traffic_store.protocol import RateTicket

__all__ = ["Call"]

logger = logging.getLogger("routeproof")

_SUCCEEDED = CallOutcome.SUCCEEDED.value  # read once: an Enum's .value is two Python calls


class Call:
    """The mutable bookkeeping of one call in the shell: the response, the refusal, the skips."""

    __slots__ = (  # one per call, its fields read and set throughout: no instance dict
        "chain_plan", "config_error", "cost_pico_usd", "hedge_earned", "hedged", "last_kind", "last_position",
        "loop", "now_ms", "ports", "preset", "racing", "refusal", "req", "response", "session_id", "skipped",
        "ticket", "trace_context", "turn_warning",
    )  # fmt: skip

    def __init__(self, ports: Ports, req: ChatRequest, session_id: str, chain_plan: ChainPlan) -> None:
        self.ports = ports
        self.req = req
        self.session_id = session_id
        self.chain_plan = chain_plan
        self.skipped: list[SkipRecord] = list(map(Skipped.as_record, chain_plan.skipped))
        self.response: ProviderResponse | None = None
        self.refusal: BudgetRefusal | None = None
        self.last_kind: ProviderId | None = None
        self.last_position: int | None = None
        self.loop = asyncio.get_running_loop()
        # the call's clock (clock.loop_now_ms): a partial, not a method, so a reading is one Python call
        self.now_ms: Callable[[], int] = functools.partial(loop_now_ms, self.loop)
        self.turn_warning = False  # some attempt's worst case exceeded the per-turn threshold
        self.cost_pico_usd: int | None = None  # the answered attempt's exact cost; None = unpriced
        self.trace_context = call_trace_context()  # one trace for all of this call's attempts
        self.config_error: ConfigError | None = None  # the first entry skipped as misconfigured
        self.ticket: RateTicket | None = None  # the pending attempt's place in its deployment's rate window
        self.preset: RateTicket | None = None  # the place admission reserved for the call's first attempt there
        self.hedged = False  # a hedge was sent in this call (one per call; hedging.py)
        self.hedge_earned = False  # this call earned its alias's hedge bucket its ratio
        self.racing = False  # this attempt is in a hedge race: cancelled in flight, it books its reservation

    def cancelled_booking(self, reservation: Reservation | None) -> int:
        """What an attempt cancelled in flight books: a race's loser its reserved worst case
        (core/hedge.py: the provider may bill it); one the caller gave up on, nothing (as before)."""
        if not self.racing or reservation is None:
            return 0
        return cancelled_booking_pico_usd(reservation.amount_pico_usd)

    async def begin(self, action: CallProvider) -> Reservation | AttemptRefused | AttemptFailed | None:
        """Count a failover, then reserve the attempt's worst case (or say why it may not start).

        Pricing is part of the attempt: what it raises (``ConfigError`` for an unpriced model) goes
        through :meth:`boundary` before anything is sent (a skip of this entry). The reservation is
        not: a ledger store that cannot book (``LedgerUnavailable``) fails the whole call closed.
        """
        ports = self.ports
        entry = action.entry
        if self.last_position is not None and self.last_position != action.position and self.last_kind is not None:
            ports.metrics.failover(self.last_kind, entry.provider)
        try:
            ports.ledger.price(entry.provider, entry.model)
        except Exception as exc:  # pricing belongs to the attempt boundary: core's table classifies it
            return await self.boundary(action, None, exc)
        block = ports.traffic.header_block(entry.provider, ports.ledger.wall_ms)  # the clock read only if held back
        if block is not None:  # its provider said 0 left until a reset (core/ratelimit_headers.py)
            return self.skip(action, header_limit_reason(block))
        ticket: RateTicket | RateVerdict | None
        if self.preset is not None and self.preset.deployment == entry.provider.value:
            ticket, self.preset = self.preset, None  # reserved at admission (driver.begin_admitted)
        elif not ports.traffic.config.limits:  # no deployment declares limits: Traffic.reserve's None, no coroutine
            ticket = None
        else:
            ticket = await ports.traffic.reserve(entry.provider, self.req, ports.ledger.wall_ms)
        if isinstance(ticket, RateVerdict):  # at its declared rpm/tpm: skipped, named (core/rate_limit.py)
            return self.skip(action, rate_limit_reason(ticket))
        self.ticket = ticket
        outcome = (  # no ledger store (no budget): Ledger.reserve's None, without its coroutine
            None
            if ports.ledger.store is None
            else await ports.ledger.reserve(entry.provider, entry.model, self.req, self.session_id)
        )
        if isinstance(outcome, BudgetRefusal):
            await self.release_ticket()
            self.refusal = outcome
            refusal = refusal_for(outcome.scope)  # core/outcomes.py: skip this provider, or end the call
            if refusal is kernel.RefusalEffect.SKIP_PROVIDER:
                return self.skip(action, BUDGET_SKIP_REASON)
            return AttemptRefused(now_ms=self.now_ms(), refusal=refusal)
        self.last_kind, self.last_position = entry.provider, action.position
        if outcome is not None and outcome.turn_warning:  # seed 003 per-turn scope: warn, then send
            self.turn_warning = True
            ports.metrics.turn_warning(entry.provider)
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
        return AttemptRefused(now_ms=self.now_ms(), refusal=kernel.RefusalEffect.SKIP_PROVIDER)

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
            reason = skip_reason_of(outcome.skip_reason, exc)  # names the refused fields, when known
            logger.warning(
                "router_attempt_skipped provider=%s model=%s reason=%s detail=%s",
                entry.provider.as_metric_label(),
                entry.model,
                reason,
                str(exc)[:MAX_DETAIL_CHARS],
            )
            await self.ports.ledger.settle(reservation, booked_pico_usd=0, succeeded=False)
            await self.release_ticket()  # nothing was sent
            return self.skip(action, reason)
        if failure is None:  # pragma: no cover - classify_exception covers every Exception
            raise exc
        return await self.failed(action, reservation, failure)

    async def failed(
        self, action: CallProvider, reservation: Reservation | None, failure: AttemptFailure
    ) -> AttemptFailed:
        """Settle a failed attempt (book only what is billable) and say so, with the kernel's draw."""
        ledger = self.ports.ledger
        entry = action.entry
        billed = ledger.cost(entry.provider, entry.model, failure.billed_usage) if is_billable(failure) else 0
        await ledger.settle(reservation, booked_pico_usd=billed, succeeded=False)
        await self.traffic_settled(action, usage=failure.billed_usage or Usage(), succeeded=False)
        # the retry budget's verdict is the kernel's input: spent -> fail over, recorded (core/retry_budget.py)
        allowed = await self.ports.traffic.retry_allowed(entry.provider, failure)
        return AttemptFailed(now_ms=self.now_ms(), failure=failure, draw=self.ports.draw(), retry_allowed=allowed)

    async def traffic_settled(self, action: CallProvider, *, usage: Usage | None, succeeded: bool) -> None:
        """The attempt was sent: its rate-limit place keeps the tokens used (``None``: the estimate),
        and a success refunds the provider's retry budget."""
        ticket, self.ticket = self.ticket, None
        if ticket is not None:  # none taken (no declared limit): nothing to settle, no clock to read
            await self.ports.traffic.settle(ticket, usage, self.ports.ledger.wall_ms())
        if succeeded and self._pin_answered(action):
            await self.ports.traffic.succeeded(action.entry.provider)

    async def stream_ticket(self, action: CallProvider) -> RateTicket | None:
        """A stream committed at its first event: the success counts now (cache pin, retry budget);
        its rate-limit place goes with the stream, for the relay to settle with the usage it reports."""
        ticket, self.ticket = self.ticket, None
        if self._pin_answered(action):
            await self.ports.traffic.succeeded(action.entry.provider)
        return ticket

    def _pin_answered(self, action: CallProvider) -> bool:
        """A success's cache pin (affinity); whether its provider's retry budget is then refunded
        (``Traffic.succeeded``: a refund needs a bucket). Plain code, not a coroutine: per call."""
        self.ports.traffic.confirm_pin(self.req, action.entry.provider, self.now_ms)  # cache affinity
        return self.ports.traffic.config.retry_budget is not None

    async def release_preset(self) -> None:
        """Give back an admission place no attempt used."""
        preset, self.preset = self.preset, None
        if preset is not None:  # the usual call: admission reserved nothing
            await self.ports.traffic.release(preset)

    async def release_ticket(self) -> None:
        """The attempt was never sent: its rate-limit place is given back."""
        ticket, self.ticket = self.ticket, None
        await self.ports.traffic.release(ticket)

    def succeed(self, action: Succeed, latency_ms: int) -> ProviderResponse:
        """The response the caller gets: normalised, with the attempt history and the skips."""
        assert self.response is not None
        outcome_provider = action.entry.provider
        self.ports.metrics.call(outcome_provider, action.entry.model, _SUCCEEDED, len(action.records))
        return self.response.with_call(
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
        entry = action.entry
        provider = entry.provider if entry is not None else None
        model = entry.model if entry is not None else ""
        row = call_failure(  # core/outcomes.py: the kernel's CallFailureKind -> the error and the outcome
            action.kind,
            has_failure=provider is not None and action.failure is not None,
            has_refusal=self.refusal is not None,
            has_records=bool(action.records),
        )
        error = _ERRORS[row.error](self, action)
        self.ports.metrics.call(provider, model, row.outcome.value, len(action.records))
        return error

    def _deadline(self, action: Fail) -> RouterError:
        self.ports.metrics.deadline()
        return DeadlineExceeded(attempts=action.records)

    def _auth(self, action: Fail) -> RouterError:
        assert action.entry is not None  # the row needs the failure (and its provider)
        assert action.failure is not None
        log_auth_failure(action.entry.provider, action.failure.http_status)
        return AuthError(action.entry.provider, action.failure.http_status or 401, attempts=action.records)

    def _terminal(self, action: Fail) -> RouterError:
        assert action.entry is not None  # the row needs the failure (and its provider)
        assert action.failure is not None
        failure = action.failure
        if failure.http_status == 404:
            log_model_not_found(action.entry.provider, action.entry.model)
        return TerminalProviderError(
            action.entry.provider, failure.http_status or 400, failure.message, attempts=action.records
        )

    def _attempts_cap(self, action: Fail) -> RouterError:
        log_cap_exceeded(len(action.records))
        return InvalidResponse(kernel.ATTEMPTS_CAP_REASON, attempts=action.records)

    def _budget(self, action: Fail) -> RouterError:
        assert self.refusal is not None  # the row needs the refusal
        error = self.refusal.to_error()
        error.attempts = action.records
        return error

    def _no_eligible(self, action: Fail) -> RouterError:
        cause = no_eligible_cause(
            has_records=bool(action.records),
            has_refusal=self.refusal is not None,
            has_config_error=self.config_error is not None,
        )
        if cause is NoEligibleCause.BUDGET_REFUSAL:
            return self._budget(action)
        if cause is NoEligibleCause.CONFIG_ERROR:
            assert self.config_error is not None
            # nothing could be sent: the configuration error that skipped the chain, naming its value
            return self.config_error.with_attempts(action.records)
        skipped = ", ".join(f"{s.provider.value}/{s.model}: {s.reason}" for s in self.skipped) or "empty chain"
        earliest = self.chain_plan.earliest_return_ms
        return NoEligibleProvider(
            skipped, earliest_at=None if earliest is None else earliest / 1000, attempts=action.records
        )

    def _all_failed(self, action: Fail) -> RouterError:
        entry, failure = action.entry, action.failure
        last = _last_error(entry.provider, failure) if entry is not None and failure is not None else None
        return AllProvidersFailed(last_error=last, attempts=action.records)


_ERRORS: dict[ErrorKind, Callable[[Call, Fail], RouterError]] = {
    ErrorKind.DEADLINE: Call._deadline,
    ErrorKind.AUTH: Call._auth,
    ErrorKind.TERMINAL: Call._terminal,
    ErrorKind.ATTEMPTS_CAP: Call._attempts_cap,
    ErrorKind.BUDGET: Call._budget,
    ErrorKind.NO_ELIGIBLE: Call._no_eligible,
    ErrorKind.ALL_FAILED: Call._all_failed,
}
"""How each of core's ``ErrorKind`` is built (one constructor per row)."""


def _last_error(provider: ProviderId, failure: AttemptFailure) -> RouterError:
    """The error describing one failed attempt (the ``last_error`` of AllProvidersFailed)."""
    kind = last_error_kind(failure.kind, failure.http_status)  # core/outcomes.py
    if kind is LastErrorKind.TERMINAL_STATUS and failure.http_status is not None:
        return TerminalProviderError(
            provider, failure.http_status, failure.message, retry_after_ms=failure.retry_after_ms
        )
    if kind is LastErrorKind.PROVIDER_STATUS and failure.http_status is not None:
        return ProviderHTTPError(provider, failure.http_status, failure.message, retry_after_ms=failure.retry_after_ms)
    if kind is LastErrorKind.INVALID_RESPONSE:
        return InvalidResponse(failure.message, provider=provider)
    return RouterError(f"{provider.as_metric_label()}: {failure.kind.value} {failure.message}".rstrip())
