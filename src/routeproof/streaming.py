"""Streaming calls: the kernel's retry/failover rules up to the first token, committed after it.

Up to the first event of an attempt, a streaming call is a ``call_provider`` call: the same kernel
decides retries, failover, sleeps, the 30 s budget, the caller's deadline, tiers and budgets, and a
failure before the first token (an in-band error event included) is one more failed attempt.
At the first event the call is committed to that provider: the rest is relayed as it arrives,
bounded by the caller's deadline, and nothing is ever spliced in from another provider. A drop, a
malformed event or the deadline then ends the stream with ``StreamError("stream interrupted: …")``.

Every stream ends with exactly one ``MessageStop`` (carrying usage) or exactly one ``StreamError``.
Tool calls are held back until their block closes, so a consumer never sees partial tool JSON from
an interrupted stream. Streamed usage is committed to the ledger; a stream cut after the provider
reported its usage (and before its terminator) commits that usage, and one cut before its usage
arrived commits the worst case that was reserved for it, never zero.

With ``restart_on_interrupt=True`` the whole turn is held back until its ``MessageStop`` and, if
the stream is interrupted after its first token, the turn is retried from scratch (within the
caller's deadline): the caller then sees one complete answer or one ``StreamError``, at the cost of
seeing no token before the answer is complete.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable
from contextlib import aclosing

from routeproof.clock import deadline_ms, loop_ms
from routeproof.core.boundary import MAX_DETAIL_CHARS
from routeproof.core.constants import STREAM_INTERRUPTED
from routeproof.core.outcomes import CallOutcome
from routeproof.core.stream_rules import Hold, StreamEnd, may_restart_turn, settle_stream
from routeproof.core.stream_rules import hold_back as hold_back_rule
from routeproof.core.types import (
    AttemptRecord,
    ChatRequest,
    MessageStop,
    ProviderId,
    ResolvedModel,
    StreamError,
    StreamEvent,
    TenantPolicy,
    Usage,
)
from routeproof.driver import Mode, OpenStream, begin_admitted, close_events, drive
from routeproof.ports import Ports

__all__ = ["ProviderStream", "StreamInterrupted"]

DEADLINE_ELAPSED = "the caller's deadline elapsed"


class StreamInterrupted(Exception):
    """Internal: the committed attempt ended without MessageStop (restart_on_interrupt only)."""


class ProviderStream:
    """An async iterator of ``StreamEvent``s for one streaming call, with its attempt history.

    ``attempts`` grows as attempts finish; ``provider``/``model`` name the provider the stream
    committed to; ``interrupted`` is True when the stream ended with a StreamError after its first
    token; ``first_token_ms`` is the committed attempt's time to first token;
    ``dropped_parameters`` names the request parameters that model does not accept and that were
    therefore left out (as ``ProviderResponse.dropped_parameters`` does for a plain call).
    """

    def __init__(
        self,
        ports: Ports,
        req: ChatRequest,
        resolved: ResolvedModel,
        deadline: float,
        policy: TenantPolicy,
        *,
        session_id: str,
        restart_on_interrupt: bool,
    ) -> None:
        self.attempts: tuple[AttemptRecord, ...] = ()
        self.provider: ProviderId | None = None
        self.model = ""
        self.interrupted = False
        self.first_token_ms: int | None = None
        self.dropped_parameters: tuple[str, ...] = ()
        self.cost_pico_usd: int | None = None  # the completed stream's exact cost; None = unpriced or not completed
        self.budget_turn_warning = False  # some attempt's worst case exceeded the per-turn threshold
        self._ports = ports
        self._req = req
        self._resolved = resolved
        self._deadline = deadline
        self._policy = policy
        self._session_id = session_id
        self._restart = restart_on_interrupt
        self._events = self._run()

    def __aiter__(self) -> ProviderStream:
        return self

    async def __anext__(self) -> StreamEvent:
        return await self._events.__anext__()

    async def aclose(self) -> None:
        """Stop the stream: the open provider response is closed and its reservation settled."""
        await self._events.aclose()

    # --- the call ------------------------------------------------------------------------------

    async def _run(self) -> AsyncGenerator[StreamEvent, None]:
        restarts = 0
        while True:
            try:
                async with aclosing(self._one_call(hold_back=self._restart)) as events:
                    async for event in events:
                        yield event
                return
            except StreamInterrupted:
                now_ms = loop_ms(asyncio.get_running_loop().time())
                if not may_restart_turn(restarts, now_ms, deadline_ms(self._deadline)):
                    self.interrupted = True
                    self._count_outcome(CallOutcome.ALL_FAILED)  # settled: cut, and no restart is left
                    yield StreamError(message=f"{STREAM_INTERRUPTED}: the turn was retried from scratch and cut again")
                    return
                restarts += 1

    def _count_outcome(self, outcome: CallOutcome) -> None:
        """``ai_router_calls_total`` and ``ai_router_attempts_per_call`` for this settled stream."""
        if self.provider is not None:
            self._ports.metrics.call(self.provider, self.model, outcome.value, len(self.attempts))

    def _progress(self, records: tuple[AttemptRecord, ...]) -> None:
        self.attempts = records

    async def _one_call(self, *, hold_back: bool) -> AsyncGenerator[StreamEvent, None]:
        """One run of the driver loop (driver.py), then the committed attempt's relay."""
        ports = self._ports
        call, state, action = await begin_admitted(
            ports, self._req, self._resolved, deadline=self._deadline, policy=self._policy, session_id=self._session_id
        )
        committed = await drive(
            ports, call, state, action, Mode.STREAM, deadline=self._deadline, progress=self._progress
        )
        assert committed.opened is not None  # Mode.STREAM commits an open stream, with its slot
        assert committed.slot is not None
        with committed.slot:  # held until the committed stream ends
            entry = committed.succeed.entry
            self.provider, self.model = entry.provider, entry.model
            self.first_token_ms = committed.opened.first_token_ms
            report = getattr(ports.providers[entry.provider], "dropped_parameters", None)
            self.dropped_parameters = report(self._req, self.model) if report is not None else ()
            self.budget_turn_warning = call.turn_warning
            async with aclosing(self._relay(committed.opened, call.now_ms, hold_back=hold_back)) as relayed:
                async for out in relayed:
                    yield out

    async def _relay(
        self, opened: OpenStream, now_ms: Callable[[], int], *, hold_back: bool
    ) -> AsyncGenerator[StreamEvent, None]:
        """Relay the committed attempt's events: held back as core says, one end event."""
        ports = self._ports
        kind, entry_model = self.provider, self.model
        assert kind is not None
        reservation, stream = opened.reservation, opened.events
        held: list[StreamEvent] = []  # a tool block in progress (or, with hold_back, the whole turn)
        in_tool = False
        settled = False
        cut_by_deadline = False
        event: StreamEvent | None = opened.first

        async def settle(
            end: StreamEnd,
            usage_cost_pico_usd: int = 0,
            reported: int | None = None,
            *,
            usage: Usage | None = None,
            error: str | None = None,
        ) -> None:
            nonlocal settled
            reserved = 0 if reservation is None else reservation.amount_pico_usd
            settlement = settle_stream(
                end,
                reserved_pico_usd=reserved,
                usage_cost_pico_usd=usage_cost_pico_usd,
                reported_cost_pico_usd=reported,
            )
            try:
                await ports.ledger.settle(reservation, booked_pico_usd=settlement.booked_pico_usd, succeeded=True)
            finally:
                opened.span.end(usage=usage, response_model=entry_model, error=error)  # the usage just priced
            stream_ended = getattr(ports.metrics, "stream_ended", None)  # optional: see ports.Instrumentation
            if stream_ended is not None:
                failed = None if end is StreamEnd.COMPLETED else end.value
                stream_ended(kind, entry_model, now_ms() - opened.issued_at_ms, failed)
            ports.health.apply(kind, settlement.health, now_ms())
            settled = True
            # The call's one terminal row, counted when the stream is settled (not at its first token):
            # a cut stream is a final failure, unless a restart of the turn will settle it later.
            if end is StreamEnd.COMPLETED:
                self._count_outcome(CallOutcome.SUCCEEDED)
            elif end is not StreamEnd.ABANDONED and not hold_back:
                self._count_outcome(CallOutcome.ALL_FAILED)
            # last, after the money and the counts: the rate-limit place keeps the usage the stream
            # reported, else its estimate (core/rate_limit.py)
            await ports.traffic.settle(opened.ticket, usage, ports.ledger.wall_ms())

        try:
            while True:
                if event is None:
                    try:
                        async with asyncio.timeout_at(self._deadline):
                            event = await anext(aiter(stream))
                    except TimeoutError:
                        ports.metrics.deadline()
                        cut_by_deadline = True
                        event = StreamError(message=f"{STREAM_INTERRUPTED}: {DEADLINE_ELAPSED}")
                    except StopAsyncIteration:
                        event = StreamError(message=f"{STREAM_INTERRUPTED}: the stream ended without MessageStop")
                    except Exception as exc:  # the committed attempt's boundary: it ends in one StreamError
                        detail = f"{type(exc).__name__}: {str(exc)[:MAX_DETAIL_CHARS]}"
                        event = StreamError(message=f"{STREAM_INTERRUPTED}: {detail}")
                if isinstance(event, MessageStop):
                    ports.metrics.usage(kind, entry_model, event.usage)
                    self.cost_pico_usd = ports.ledger.known_cost(kind, entry_model, event.usage)
                    await settle(StreamEnd.COMPLETED, self.cost_pico_usd or 0, usage=event.usage)
                    for out in held:
                        yield out
                    yield event
                    return
                if isinstance(event, StreamError):
                    # a usage the provider reported before the cut is what it bills (core/stream_rules.py)
                    if event.usage is not None:
                        ports.metrics.usage(kind, entry_model, event.usage)
                    reported = ports.ledger.known_cost(kind, entry_model, event.usage)
                    end = StreamEnd.DEADLINE if cut_by_deadline else StreamEnd.INTERRUPTED
                    await settle(end, reported=reported, usage=event.usage, error=event.message)
                    if hold_back:
                        raise StreamInterrupted(event.message)
                    self.interrupted = True
                    message = event.message
                    if not message.startswith(STREAM_INTERRUPTED):
                        message = f"{STREAM_INTERRUPTED}: {message}"
                    yield StreamError(message=message)  # partial tool JSON in `held` is dropped
                    return
                decision = hold_back_rule(event, in_tool=in_tool, whole_turn=hold_back)  # core/stream_rules.py
                in_tool = decision.in_tool
                if decision.hold is Hold.EMIT:
                    yield event
                else:
                    held.append(event)
                    if decision.hold is Hold.RELEASE:
                        for out in held:
                            yield out
                        held.clear()
                event = None
        finally:
            if not settled:  # the consumer stopped reading (or was cancelled)
                await settle(StreamEnd.ABANDONED)
            await close_events(stream)
