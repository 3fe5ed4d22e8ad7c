"""The one driver loop: ask the kernel what to do, do it, tell the kernel what happened.

Both entry points run it: ``Router.call_provider`` (:func:`complete`) and the streaming call
(streaming.py). A call is planned once (:func:`begin`: the chain, then the kernel's plan), then
:func:`drive` performs the kernel's actions until it succeeds or fails:

* ``CallProvider``: queue for an in-flight slot (admission.py), then :func:`perform` the attempt
  -- the one reserve / timeout / settle dance, within the kernel's absolute ``timeout_at_ms``;
* ``Sleep``: sleep until the kernel's ``sleep_until_ms`` (clock.py converts the instant);
* ``Succeed``: hand back the committed attempt (:class:`Committed`);
* ``Fail``: raise the one ``RouterError`` core's tables name (call.py, core/outcomes.py).

A plain call and a streamed one differ only in what an answered attempt keeps open: nothing (the
response is read whole), or the stream after its first event (:class:`OpenStream`) with its
in-flight slot, for the relay to own. Every service comes from the ports (ports.py).
"""

from __future__ import annotations

import asyncio
import enum
import operator
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping
from dataclasses import dataclass, replace

from routeproof.admission import Slot
from routeproof.call import Call
from routeproof.clock import deadline_ms, loop_ms, sleep_until, timeout_at_ms
from routeproof.core import kernel
from routeproof.core.capabilities import (
    CapabilityTable,
    ModelCapabilities,
    lacking_capabilities,
    needed_capabilities,
)
from routeproof.core.classify import HealthEffect, health_effect
from routeproof.core.input_size import input_tokens_estimate
from routeproof.core.kernel import (
    Action,
    AttemptFailed,
    AttemptRefused,
    AttemptSucceeded,
    CallProvider,
    Event,
    Fail,
    KernelState,
    Sleep,
    SleepDone,
    Succeed,
)
from routeproof.core.ledger import Reservation
from routeproof.core.routing import ChainPlan, build_chain, call_plan, context_misfits, plan_chain
from routeproof.core.types import (
    AttemptFailure,
    AttemptFailureKind,
    AttemptRecord,
    ChainEntry,
    ChatRequest,
    ProviderId,
    ProviderResponse,
    ResolvedModel,
    StreamError,
    StreamEvent,
    TenantPolicy,
)
from routeproof.deadline import check_deadline, past_deadline_hint
from routeproof.errors import DeadlineExceeded, NoEligibleProvider, ProviderCallFailed, RouterError
from routeproof.hedging import abandon, hedge_applies, hedged
from routeproof.observe import AttemptSpan, attempt_span
from routeproof.ports import Ports
from routeproof.providers.capabilities import default_capabilities
from routeproof.traffic_store.answer_headers import HeaderSink
from routeproof.traffic_store.protocol import RateTicket

__all__ = [
    "Committed",
    "Mode",
    "OpenStream",
    "begin",
    "begin_admitted",
    "close_events",
    "close_opened",
    "complete",
    "drive",
    "observe",
    "perform",
]


class Mode(enum.Enum):
    """What an attempt asks the provider for."""

    COMPLETE = "complete"  # the whole response
    STREAM = "stream"  # events, committed at the first one


@dataclass(frozen=True, slots=True, kw_only=True)
class OpenStream:
    """What a streamed attempt keeps open after its first event: the relay takes it over."""

    first: StreamEvent
    events: AsyncIterator[StreamEvent]
    reservation: Reservation | None
    first_token_ms: int
    issued_at_ms: int  # when the attempt was sent (the call's clock): the stream's whole duration runs from it
    span: AttemptSpan  # handed on at the first event: the relay ends it with the stream's final usage
    ticket: RateTicket | None = None  # its rate-limit place, settled with the usage the stream reports


@dataclass(frozen=True, slots=True, kw_only=True)
class Committed:
    """The kernel's success, and (streaming) the open stream with the slot it holds until it ends."""

    succeed: Succeed
    opened: OpenStream | None
    slot: Slot | None


def _capabilities_of(ports: Ports, entry: ChainEntry) -> ModelCapabilities | None:
    """What ``entry``'s model accepts: the provider's own table when it was given one, else the
    shipped rows + the user's; None for a name with no registered kind."""
    table = getattr(ports.providers.get(entry.provider), "_capabilities", None)
    if not isinstance(table, CapabilityTable):
        table = default_capabilities()
    kind = entry.provider.kind
    return None if kind is None else table.lookup(kind, entry.model)


