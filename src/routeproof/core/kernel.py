"""One routed call as a sans-I/O state machine: events in, actions out.

Theory of operation
-------------------
The async shell (``router.py``) starts a call with :func:`start`, performs the action it gets and
feeds what happened back through :func:`step`, until the action is :class:`Succeed` or :class:`Fail`.
Every retry, failover, backoff, deadline, budget and record decision is made here, once, in pure
code; the shell only performs actions. Time is integer milliseconds on the shell's clock;
randomness arrives as ``draw`` on each :class:`AttemptFailed`.

A call is always in one :class:`Phase`, read from the state (never stored twice)::

    start ──> CALLING ──AttemptSucceeded──────────────────────────────> DONE  (Succeed)
                │  ^ ──AttemptFailed, retryable, the sleep fits──> SLEEPING ──SleepDone──> CALLING
                │  └──AttemptFailed / AttemptRefused(SKIP_PROVIDER): next provider──┘
                └──AttemptFailed, terminal / out of time / chain exhausted ──────> DONE  (Fail)

In CALLING exactly one :class:`CallProvider` is pending and only an attempt event answers it; in
SLEEPING one :class:`Sleep` is pending and only :class:`SleepDone` answers it (:data:`ANSWERED_BY`);
DONE accepts nothing. A failed attempt is decided in this order, first match wins: bad
credentials -> AUTH; 400/404/context overflow -> TERMINAL; the caller's deadline passed or cut the
attempt -> DEADLINE; the 30 s budget passed or cut it -> ALL_FAILED; retryable, attempts left,
the provider's retry budget not spent (``AttemptFailed.retry_allowed``, core/retry_budget.py) and
the backoff (or the provider's Retry-After) ends before the deadline and budget -> Sleep then the
same provider; otherwise the next provider in the chain (a failover never resets a provider's
attempt count), and when none is left the call fails.

Where the vocabulary lives: the plan and the enums (:class:`CallPlan`, :class:`Bound`,
:class:`CallFailureKind`, :class:`RefusalEffect`) in :mod:`routeproof.core.call_plan`; the events in
:mod:`routeproof.core.kernel_events`; actions, state and transitions here. Every name is re-exported.
"""

from __future__ import annotations

import enum
import operator
from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType

import icontract

from routeproof.core.backoff import retry_delay_ms
from routeproof.core.call_plan import BackoffPolicy, Bound, CallFailureKind, CallPlan, RefusalEffect, plan_valid
from routeproof.core.classify import TIMEOUT_KINDS, Verdict, classify_failure
from routeproof.core.kernel_events import AttemptFailed, AttemptRefused, AttemptSucceeded, Event, SleepDone
from routeproof.core.types import (
    AttemptFailure,
    AttemptFailureKind,
    AttemptRecord,
    AttemptStatus,
    ChainEntry,
    RetryReason,
)

__all__ = [
    "ANSWERED_BY",
    "ATTEMPTS_CAP_REASON",
    "RETRY_STATUS",
    "Action",
    "AttemptFailed",
    "AttemptRefused",
    "AttemptSucceeded",
    "BackoffPolicy",
    "Bound",
    "CallFailureKind",
    "CallPlan",
    "CallProvider",
    "Event",
    "Fail",
    "KernelState",
    "Phase",
    "RefusalEffect",
    "Sleep",
    "SleepDone",
    "Succeed",
    "answers",
    "plan_valid",
    "start",
    "step",
    "step_accepts",
    "step_sound",
    "well_formed",
]

ATTEMPTS_CAP_REASON = "attempts cap exceeded; programmer error in failover loop"

RETRY_STATUS = {
    RetryReason.FIVE_XX: AttemptStatus.RETRIED_AFTER_5XX,
    RetryReason.TOO_MANY_REQUESTS: AttemptStatus.RETRIED_AFTER_429,
    RetryReason.TIMEOUT: AttemptStatus.RETRIED_AFTER_TIMEOUT,
    RetryReason.CONN_RESET: AttemptStatus.RETRIED_AFTER_CONN_RESET,
}
"""The record status of an attempt that is retried, by retry reason."""

TERMINAL_STATUS = {400: AttemptStatus.TERMINAL_400, 404: AttemptStatus.TERMINAL_404}

TIMEOUT_TOLERANCE_MS = 5
"""A timeout firing this close to an attempt's end counts as that end (clock rounding)."""

