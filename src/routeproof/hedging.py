"""The hedge race (issue 32 item 4): the shell's side of budgeted hedging. It decides nothing.

``core/hedge.py`` decides whether, when and where a call hedges its pending attempt; this module
performs it. The driver hands a hedge-enabled call's attempt to :func:`hedged`, which

1. starts the kernel's attempt (``driver.perform``) and asks ``core.hedge.decide``: never -> the
   attempt runs alone; later -> wait until then (or until the attempt ends); now -> take a free local
   slot for the target, spend the alias's token and start the hedge, a second ``perform`` through a
   sibling :class:`~routeproof.call.Call` (its own rate-limit ticket and ledger reservation: the
   ledger reserves the hedge's worst case before anything is sent, and a refusal means no hedge);
2. keeps the first success (for a stream: the first attempt to deliver its first event, before
   anything reaches the caller); an attempt that fails while the other runs waits for the other,
   unless core says the failure ends the race (``waits_for_the_other``);
3. cancels the other attempt, which books its reserved worst case (``core.hedge.cancelled_booking_pico_usd``;
   an answer it already read is booked exactly), and folds it into the kernel state
   (``core.hedge.fold_race``, whose ``loser_status`` records it ``HEDGE_CANCELLED``, or ``FAILED_OVER`` for one
   that failed; a tie goes to the primary: ``taken_first``);
   the deciding attempt's event then goes to the kernel like any attempt's.

The extra-request bucket is per process and per alias (each replica budgets what it sends).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from typing import Protocol, TypeVar

from routeproof.admission import Slot
from routeproof.call import Call
from routeproof.clock import sleep_until
from routeproof.core.hedge import (
    HedgeDecision,
    HedgeLater,
    HedgeNever,
    HedgeNow,
    HedgePolicy,
    NeverReason,
    Runner,
    decide,
    delay_ms,
    fold_race,
    p95_ms,
    taken_first,
    waits_for_the_other,
)
from routeproof.core.kernel import AttemptFailed, AttemptRefused, CallProvider, Event, KernelState
from routeproof.core.latency import judged
from routeproof.core.ledger import Reservation
from routeproof.core.stream_rules import StreamEnd, settle_stream
from routeproof.core.types import StreamEvent
from routeproof.ports import Ports
from routeproof.traffic_store.protocol import RateTicket

__all__ = ["Opened", "abandon", "hedge_applies", "hedged"]

logger = logging.getLogger("routeproof")


class Opened(Protocol):
    """What a streamed attempt keeps open after its first event (the driver's ``OpenStream``)."""

    @property
    def reservation(self) -> Reservation | None: ...

    @property
    def events(self) -> AsyncIterator[StreamEvent]: ...

    @property
    def ticket(self) -> RateTicket | None: ...


OpenedT = TypeVar("OpenedT", bound=Opened)
Perform = Callable[[Call, CallProvider], Coroutine[None, None, tuple[Event, OpenedT | None]]]
"""The driver's ``perform`` of one attempt through a call's bookkeeping (its mode bound)."""
Close = Callable[[OpenedT], Awaitable[None]]
"""The driver's ``close_opened``: a loser's open stream (its span and response) closed."""


async def abandon(ports: Ports, opened: OpenedT, close: Close[OpenedT]) -> None:
    """End a committed stream that nobody will relay (a race's loser, a call cancelled after its
    commit): cut before its usage, it books the reserved worst case (core.stream_rules), its
    rate-limit place keeps its estimate, then it is closed."""
    reserved = 0 if opened.reservation is None else opened.reservation.amount_pico_usd
    settlement = settle_stream(StreamEnd.ABANDONED, reserved_pico_usd=reserved, usage_cost_pico_usd=0)
    await ports.ledger.settle(opened.reservation, booked_pico_usd=settlement.booked_pico_usd, succeeded=True)
    await ports.traffic.settle(opened.ticket, None, ports.ledger.wall_ms())  # no usage came: the estimate
    await close(opened)


def hedge_applies(ports: Ports, call: Call) -> bool:
    """Whether the call's alias hedges and the call has not hedged yet (one hedge per call)."""
    return not call.hedged and ports.traffic.hedge_policy(call.req.alias) is not None


async def _decide(
    ports: Ports, call: Call, state: KernelState, action: CallProvider, policy: HedgePolicy
) -> HedgeDecision:
    now_ms = call.now_ms()
    latencies = tuple(latency for _, latency in judged(ports.health.latency(), action.entry.provider, now_ms))
    wait_ms = delay_ms(policy, p95_ms(latencies) if policy.p95 else None)
    others = tuple(e.provider for e in state.plan.chain if e.provider != action.entry.provider)
    retry_spent = await ports.traffic.retry_spent(others)  # the store's await comes first: ...
    return decide(
        policy,
        state,
        action,
        ports.traffic.config.members,
        now_ms=now_ms,
        wait_ms=wait_ms,
        bucket_milli=ports.traffic.hedge_tokens(call.req.alias),  # ... the bucket read after it is spent at once
        retry_spent=retry_spent,
        hedged=call.hedged,
    )


def _sibling(call: Call) -> Call:
    """The hedge's own bookkeeping (ticket, reservation, response), in the call's trace."""
    sibling = Call(call.ports, call.req, call.session_id, call.chain_plan)
    sibling.skipped = []
    sibling.trace_context = call.trace_context
    sibling.racing = True
    return sibling


async def _until(task: asyncio.Task[tuple[Event, OpenedT | None]], at_ms: int) -> bool:
    """Wait until ``at_ms`` or the task's end; whether the task ended."""
    timer = asyncio.ensure_future(sleep_until(at_ms))  # clock.py: the instant, converted once
    try:
        await asyncio.wait({task, timer}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        timer.cancel()
    return task.done()


async def _alone(
    task: asyncio.Task[tuple[Event, OpenedT | None]], state: KernelState, slot: Slot
) -> tuple[KernelState, Event, OpenedT | None, Slot | None]:
    try:
        event, opened = await task
    except BaseException:
        slot.release()
        raise
    if opened is None:
        slot.release()
        return state, event, None, None
    return state, event, opened, slot


async def hedged(
    ports: Ports,
    call: Call,
    state: KernelState,
    action: CallProvider,
    *,
    perform: Perform[OpenedT],
    close: Close[OpenedT],
    slot: Slot,
) -> tuple[KernelState, Event, OpenedT | None, Slot | None]:
    """Perform ``action``, hedged as core decides; the kernel state (the race folded in), the
    deciding attempt's event, its open stream and the slot it keeps (see the module docstring)."""
    alias = call.req.alias
    policy = ports.traffic.hedge_policy(alias)
    assert policy is not None  # hedge_applies() said so
    if not call.hedge_earned:
        call.hedge_earned = True
        ports.traffic.hedge_call(alias, policy)
    decision = await _decide(ports, call, state, action, policy)
    if isinstance(decision, HedgeNever):  # the common case: no task, no race
        opened = None
        try:
            event, opened = await perform(call, action)
        finally:
            if opened is None:
                slot.release()
        return state, event, opened, (None if opened is None else slot)
    call.racing = True
    primary = asyncio.create_task(perform(call, action))
    try:
        while isinstance(decision, HedgeLater):
            if await _until(primary, decision.at_ms):
                return await _alone(primary, state, slot)
            decision = await _decide(ports, call, state, action, policy)
        if isinstance(decision, HedgeNever):
            return await _alone(primary, state, slot)
        hedge_slot = ports.admission.try_admit(decision.action.entry.provider)
        if hedge_slot is None:
            logger.info("router_hedge_not_sent alias=%s reason=%s", alias, NeverReason.NO_SLOT.value)
            return await _alone(primary, state, slot)
        ports.traffic.hedge_sent(alias)
        call.hedged = True
        return await _race(
            ports=ports,
            call=call,
            state=state,
            action=action,
            decision=decision,
            perform=perform,
            close=close,
            primary=primary,
            slot=slot,
            hedge_slot=hedge_slot,
            policy=policy,
        )
    finally:
        call.racing = False
        if not primary.done():  # only when this coroutine itself is cancelled
            primary.cancel()


async def _race(
    *,
    ports: Ports,
    call: Call,
    state: KernelState,
    action: CallProvider,
    decision: HedgeNow,
    perform: Perform[OpenedT],
    close: Close[OpenedT],
    primary: asyncio.Task[tuple[Event, OpenedT | None]],
    slot: Slot,
    hedge_slot: Slot,
    policy: HedgePolicy,
) -> tuple[KernelState, Event, OpenedT | None, Slot | None]:
    hedge = decision.action
    sibling = _sibling(call)
    second = asyncio.create_task(perform(sibling, hedge))
    runs: dict[asyncio.Task[tuple[Event, OpenedT | None]], tuple[CallProvider, Call, Slot]] = {
        primary: (action, call, slot),
        second: (hedge, sibling, hedge_slot),
    }
    failed: tuple[CallProvider, Event] | None = None  # an attempt that failed while the other ran
    try:
        while True:
            done, _ = await asyncio.wait(set(runs), return_when=asyncio.FIRST_COMPLETED)
            first = taken_first(primary_ended=primary in done, hedge_ended=second in done)
            task = primary if first is Runner.PRIMARY else second
            run, owner, run_slot = runs.pop(task)
            event, opened = task.result()
            if isinstance(event, AttemptRefused) and run is hedge:  # never sent (the ledger, a limit)
                hedge_slot.release()
                ports.traffic.hedge_refund(call.req.alias, policy)
                logger.info("router_hedge_not_sent alias=%s reason=%s", call.req.alias, NeverReason.MONEY.value)
                if failed is not None:  # the primary failed earlier: its event goes to the kernel alone
                    return state, failed[1], None, None
                return await _alone(primary, state, slot)
            others_running = bool(runs)
            if (
                isinstance(event, AttemptFailed)
                and others_running
                and waits_for_the_other(event.failure, context_window_failover=state.plan.context_window_failover)
            ):
                run_slot.release()
                failed = (run, event)
                continue
            # this attempt decides the call: the other is cancelled (or failed earlier)
            other = hedge if run is action else action
            if runs:
                (other_task,) = runs
                await _cancel(ports, other_task, runs[other_task][2], close)
                runs.clear()
                folded = fold_race(state, hedge, kept=run, other=other, other_failure=None, other_now_ms=call.now_ms())
            else:
                assert failed is not None
                assert failed[0] is other
                failed_event = failed[1]
                assert isinstance(failed_event, AttemptFailed)
                folded = fold_race(
                    state,
                    hedge,
                    kept=run,
                    other=other,
                    other_failure=failed_event.failure,
                    other_now_ms=failed_event.now_ms,
                )
            if owner is not call:  # the hedge decided: its answer and cost are the call's
                _adopt(call, owner)
            if opened is None:
                run_slot.release()
                return folded, event, None, None
            return folded, event, opened, run_slot
    finally:
        for task, (_, _, run_slot) in runs.items():  # this coroutine was cancelled: end both attempts
            task.cancel()
            run_slot.release()


async def _cancel(
    ports: Ports, task: asyncio.Task[tuple[Event, OpenedT | None]], run_slot: Slot, close: Close[OpenedT]
) -> None:
    """Cancel the loser and wait for it to settle (it books its reservation: driver.perform)."""
    try:
        if not task.done():
            task.cancel()
        try:
            _, opened = await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():  # this race itself is cancelled: propagate
                raise
            opened = None  # the loser's own cancellation, as asked
        if opened is not None:  # a stream that opened too
            await abandon(ports, opened, close)
    finally:
        run_slot.release()


def _adopt(call: Call, hedge_call: Call) -> None:
    """The hedge won: the call's response, cost and warnings are the hedge's."""
    call.response = hedge_call.response
    call.cost_pico_usd = hedge_call.cost_pico_usd
    call.turn_warning = call.turn_warning or hedge_call.turn_warning
    call.last_kind, call.last_position = hedge_call.last_kind, hedge_call.last_position