def _lacking(ports: Ports, req: ChatRequest, chain: tuple[ChainEntry, ...]) -> dict[ProviderId, str]:
    """Each chain entry whose model lacks a capability ``req`` needs (images, documents, ...), named."""
    if not needed_capabilities(req):
        return {}
    lacking: dict[ProviderId, str] = {}
    for entry in chain:
        caps, kind = _capabilities_of(ports, entry), entry.provider.kind
        if caps is None or kind is None:
            continue  # a name with no registered kind: nothing to look up
        missing = lacking_capabilities(req, caps, kind)
        if missing:
            lacking[entry.provider] = ", ".join(cap.value for cap in missing)
    return lacking


_PROVIDER = operator.attrgetter("provider")


def _bound_chain(chain: tuple[ChainEntry, ...], ids: Mapping[str, ProviderId]) -> tuple[ChainEntry, ...]:
    """Each entry of ``chain`` with its provider bound to the registered instance (the entry itself when
    it already is). A loop, not a comprehension calling a function per entry: it runs per call."""
    bound_chain = []
    for entry in chain:
        bound = ids.get(entry.provider, entry.provider)
        bound_chain.append(entry if bound is entry.provider else replace(entry, provider=bound))
    return tuple(bound_chain)


def _misfits(ports: Ports, req: ChatRequest, chain: tuple[ChainEntry, ...]) -> dict[ProviderId, str]:
    """Each chain entry whose model's context window cannot hold ``req`` (core/routing.context_misfits)."""
    windows = {}
    for entry in chain:
        caps = _capabilities_of(ports, entry)
        windows[entry.provider] = None if caps is None else caps.context_window_tokens
    return context_misfits(chain, windows, input_tokens=input_tokens_estimate(req), output_tokens=req.max_tokens)


def _plan(ports: Ports, req: ChatRequest, resolved: ResolvedModel, policy: TenantPolicy, now_ms: int) -> ChainPlan:
    planning = ports.planning
    chain = _bound_chain(build_chain(resolved, policy), planning.ids)  # each name's instance: its kind known
    # core/balance.py (groups' order) and core/affinity.py (a cacheable prefix's pinned deployment)
    chain = ports.traffic.order(chain, ports.traffic.draws(ports.draw, chain), req, now_ms)
    return plan_chain(
        chain,
        policy.privacy_tier,
        endpoint_tiers=planning.endpoint_tiers,
        configured=frozenset(ports.providers),
        health=ports.health.snapshot(),
        now_ms=now_ms,
        cooling_policy=planning.cooling,
        slow=ports.health.demote_slow(frozenset(map(_PROVIDER, chain)), now_ms),
        lacking=_lacking(ports, req, chain),
        misfits=_misfits(ports, req, chain),
    )


def begin(
    ports: Ports,
    req: ChatRequest,
    resolved: ResolvedModel,
    *,
    deadline: float,
    policy: TenantPolicy,
    session_id: str,
) -> tuple[Call, KernelState, Action]:
    """Plan the chain once, hand the kernel its plan, and get the first action."""
    now_s = asyncio.get_running_loop().time()
    check_deadline(deadline, now_s)
    started_ms = loop_ms(now_s)
    chain_plan = _plan(ports, req, resolved, policy, started_ms)
    planning = ports.planning
    plan = call_plan(
        chain_plan,
        policy,
        started_at_ms=started_ms,
        deadline_at_ms=deadline_ms(deadline),
        backoff=planning.backoff,
        attempt_timeout_ms=planning.attempt_timeout_ms,
        provider_timeouts_ms=planning.provider_timeouts_ms,  # read into the plan's tuple there: no copy first
        max_attempts_per_provider=planning.max_attempts_per_provider,
    )
    state, action = kernel.start(plan, started_ms)
    return Call(ports, req, session_id, chain_plan), state, action