RETRY_AFTER_STATUSES = frozenset({429, 503})
"""Statuses whose Retry-After header replaces the backoff (RFC 9110 §10.2.3)."""


class Phase(enum.Enum):
    """Where a call stands: what it waits for (see the theory of operation above)."""

    CALLING = "calling"  # a CallProvider is pending: an attempt event answers it
    SLEEPING = "sleeping"  # a Sleep is pending: SleepDone answers it
    DONE = "done"  # Succeed or Fail was returned: no event is accepted


ANSWERED_BY: Mapping[Phase, tuple[type, ...]] = MappingProxyType(
    {
        Phase.CALLING: (AttemptSucceeded, AttemptFailed, AttemptRefused),
        Phase.SLEEPING: (SleepDone,),
        Phase.DONE: (),
    }
)
"""Which events answer the pending action in each phase."""


# --- actions -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class CallProvider:
    """Call ``entry`` (chain index ``position``) as its attempt ``attempt_num``, within ``timeout_ms``.

    ``timeout_at_ms`` is the same limit as an absolute instant (``issued_at_ms + timeout_ms``): the
    one deadline the shell and the provider enforce.
    """

    position: int
    entry: ChainEntry
    attempt_num: int
    timeout_ms: int
    issued_at_ms: int
    timeout_at_ms: int
    bound: Bound


@dataclass(frozen=True, slots=True, kw_only=True)
class Sleep:
    """Wait ``duration_ms`` before the next attempt (a backoff or a provider's Retry-After), that is
    until the absolute instant ``sleep_until_ms``."""

    duration_ms: int
    sleep_until_ms: int
    retry_after: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Succeed:
    """The call succeeded; ``records`` is the whole attempt history, the last one SUCCEEDED."""

    records: tuple[AttemptRecord, ...]
    entry: ChainEntry


@dataclass(frozen=True, slots=True, kw_only=True)
class Fail:
    """The call failed for ``kind``; ``failure``/``entry`` describe the last attempt, if any."""

    kind: CallFailureKind
    records: tuple[AttemptRecord, ...]
    failure: AttemptFailure | None = None
    entry: ChainEntry | None = None


Action = CallProvider | Sleep | Succeed | Fail


# --- state ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class KernelState:
    """Where one call stands. A new state is a new value."""

    plan: CallPlan
    position: int = 0
    records: tuple[AttemptRecord, ...] = ()
    used: tuple[tuple[tuple[str, str], int], ...] = ()  # attempts per provider (kind, model)
    pending: CallProvider | Sleep | None = None
    done: bool = False
    calls_issued: int = 0

    @property
    def phase(self) -> Phase:
        """The phase this state is in (done, else what is pending)."""
        if self.done:
            return Phase.DONE
        return Phase.SLEEPING if isinstance(self.pending, Sleep) else Phase.CALLING

    def attempts_on(self, entry: ChainEntry) -> int:
        """How many attempts this call has made on ``entry``'s provider, in any chain position."""
        key = _key(entry)
        for k, count in self.used:
            if k == key:
                return count
        return 0


def _key(entry: ChainEntry) -> tuple[str, str]:
    # The provider itself: a ProviderId is a str equal to its name (``.value``), without the Enum
    # property's two Python calls; keys are only ever compared, never hashed (the kernel runs per call).
    return (entry.provider, entry.model)


def _bump(used: tuple[tuple[tuple[str, str], int], ...], entry: ChainEntry) -> tuple[tuple[tuple[str, str], int], ...]:
    key = _key(entry)
    count = 0
    others = []
    for k, c in used:  # a loop, not two generators: it runs per attempt
        if k == key:
            count = c
        else:
            others.append((k, c))
    return (*others, (key, count + 1))


# --- transitions ---------------------------------------------------------------------------------

_LIMIT_MS = operator.itemgetter(0)
_COUNT = operator.itemgetter(1)


