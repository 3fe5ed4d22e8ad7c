"""Streaming calls: the kernel's retry/failover rules up to the first token, committed after it.

Up to the first event of an attempt, a streaming call is a ``call_provider`` call: the same kernel
decides retries, failover, sleeps, the 30 s budget, the caller's deadline, tiers and budgets, and a
failure before the first token (an in-band error event included) is one more failed attempt.
At the first event the call is committed to that provider: the rest is relayed as it arrives,
bounded by the caller's deadline, and nothing is ever spliced in from another provider. A drop, a
malformed event or the deadline then ends the stream with ``StreamError("stream interrupted: …")``.

Every stream ends with exactly one ``MessageStop`` (carrying usage) or exactly one ``StreamError``.
Tool calls are held back until their block closes, so a consumer never sees partial tool JSON from
an interrupted stream. Streamed usage is committed to the ledger; a stream cut before its usage
arrived commits the worst case that was reserved for it, never zero.

With ``restart_on_interrupt=True`` the whole turn is held back until its ``MessageStop`` and, if
the stream is interrupted after its first token, the turn is retried from scratch (within the
caller's deadline): the caller then sees one complete answer or one ``StreamError``, at the cost of
seeing no token before the answer is complete.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from typing import TYPE_CHECKING

from routeproof.call import Call
from routeproof.clock import deadline_ms, loop_ms
from routeproof.clock import timeout_at as precise_timeout_at
from routeproof.core import kernel
from routeproof.core.boundary import MAX_DETAIL_CHARS
from routeproof.core.kernel import (
    AttemptFailed,
    AttemptRefused,
    AttemptSucceeded,
    CallProvider,
    Event,
    Sleep,
    SleepDone,
    Succeed,
)
from routeproof.core.ledger import Reservation
from routeproof.core.stream_rules import StreamEnd, may_restart_turn, settle_stream
from routeproof.core.types import (
    AttemptFailure,
    AttemptRecord,
    BlockStop,
    ChatRequest,
    FailureKind,
    MessageStop,
    ProviderId,
    ResolvedModel,
    StreamError,
    StreamEvent,
    TenantPolicy,
    ToolUseDelta,
    ToolUseStart,
)
from routeproof.errors import ProviderCallFailed
from routeproof.observe import attempt_span

if TYPE_CHECKING:
    from routeproof.router import Router

__all__ = ["ProviderStream", "StreamInterrupted"]

INTERRUPTED = "stream interrupted"
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
        router: Router,
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
        self._router = router
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
                    self._count_outcome("all_failed")  # the call is settled: cut, and no restart is left
                    yield StreamError(message=f"{INTERRUPTED}: the turn was retried from scratch and cut again")
                    return
                restarts += 1

    def _count_outcome(self, outcome: str) -> None:
        """``ai_router_calls_total`` and ``ai_router_attempts_per_call`` for this settled stream."""
        if self.provider is not None:
            self._router._metrics.call(self.provider, self.model, outcome, len(self.attempts))

    async def _one_call(self, *, hold_back: bool) -> AsyncGenerator[StreamEvent, None]:
        router = self._router
        call, state, action = router._begin(self._req, self._resolved, self._deadline, self._policy, self._session_id)
        while True:
            event: Event
            if isinstance(action, CallProvider):
                # admission (admission.py): queue for a local slot; time queued is not the provider's
                state, action, slot = await router._admission.admit(state, action)
                if slot is None or not isinstance(action, CallProvider):
                    continue  # the call ended while it queued: the kernel's Fail is handled below
                with slot:  # held until the attempt fails or the committed stream ends
                    opened = await self._open(call, action)
                    if not isinstance(opened, tuple):
                        event = opened
                    else:
                        first, stream, reservation, first_token_ms = opened
                        event = AttemptSucceeded(now_ms=call.now_ms(), first_token_ms=first_token_ms)
                        before = len(state.records)
                        state, action = kernel.step(state, event)
                        router._observe(state.records[before:], call.now_ms(), success_settled_later=True)
                        assert isinstance(action, Succeed)  # the kernel always accepts a first token
                        self.attempts = action.records
                        self.provider, self.model = action.entry.provider, action.entry.model
                        self.first_token_ms = first_token_ms
                        report = getattr(router._providers[self.provider], "dropped_parameters", None)
                        self.dropped_parameters = report(self._req, self.model) if report is not None else ()
                        self.budget_turn_warning = call.turn_warning
                        relay = self._relay(
                            call, action.entry.provider, first, stream, reservation=reservation, hold_back=hold_back
                        )
                        async with aclosing(relay) as relayed:
                            async for out in relayed:
                                yield out
                        return
            elif isinstance(action, Sleep):
                await asyncio.sleep(action.duration_ms / 1000)
                event = SleepDone(now_ms=call.now_ms())
            elif isinstance(action, Succeed):  # pragma: no cover - a success is always handled above
                raise AssertionError("the kernel succeeded without a first token")
            else:
                self.attempts = action.records
                raise call.fail(action)
            before = len(state.records)
            state, action = kernel.step(state, event)
            self.attempts = state.records
            router._observe(state.records[before:], call.now_ms())

    async def _open(
        self, call: Call, action: CallProvider
    ) -> AttemptRefused | AttemptFailed | tuple[StreamEvent, AsyncIterator[StreamEvent], Reservation | None, int]:
        """Start one streaming attempt and wait for its first event, within the attempt's timeout."""
        router = self._router
        entry = action.entry
        begun = await call.begin(action)
        if isinstance(begun, AttemptRefused | AttemptFailed):
            return begun
        reservation = begun
        stream: AsyncIterator[StreamEvent] | None = None
        keep_open = False
        settled = False
        try:
            try:
                provider = router._providers[entry.provider]
                timeout_at = (action.issued_at_ms + action.timeout_ms) / 1000
                stream = provider.stream(
                    self._req, entry.model, timeout_at=timeout_at, idle_timeout_s=router._stream_idle_timeout_s
                )
                async with precise_timeout_at(timeout_at):  # clock.py: the final wake-up is short
                    with attempt_span(entry.provider, entry.model, action.attempt_num, parent=call.trace_context):
                        first = await anext(aiter(stream))  # the request (and its traceparent) goes out here
            except ProviderCallFailed as exc:
                failure = exc.failure
            except TimeoutError:
                failure = AttemptFailure(kind=FailureKind.ATTEMPT_TIMEOUT, message="no first event in time")
            except StopAsyncIteration:
                failure = AttemptFailure(kind=FailureKind.STREAM_ERROR, message="stream ended before any event")
            except Exception as exc:  # the attempt boundary: core's table classifies it (never carries on)
                settled = True
                return await call.boundary(action, reservation, exc)
            else:
                if not isinstance(first, StreamError):
                    keep_open = True  # committed: _relay owns the stream and the reservation now
                    return first, stream, reservation, call.now_ms() - action.issued_at_ms
                # defensive: providers raise STREAM_ERROR for a first in-band error instead
                failure = AttemptFailure(kind=FailureKind.STREAM_ERROR, message=first.message)
            settled = True
            return await call.failed(action, reservation, failure)
        finally:
            if not keep_open:
                if not settled:  # cancelled while waiting for the first event: nothing was billed
                    await router._settle(reservation, booked_pico_usd=0, succeeded=False)
                if stream is not None:
                    await _close(stream)

    async def _relay(
        self,
        call: Call,
        kind: ProviderId,
        first: StreamEvent,
        stream: AsyncIterator[StreamEvent],
        *,
        reservation: Reservation | None,
        hold_back: bool,
    ) -> AsyncGenerator[StreamEvent, None]:
        """Relay the committed attempt's events: tool blocks held until they close, one end event."""
        router = self._router
        entry_model = self.model
        held: list[StreamEvent] = []  # a tool block in progress (or, with hold_back, the whole turn)
        in_tool = False
        settled = False
        cut_by_deadline = False
        event: StreamEvent | None = first

        async def settle(end: StreamEnd, usage_cost_pico_usd: int = 0) -> None:
            nonlocal settled
            settlement = settle_stream(
                end, reserved_pico_usd=_reserved(reservation), usage_cost_pico_usd=usage_cost_pico_usd
            )
            await router._settle(reservation, booked_pico_usd=settlement.booked_pico_usd, succeeded=True)
            router._health_effect(kind, settlement.health, call.now_ms())
            settled = True
            # The call's one terminal row, counted when the stream is settled (not at its first token):
            # a cut stream is a final failure, unless a restart of the turn will settle it later.
            if end is StreamEnd.COMPLETED:
                self._count_outcome("succeeded")
            elif end is not StreamEnd.ABANDONED and not hold_back:
                self._count_outcome("all_failed")

        try:
            while True:
                if event is None:
                    try:
                        async with asyncio.timeout_at(self._deadline):
                            event = await anext(aiter(stream))
                    except TimeoutError:
                        router._metrics.deadline()
                        cut_by_deadline = True
                        event = StreamError(message=f"{INTERRUPTED}: {DEADLINE_ELAPSED}")
                    except StopAsyncIteration:
                        event = StreamError(message=f"{INTERRUPTED}: the stream ended without MessageStop")
                    except Exception as exc:  # the committed attempt's boundary: it ends in one StreamError
                        detail = f"{type(exc).__name__}: {str(exc)[:MAX_DETAIL_CHARS]}"
                        event = StreamError(message=f"{INTERRUPTED}: {detail}")
                if isinstance(event, MessageStop):
                    self.cost_pico_usd = router._known_cost(kind, entry_model, event.usage)
                    await settle(StreamEnd.COMPLETED, self.cost_pico_usd or 0)
                    for out in held:
                        yield out
                    yield event
                    return
                if isinstance(event, StreamError):
                    await settle(StreamEnd.DEADLINE if cut_by_deadline else StreamEnd.INTERRUPTED)
                    if hold_back:
                        raise StreamInterrupted(event.message)
                    self.interrupted = True
                    message = (
                        event.message if event.message.startswith(INTERRUPTED) else f"{INTERRUPTED}: {event.message}"
                    )
                    yield StreamError(message=message)  # partial tool JSON in `held` is dropped
                    return
                if hold_back:
                    held.append(event)
                elif isinstance(event, ToolUseStart):
                    in_tool = True
                    held.append(event)
                elif in_tool and isinstance(event, ToolUseDelta | BlockStop):
                    held.append(event)
                    if isinstance(event, BlockStop):
                        for out in held:
                            yield out
                        held.clear()
                        in_tool = False
                else:
                    yield event
                event = None
        finally:
            if not settled:  # the consumer stopped reading (or was cancelled)
                await settle(StreamEnd.ABANDONED)
            await _close(stream)


def _reserved(reservation: Reservation | None) -> int:
    return 0 if reservation is None else reservation.amount_pico_usd


async def _close(stream: AsyncIterator[StreamEvent]) -> None:
    aclose = getattr(stream, "aclose", None)
    if aclose is not None:
        await aclose()