async def begin_admitted(
    ports: Ports,
    req: ChatRequest,
    resolved: ResolvedModel,
    *,
    deadline: float,
    policy: TenantPolicy,
    session_id: str,
) -> tuple[Call, KernelState, Action]:
    """:func:`begin`, once a deployment of the chain has room under its declared rate limits.

    When every deployment is at its limit the call queues (FIFO) until core's
    ``capacity_wait`` says one frees before the call's end, then plans afresh; when none frees in
    time (or waiting is off) it is refused with the limits named (NoEligibleProvider).
    """
    traffic = ports.traffic
    planned = begin(ports, req, resolved, deadline=deadline, policy=policy, session_id=session_id)
    if not may_queue(ports):
        return planned
    call, state, _ = planned
    if not traffic.waiters.locked():  # nobody queued ahead: try at once
        ticket, verdict = await traffic.admit_call(
            call.chain_plan.chain, req, ports.ledger.wall_ms(), _end_wall_ms(ports, state)
        )
        if verdict.go:
            call.preset = ticket  # the first attempt on that deployment uses this place
            return planned
    async with traffic.waiters:  # FIFO: asyncio.Lock wakes its waiters in arrival order
        while True:
            now_wall = ports.ledger.wall_ms()
            chain, end_ms = call.chain_plan.chain, _end_wall_ms(ports, state)
            ticket, verdict = await traffic.admit_call(chain, req, now_wall, end_ms)
            if verdict.go:
                call, state, action = begin(
                    ports, req, resolved, deadline=deadline, policy=policy, session_id=session_id
                )
                call.preset = ticket
                return call, state, action
            if verdict.until_ms is None or not traffic.config.wait_for_capacity:
                limited = ", ".join(e.provider.value for e in call.chain_plan.chain)
                raise NoEligibleProvider(f"every deployment is at its declared rate limit ({limited})")
            await asyncio.sleep((verdict.until_ms - now_wall) / 1000)


def may_queue(ports: Ports) -> bool:
    """Whether :func:`begin_admitted` may queue a call: some deployment declares rate limits. When
    none does it is :func:`begin` itself, and a caller may call that without its coroutine (issue 25)."""
    return bool(ports.traffic.config.limits)


def _end_wall_ms(ports: Ports, state: KernelState) -> int:
    """The call's end (deadline or 30 s budget) on the wall clock the traffic store shares."""
    left_ms = state.plan.effective_end_ms - loop_ms(asyncio.get_running_loop().time())
    return ports.ledger.wall_ms() + max(0, left_ms)


def observe(
    ports: Ports, records: tuple[AttemptRecord, ...], now_ms: int, *, success_settled_later: bool = False
) -> None:
    """Report newly finished attempts: metrics, latency samples, each one's effect on health.

    A streamed attempt "succeeds" at its first token; whether the provider really delivered is
    known only at the stream's end, so streaming passes ``success_settled_later`` and applies the
    health effect when the stream is settled (core/stream_rules.py).
    """
    for record in records:
        ports.metrics.attempt(record)
        if record.http_status is not None:  # answered: the latency-SLA trigger's sample
            latency_ms = record.first_token_ms if record.first_token_ms is not None else record.elapsed_ms
            ports.health.record_latency(record.provider, now_ms, latency_ms)
            ports.traffic.record_latency(record.provider, latency_ms)  # the latency strategy's EWMA
        effect = health_effect(record.status)
        if not (success_settled_later and effect is HealthEffect.SUCCESS):
            ports.health.apply(record.provider, effect, now_ms)


async def close_events(events: AsyncIterator[StreamEvent]) -> None:
    """Close a provider's event stream (its response), if it can be closed."""
    aclose = getattr(events, "aclose", None)
    if aclose is not None:
        await aclose()


async def close_opened(opened: OpenStream) -> None:
    """Close a committed attempt's stream that will not be relayed (a hedge race's loser): its span
    ends, then its response is closed."""
    opened.span.end()
    await close_events(opened.events)


async def _first_event(events: AsyncIterator[StreamEvent]) -> StreamEvent:
    """The stream's first event; a stream that ends or errs before it is a failed attempt."""
    try:
        first = await anext(aiter(events))  # the request (and its traceparent) goes out here
    except StopAsyncIteration:
        raise ProviderCallFailed(
            AttemptFailure(kind=AttemptFailureKind.STREAM_ERROR, message="stream ended before any event")
        ) from None
    if isinstance(first, StreamError):  # defensive: providers raise STREAM_ERROR for a first in-band error
        raise ProviderCallFailed(AttemptFailure(kind=AttemptFailureKind.STREAM_ERROR, message=first.message))
    return first