def _issue(plan: CallPlan, after: KernelState | None, position: int, now_ms: int) -> tuple[KernelState, Action]:
    """Issue the next attempt of ``plan`` at ``position`` or later, or end the call if none may be
    issued. ``after``: the state it follows (its pending action is replaced), None for the call's first
    (nothing recorded or used yet: no state is made only to be replaced; issue 25)."""
    records: tuple[AttemptRecord, ...]
    used: tuple[tuple[tuple[str, str], int], ...]
    if after is None:
        records, used, calls_issued, done = (), (), 0, False
    else:
        records, used, calls_issued, done = after.records, after.used, after.calls_issued, after.done
    chain = plan.chain
    made = 0  # the attempts already made on the entry at ``position`` (counted once per entry)
    while position < len(chain):
        made = 0 if after is None else after.attempts_on(chain[position])
        if made < plan.max_attempts_per_provider:
            break
        position += 1  # this provider already had its attempts in this call: failover never resets them
    if position >= len(chain):
        return _unissued(plan, after, CallFailureKind.ALL_FAILED if chain else CallFailureKind.NO_ELIGIBLE)
    budget_end_ms = plan.budget_end_ms
    if now_ms >= plan.deadline_at_ms:
        return _unissued(plan, after, CallFailureKind.DEADLINE)
    if now_ms >= budget_end_ms:
        return _unissued(plan, after, CallFailureKind.ALL_FAILED)
    if len(records) >= plan.attempts_cap:
        return _unissued(plan, after, CallFailureKind.ATTEMPTS_CAP)
    entry = chain[position]
    limits = (
        (plan.deadline_at_ms - now_ms, Bound.DEADLINE),
        (budget_end_ms - now_ms, Bound.BUDGET),
        (plan.timeout_for(entry.provider), Bound.ATTEMPT),
    )
    timeout_ms, bound = min(limits, key=_LIMIT_MS)  # ties keep the caller's deadline
    action = CallProvider(
        position=position,
        entry=entry,
        attempt_num=made + 1,
        timeout_ms=timeout_ms,
        issued_at_ms=now_ms,
        timeout_at_ms=now_ms + timeout_ms,
        bound=bound,
    )
    new_state = KernelState(  # every field named (not dataclasses.replace: its field loop runs per call)
        plan=plan,
        position=position,
        records=records,
        used=_bump(used, entry),
        pending=action,
        done=done,
        calls_issued=calls_issued + 1,
    )
    return new_state, action


def _unissued(plan: CallPlan, after: KernelState | None, kind: CallFailureKind) -> tuple[KernelState, Action]:
    """End the call for ``kind`` where :func:`_issue` issues nothing: after ``after``, or at its start."""
    return _fail(KernelState(plan=plan) if after is None else after, kind)


def _fail(
    state: KernelState,
    kind: CallFailureKind,
    failure: AttemptFailure | None = None,
    entry: ChainEntry | None = None,
) -> tuple[KernelState, Action]:
    last = state.records[-1] if state.records else None
    if entry is None and last is not None:
        entry = ChainEntry(provider=last.provider, model=last.model, fallback_position=last.fallback_position)
    action = Fail(kind=kind, records=state.records, failure=failure, entry=entry)
    return replace(state, pending=None, done=True), action


def attempt_record(
    call: CallProvider,
    now_ms: int,
    status: AttemptStatus,
    *,
    http_status: int | None = None,
    retry_reason: RetryReason | None = None,
    first_token_ms: int | None = None,
    retry_throttled: bool = False,
) -> AttemptRecord:
    """The record of ``call`` ending at ``now_ms`` with ``status`` (the kernel's, and a hedge race's loser's)."""
    return AttemptRecord(
        provider=call.entry.provider,
        model=call.entry.model,
        attempt_num=call.attempt_num,
        fallback_position=call.entry.fallback_position,
        status=status,
        elapsed_ms=max(0, now_ms - call.issued_at_ms),
        http_status=http_status,
        retry_reason=retry_reason,
        first_token_ms=first_token_ms,
        retry_throttled=retry_throttled,
    )