async def perform(ports: Ports, call: Call, action: CallProvider, mode: Mode) -> tuple[Event, OpenStream | None]:
    """Perform one CallProvider action: reserve, call within ``action.timeout_at_ms``, settle.

    Nothing raised while pricing, building, sending, reading or decoding the attempt escapes (but
    ``CancelledError``): it becomes a failed attempt or a skip (``Call.boundary``). A plain answer
    is settled here; a streamed one is handed on open, with its reservation, for the relay to settle.
    """
    entry = action.entry
    begun = await call.begin(action)
    if isinstance(begun, AttemptRefused | AttemptFailed):
        return begun, None
    reservation = begun
    events: AsyncIterator[StreamEvent] | None = None
    keep_open = False
    settled = False
    ports.traffic.started(entry.provider)  # least-outstanding's in-flight count
    sink: HeaderSink | None = None
    handed: AttemptSpan | None = None  # a streamed attempt's span, open past its first event
    try:
        try:
            provider = ports.providers[entry.provider]
            at_s = timeout_at_ms(action.timeout_at_ms)  # clock.py: the one instant, converted once
            if mode is Mode.STREAM:
                events = provider.stream(
                    call.req, entry.model, timeout_at=at_s.when, idle_timeout_s=ports.timeouts.idle_timeout_s
                )
            with (
                attempt_span(entry.provider, entry.model, action.attempt_num, parent=call.trace_context) as span,
                HeaderSink() as sink,  # the answer's rate-limit headers (core/ratelimit_headers.py)
                at_s,  # the attempt's one timer (short final wake-up) and bound: a built-in provider starts none
            ):
                if events is not None:
                    first = await _first_event(events)  # up to the first event
                    handed = span.hand_on()  # its usage comes at the stream's end (streaming.py)
                else:
                    response = await provider.complete(call.req, entry.model, timeout_at=at_s.when)
                    span.answered(response.usage, response.model or entry.model)
        except ProviderCallFailed as exc:
            failure = exc.failure
        except TimeoutError:
            message = f"no {'first event' if mode is Mode.STREAM else 'answer'} within {action.timeout_ms} ms"
            failure = AttemptFailure(kind=AttemptFailureKind.ATTEMPT_TIMEOUT, message=message)
        except Exception as exc:  # the attempt boundary: core's table classifies it (never carries on)
            settled = True
            return await call.boundary(action, reservation, exc), None
        else:
            now_ms = call.now_ms()
            if events is not None:
                keep_open = settled = True  # committed: the relay owns the stream and the reservation now
                first_token_ms = now_ms - action.issued_at_ms
                assert handed is not None  # set with `first`
                ticket = await call.stream_ticket(action)  # settled when the stream ends (streaming.py)
                opened = OpenStream(
                    first=first, events=events, reservation=reservation, first_token_ms=first_token_ms,
                    issued_at_ms=action.issued_at_ms, span=handed, ticket=ticket,
                )  # fmt: skip
                return AttemptSucceeded(now_ms=now_ms, first_token_ms=first_token_ms), opened
            ports.metrics.usage(entry.provider, entry.model, response.usage)
            call.cost_pico_usd = ports.ledger.known_cost(entry.provider, entry.model, response.usage)
            if reservation is not None:  # nothing reserved (no budget): Ledger.settle's no-op, without its coroutine
                await ports.ledger.settle(reservation, booked_pico_usd=call.cost_pico_usd or 0, succeeded=True)
            settled = True
            call.response = response
            await call.traffic_settled(action, usage=response.usage, succeeded=True)
            return AttemptSucceeded(now_ms=call.now_ms()), None
        settled = True
        return await call.failed(action, reservation, failure), None
    finally:
        ports.traffic.finished(entry.provider)
        if sink is not None and sink.headers:  # a provider-side limit at 0 holds the deployment back
            ports.traffic.observe_headers(entry.provider, sink.headers, ports.ledger.wall_ms())
        if not settled:  # cancelled: never leak the reservation (a hedge race's loser books it: call.py)
            await ports.ledger.settle(reservation, booked_pico_usd=call.cancelled_booking(reservation), succeeded=False)
            await call.traffic_settled(action, usage=None, succeeded=False)
        if handed is not None and not keep_open:  # opened, then failed or cancelled before the relay took it
            handed.end(error="the attempt ended before its stream was relayed")
        if events is not None and not keep_open:
            await close_events(events)


def _performer(
    ports: Ports, mode: Mode
) -> Callable[[Call, CallProvider], Coroutine[None, None, tuple[Event, OpenStream | None]]]:
    """:func:`perform` in ``mode``, for the hedge race (hedging.py) to run through either call's bookkeeping."""

    async def run(call: Call, action: CallProvider) -> tuple[Event, OpenStream | None]:
        return await perform(ports, call, action, mode)

    return run


def _error(call: Call, action: Fail, deadline: float, started_ms: int) -> RouterError:
    error = call.fail(action)
    if isinstance(error, DeadlineExceeded) and deadline_ms(deadline) <= started_ms:
        hint = past_deadline_hint(deadline, started_ms / 1000)
        return DeadlineExceeded(f"caller deadline exceeded: {hint}", attempts=error.attempts)
    return error


async def drive(
    ports: Ports,
    call: Call,
    state: KernelState,
    action: Action,
    mode: Mode,
    *,
    deadline: float,
    progress: Callable[[tuple[AttemptRecord, ...]], None] | None = None,
) -> Committed:
    """Perform the kernel's actions until it succeeds (the committed attempt) or fails (raised).

    ``progress`` (if given) sees the attempt records each time they change.
    """
    try:
        committed = await _drive(ports, call, state, action, mode, deadline=deadline, progress=progress)
    except BaseException:
        await call.release_preset()  # an admission place the call never used goes back
        raise
    try:
        await call.release_preset()
    except BaseException:  # cancelled here, after the commit: nobody will relay the stream; end it
        if committed.opened is not None:
            await abandon(ports, committed.opened, close_opened)
        if committed.slot is not None:
            committed.slot.release()
        raise
    return committed


async def _drive(
    ports: Ports,
    call: Call,
    state: KernelState,
    action: Action,
    mode: Mode,
    *,
    deadline: float,
    progress: Callable[[tuple[AttemptRecord, ...]], None] | None,
) -> Committed:
    started_ms = state.plan.started_at_ms
    kept_open: OpenStream | None = None  # streaming: the committed attempt's open stream ...
    kept_slot: Slot | None = None  # ... and the in-flight slot it holds until the relay ends
    while True:
        if isinstance(action, CallProvider):
            # admission (admission.py): queue for a local slot; time queued is not the provider's
            admitted = ports.admission.admit_at_once(state, action)  # a free slot: no coroutine
            state, action, slot = admitted if admitted is not None else await ports.admission.admit(state, action)
            if slot is None or not isinstance(action, CallProvider):
                continue  # the call ended while it queued: the kernel's Fail is handled below
            opened: OpenStream | None = None
            if hedge_applies(ports, call):  # opt-in per alias: hedging.py races a second deployment
                state, event, opened, kept = await hedged(
                    ports, call, state, action, perform=_performer(ports, mode), close=close_opened, slot=slot
                )
                slot = kept if kept is not None else slot  # the deciding attempt's slot (released unless open)
            else:
                try:
                    event, opened = await perform(ports, call, action, mode)
                finally:
                    if opened is None:
                        slot.release()
            if opened is not None:
                kept_open, kept_slot = opened, slot
        elif isinstance(action, Sleep):
            await sleep_until(action.sleep_until_ms)  # clock.py: the kernel's instant, converted once
            event = SleepDone(now_ms=call.now_ms())
        elif isinstance(action, Succeed):
            if (mode is Mode.STREAM) != (kept_open is not None):  # pragma: no cover - kernel invariant
                raise AssertionError(f"the kernel succeeded without a committed attempt ({mode.value})")
            if progress is not None:
                progress(action.records)
            return Committed(succeed=action, opened=kept_open, slot=kept_slot)
        else:
            if progress is not None:
                progress(action.records)
            raise _error(call, action, deadline, started_ms)
        before = len(state.records)
        state, action = kernel.step(state, event)
        if progress is not None:
            progress(state.records)
        observe(ports, state.records[before:], call.now_ms(), success_settled_later=mode is Mode.STREAM)


async def complete(
    ports: Ports,
    req: ChatRequest,
    resolved: ResolvedModel,
    *,
    deadline: float,
    policy: TenantPolicy,
    session_id: str,
) -> ProviderResponse:
    """One plain call: the driver loop, then the response with its history."""
    if may_queue(ports):
        call, state, action = await begin_admitted(
            ports, req, resolved, deadline=deadline, policy=policy, session_id=session_id
        )
    else:  # begin_admitted's own first step and answer, without its coroutine (issue 25)
        call, state, action = begin(ports, req, resolved, deadline=deadline, policy=policy, session_id=session_id)
    committed = await drive(ports, call, state, action, Mode.COMPLETE, deadline=deadline)
    return call.succeed(committed.succeed, call.now_ms() - state.plan.started_at_ms)