def _on_failure(state: KernelState, call: CallProvider, event: AttemptFailed) -> tuple[KernelState, Action]:
    plan = state.plan
    failure = event.failure
    now_ms = event.now_ms
    verdict = classify_failure(failure, context_window_failover=plan.context_window_failover)
    # A timeout that fired at the attempt's own end was caused by the limit that set it; one that
    # fired earlier (a provider's connect/read timeout) is an ordinary retryable timeout.
    timed_out = failure.kind in TIMEOUT_KINDS
    cut_by = call.bound if timed_out and now_ms + TIMEOUT_TOLERANCE_MS >= call.issued_at_ms + call.timeout_ms else None

    def done(status: AttemptStatus, kind: CallFailureKind) -> tuple[KernelState, Action]:
        record = attempt_record(
            call, now_ms, status, http_status=failure.http_status, first_token_ms=event.first_token_ms
        )
        return _fail(replace(state, records=(*state.records, record)), kind, failure, call.entry)

    if verdict.verdict is Verdict.TERMINAL_AUTH:
        return done(AttemptStatus.TERMINAL_AUTH, CallFailureKind.AUTH)
    if verdict.verdict is Verdict.TERMINAL:
        return done(
            TERMINAL_STATUS.get(failure.http_status or 400, AttemptStatus.TERMINAL_400), CallFailureKind.TERMINAL
        )
    if verdict.verdict is Verdict.DEADLINE or now_ms >= plan.deadline_at_ms or cut_by is Bound.DEADLINE:
        return done(AttemptStatus.DEADLINE_EXCEEDED_MID_CALL, CallFailureKind.DEADLINE)
    if now_ms >= plan.budget_end_ms or cut_by is Bound.BUDGET:
        status = AttemptStatus.TIMEOUT_BEFORE_FIRST_TOKEN if timed_out else AttemptStatus.FAILED_OVER
        return done(status, CallFailureKind.ALL_FAILED)

    sleep_did_not_fit = False
    retries_left = state.attempts_on(call.entry) < plan.max_attempts_per_provider
    throttled = verdict.verdict is Verdict.RETRY and retries_left and not event.retry_allowed
    if verdict.verdict is Verdict.RETRY and retries_left and event.retry_allowed:
        sleep_ms = _sleep_before_retry(plan, call, failure, event.draw)
        if now_ms + sleep_ms < plan.effective_end_ms:  # a call can still be issued after waking
            assert verdict.reason is not None  # classify's postcondition: RETRY carries a reason
            record = attempt_record(
                call,
                now_ms,
                RETRY_STATUS[verdict.reason],
                http_status=failure.http_status,
                retry_reason=verdict.reason,
                first_token_ms=event.first_token_ms,
            )
            recorded = replace(state, records=(*state.records, record))
            if len(recorded.records) >= plan.attempts_cap:
                return _fail(recorded, CallFailureKind.ATTEMPTS_CAP, failure, call.entry)  # no sleep before a stop
            sleep = Sleep(
                duration_ms=sleep_ms, sleep_until_ms=now_ms + sleep_ms, retry_after=_honours_retry_after(failure)
            )
            return replace(recorded, pending=sleep), sleep
        sleep_did_not_fit = True  # no sleep past the budget or the deadline: fail over at once

    record = attempt_record(
        call,
        now_ms,
        AttemptStatus.FAILED_OVER,
        http_status=failure.http_status,
        retry_reason=verdict.reason,
        first_token_ms=event.first_token_ms,
        retry_throttled=throttled,  # the retry budget is spent: fail over instead (gRPC A6)
    )
    next_state, action = _issue(
        plan, replace(state, records=(*state.records, record), pending=None), call.position + 1, now_ms
    )
    if isinstance(action, Fail):
        kind = action.kind
        if kind is CallFailureKind.ALL_FAILED and sleep_did_not_fit and plan.deadline_at_ms <= plan.budget_end_ms:
            kind = CallFailureKind.DEADLINE  # nowhere to fail over, and the retry would end past the caller's deadline
        return _fail(next_state, kind, failure, call.entry)
    return next_state, action


def _honours_retry_after(failure: AttemptFailure) -> bool:
    return (
        failure.kind is AttemptFailureKind.HTTP_STATUS
        and failure.http_status in RETRY_AFTER_STATUSES
        and failure.retry_after_ms is not None
    )


def _sleep_before_retry(plan: CallPlan, call: CallProvider, failure: AttemptFailure, draw: float) -> int:
    if _honours_retry_after(failure):
        assert failure.retry_after_ms is not None
        return failure.retry_after_ms  # exactly what the provider asked for, not the backoff
    return retry_delay_ms(
        call.attempt_num + 1,
        min(1.0, max(0.0, draw)),
        full_jitter=plan.backoff.full_jitter,
        base_ms=plan.backoff.base_ms,
        cap_ms=plan.backoff.cap_ms,
        delays_ms=plan.backoff.delays_ms,
        jitter_percent=plan.backoff.jitter_percent,
    )


def answers(state: KernelState, event: Event) -> bool:
    """Whether ``event`` answers the pending action: SleepDone a Sleep, an attempt event a call."""
    return state.pending is not None and isinstance(event, ANSWERED_BY[state.phase])


def _step(state: KernelState, event: Event) -> tuple[KernelState, Action]:
    pending = state.pending
    if isinstance(pending, Sleep) and not state.done:  # SLEEPING (state.phase): the same position's next attempt
        return _issue(state.plan, state, state.position, event.now_ms)  # its pending Sleep replaced there
    if not isinstance(pending, CallProvider) or isinstance(event, SleepDone):
        raise ValueError(f"event {event!r} does not answer the pending action {pending!r}")
    if isinstance(event, AttemptSucceeded):
        record = attempt_record(
            pending,
            event.now_ms,
            AttemptStatus.SUCCEEDED,
            http_status=event.http_status,
            first_token_ms=event.first_token_ms,
        )
        records = (*state.records, record)
        done = KernelState(  # every field named, as in _issue
            plan=state.plan,
            position=state.position,
            records=records,
            used=state.used,
            pending=None,
            done=True,
            calls_issued=state.calls_issued,
        )
        return done, Succeed(records=records, entry=pending.entry)
    if isinstance(event, AttemptRefused):
        if event.refusal is RefusalEffect.TERMINAL:
            return _fail(replace(state, pending=None), CallFailureKind.BUDGET, None, pending.entry)
        return _issue(state.plan, state, pending.position + 1, event.now_ms)  # its pending call replaced there
    return _on_failure(state, pending, event)


def well_formed(state: KernelState) -> bool:
    """The kernel's invariant: bounded records, per-provider attempt counts, positions in range."""
    plan = state.plan
    return (
        plan_valid(plan)
        and len(state.records) <= plan.attempts_cap
        and max(map(_COUNT, state.used), default=0) <= plan.max_attempts_per_provider  # C-level: per call
        and 0 <= state.position <= max(0, len(plan.chain))
        and state.calls_issued <= plan.attempts_cap
        and (not state.done or state.pending is None)
        and (state.done or state.pending is not None)  # exactly one phase: DONE, or one action pending
    )


def _action_within_limits(state: KernelState, action: Action) -> bool:
    plan = state.plan
    if isinstance(action, CallProvider):
        return (
            action.issued_at_ms < plan.effective_end_ms
            and action.issued_at_ms + action.timeout_ms == action.timeout_at_ms <= plan.effective_end_ms
            and 0 < action.timeout_ms <= plan.timeout_for(action.entry.provider)
            and 1 <= action.attempt_num <= plan.max_attempts_per_provider
            and action.entry == plan.chain[action.position]
        )
    return True


@icontract.require(plan_valid)
@icontract.ensure(
    lambda result: well_formed(result[0]) and _action_within_limits(result[0], result[1]),
    "well formed, the first action within the plan's limits",
)  # one condition, not two: each costs icontract about ten Python calls per call (issue 25)
def start(plan: CallPlan, now_ms: int) -> tuple[KernelState, Action]:
    """Begin a call at ``now_ms``: the first attempt on the primary, or a failure if none may start."""
    return _issue(plan, None, 0, now_ms)


def step_accepts(state: KernelState, event: Event) -> bool:
    """:func:`step`'s precondition, one predicate (each condition costs icontract about ten Python
    calls per call; issue 25): a well-formed state, of a call that has not ended (no event is accepted
    after it), and an event that answers the pending action (:func:`answers`)."""
    return well_formed(state) and not state.done and answers(state, event)


def step_sound(state: KernelState, event: Event, result: tuple[KernelState, Action]) -> bool:
    """:func:`step`'s postcondition, one predicate: the new state is well formed and its action within
    the plan's limits; a Sleep ends before the call's end, ``duration_ms`` after the event; no record
    is lost; and a spent retry budget never sleeps for a retry."""
    new_state, action = result
    if not (well_formed(new_state) and _action_within_limits(new_state, action)):
        return False
    if len(new_state.records) < len(state.records):
        return False
    if not isinstance(action, Sleep):
        return True
    return new_state.plan.effective_end_ms > event.now_ms + action.duration_ms == action.sleep_until_ms and (
        not isinstance(event, AttemptFailed) or event.retry_allowed
    )


@icontract.require(step_accepts, "a well-formed running call, and an event that answers its pending action")
@icontract.ensure(
    step_sound, "well formed, within limits, no record lost, sleeps in time, a spent retry budget never sleeps"
)
def step(state: KernelState, event: Event) -> tuple[KernelState, Action]:
    """Feed what happened to the pending action; get the new state and the next action."""
    return _step(state, event)
