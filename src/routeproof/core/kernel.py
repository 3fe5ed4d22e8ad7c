"""One routed call as a sans-I/O state machine: events in, actions out.

The async shell (``router.py``) starts a call with :func:`start`, performs the action it gets
(call a provider with a timeout, sleep, succeed, fail) and feeds what happened back through
:func:`step`. Every retry, failover, backoff, deadline, budget and record decision is made here.

Time is integer milliseconds on the shell's clock. Randomness arrives as ``draw`` on each failure.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace

import icontract

from routeproof.core.backoff import retry_delay_ms
from routeproof.core.classify import TIMEOUT_KINDS, Verdict, classify_failure
from routeproof.core.constants import (
    ATTEMPTS_CAP,
    FAILOVER_BUDGET_MS,
    FULL_JITTER_BASE_MS,
    FULL_JITTER_CAP_MS,
    JITTER_PERCENT,
    MAX_ATTEMPTS_PER_PROVIDER,
    PROVIDER_DEFAULT_TIMEOUT_MS,
    RETRY_DELAYS_MS,
)
from routeproof.core.types import (
    AttemptFailure,
    AttemptRecord,
    AttemptStatus,
    ChainEntry,
    FailureKind,
    ProviderId,
    RetryReason,
)

__all__ = [
    "ATTEMPTS_CAP_REASON",
    "RETRY_STATUS",
    "Action",
    "AttemptFailed",
    "AttemptRefused",
    "AttemptSucceeded",
    "BackoffPolicy",
    "Bound",
    "CallPlan",
    "CallProvider",
    "Event",
    "Fail",
    "FailKind",
    "KernelState",
    "Refusal",
    "Sleep",
    "SleepDone",
    "Succeed",
    "start",
    "step",
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


@dataclass(frozen=True, slots=True, kw_only=True)
class BackoffPolicy:
    """Which retry delays to use: the 200/800 ms band (default) or the contract's full jitter."""

    full_jitter: bool = False
    delays_ms: tuple[int, ...] = RETRY_DELAYS_MS
    jitter_percent: int = JITTER_PERCENT
    base_ms: int = FULL_JITTER_BASE_MS
    cap_ms: int = FULL_JITTER_CAP_MS


@dataclass(frozen=True, slots=True, kw_only=True)
class CallPlan:
    """Everything fixed for one call: the chain, the clock origin, the deadline and the limits."""

    chain: tuple[ChainEntry, ...]
    started_at_ms: int
    deadline_at_ms: int  # the caller's deadline, absolute
    budget_ms: int = FAILOVER_BUDGET_MS
    max_attempts_per_provider: int = MAX_ATTEMPTS_PER_PROVIDER
    attempts_cap: int = ATTEMPTS_CAP
    attempt_timeout_ms: int = PROVIDER_DEFAULT_TIMEOUT_MS
    backoff: BackoffPolicy = field(default_factory=BackoffPolicy)
    context_window_failover: bool = False
    provider_timeouts_ms: tuple[tuple[ProviderId, int], ...] = ()  # agent.toml's per-provider timeout_ms

    def timeout_for(self, provider: ProviderId) -> int:
        """The per-attempt ceiling for ``provider``: its configured ``timeout_ms``, else the plan's."""
        for kind, timeout_ms in self.provider_timeouts_ms:
            if kind == provider:
                return min(timeout_ms, self.attempt_timeout_ms)
        return self.attempt_timeout_ms

    @property
    def budget_end_ms(self) -> int:
        """When the 30 s failover budget runs out."""
        return self.started_at_ms + self.budget_ms

    @property
    def effective_end_ms(self) -> int:
        """The earlier of the budget's end and the caller's deadline."""
        return min(self.budget_end_ms, self.deadline_at_ms)


class Bound(enum.Enum):
    """Which limit set an attempt's timeout (it decides what an elapsed timeout means)."""

    DEADLINE = "deadline"  # the caller's deadline
    BUDGET = "budget"  # the 30 s failover budget
    ATTEMPT = "attempt"  # the 30 s per-attempt ceiling


class FailKind(enum.Enum):
    """Why a call failed; the shell maps each to one RouterError."""

    DEADLINE = "deadline"  # -> DeadlineExceeded
    ALL_FAILED = "all_failed"  # -> AllProvidersFailed (chain or budget exhausted)
    TERMINAL = "terminal"  # -> TerminalProviderError (400, 404, context overflow)
    AUTH = "auth"  # -> AuthError (401, 403)
    ATTEMPTS_CAP = "attempts_cap"  # -> InvalidResponse(ATTEMPTS_CAP_REASON)
    BUDGET = "budget"  # -> BudgetExhausted (the ledger's refusal)
    NO_ELIGIBLE = "no_eligible"  # -> NoEligibleProvider (empty chain)


class Refusal(enum.Enum):
    """Why the shell could not perform a CallProvider action."""

    SKIP_PROVIDER = "skip_provider"  # e.g. this provider's daily budget: go on down the chain
    TERMINAL = "terminal"  # e.g. the session or monthly budget: the call ends


# --- actions -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class CallProvider:
    """Call ``entry`` (chain index ``position``) as its attempt ``attempt_num``, within ``timeout_ms``."""

    position: int
    entry: ChainEntry
    attempt_num: int
    timeout_ms: int
    issued_at_ms: int
    bound: Bound


@dataclass(frozen=True, slots=True, kw_only=True)
class Sleep:
    """Wait ``duration_ms`` before the next attempt (a backoff or a provider's Retry-After)."""

    duration_ms: int
    retry_after: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Succeed:
    """The call succeeded; ``records`` is the whole attempt history, the last one SUCCEEDED."""

    records: tuple[AttemptRecord, ...]
    entry: ChainEntry


@dataclass(frozen=True, slots=True, kw_only=True)
class Fail:
    """The call failed for ``kind``; ``failure``/``entry`` describe the last attempt, if any."""

    kind: FailKind
    records: tuple[AttemptRecord, ...]
    failure: AttemptFailure | None = None
    entry: ChainEntry | None = None


Action = CallProvider | Sleep | Succeed | Fail


# --- events --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class AttemptSucceeded:
    """The attempt the kernel asked for returned a response."""

    now_ms: int
    http_status: int = 200
    first_token_ms: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class AttemptFailed:
    """The attempt failed; ``draw`` in [0, 1] is the randomness for the next backoff."""

    now_ms: int
    failure: AttemptFailure
    draw: float = 0.5
    first_token_ms: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class AttemptRefused:
    """The shell could not send the attempt (e.g. a budget scope refused its reservation)."""

    now_ms: int
    refusal: Refusal


@dataclass(frozen=True, slots=True, kw_only=True)
class SleepDone:
    """The requested sleep is over."""

    now_ms: int


Event = AttemptSucceeded | AttemptFailed | AttemptRefused | SleepDone


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

    def attempts_on(self, entry: ChainEntry) -> int:
        """How many attempts this call has made on ``entry``'s provider, in any chain position."""
        key = _key(entry)
        return next((count for k, count in self.used if k == key), 0)


def _key(entry: ChainEntry) -> tuple[str, str]:
    return (entry.provider.value, entry.model)


def _bump(used: tuple[tuple[tuple[str, str], int], ...], entry: ChainEntry) -> tuple[tuple[tuple[str, str], int], ...]:
    key = _key(entry)
    count = next((c for k, c in used if k == key), 0)
    return (*((k, c) for k, c in used if k != key), (key, count + 1))


# --- transitions ---------------------------------------------------------------------------------


def _issue(state: KernelState, position: int, now_ms: int) -> tuple[KernelState, Action]:
    """Issue the next attempt at ``position`` or later, or end the call if none may be issued."""
    plan = state.plan
    while position < len(plan.chain) and state.attempts_on(plan.chain[position]) >= plan.max_attempts_per_provider:
        position += 1  # this provider already had its attempts in this call: failover never resets them
    if position >= len(plan.chain):
        return _fail(state, FailKind.ALL_FAILED if plan.chain else FailKind.NO_ELIGIBLE)
    if now_ms >= plan.deadline_at_ms:
        return _fail(state, FailKind.DEADLINE)
    if now_ms >= plan.budget_end_ms:
        return _fail(state, FailKind.ALL_FAILED)
    if len(state.records) >= plan.attempts_cap:
        return _fail(state, FailKind.ATTEMPTS_CAP)
    entry = plan.chain[position]
    limits = (
        (plan.deadline_at_ms - now_ms, Bound.DEADLINE),
        (plan.budget_end_ms - now_ms, Bound.BUDGET),
        (plan.timeout_for(entry.provider), Bound.ATTEMPT),
    )
    timeout_ms, bound = min(limits, key=lambda limit: limit[0])  # ties keep the caller's deadline
    action = CallProvider(
        position=position,
        entry=entry,
        attempt_num=state.attempts_on(entry) + 1,
        timeout_ms=timeout_ms,
        issued_at_ms=now_ms,
        bound=bound,
    )
    new_state = replace(
        state, position=position, used=_bump(state.used, entry), pending=action, calls_issued=state.calls_issued + 1
    )
    return new_state, action


def _fail(
    state: KernelState,
    kind: FailKind,
    failure: AttemptFailure | None = None,
    entry: ChainEntry | None = None,
) -> tuple[KernelState, Action]:
    last = state.records[-1] if state.records else None
    if entry is None and last is not None:
        entry = ChainEntry(provider=last.provider, model=last.model, fallback_position=last.fallback_position)
    action = Fail(kind=kind, records=state.records, failure=failure, entry=entry)
    return replace(state, pending=None, done=True), action


def _record(
    call: CallProvider,
    now_ms: int,
    status: AttemptStatus,
    *,
    http_status: int | None = None,
    retry_reason: RetryReason | None = None,
    first_token_ms: int | None = None,
) -> AttemptRecord:
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

    def done(status: AttemptStatus, kind: FailKind) -> tuple[KernelState, Action]:
        record = _record(call, now_ms, status, http_status=failure.http_status, first_token_ms=event.first_token_ms)
        return _fail(replace(state, records=(*state.records, record)), kind, failure, call.entry)

    if verdict.verdict is Verdict.TERMINAL_AUTH:
        return done(AttemptStatus.TERMINAL_AUTH, FailKind.AUTH)
    if verdict.verdict is Verdict.TERMINAL:
        return done(TERMINAL_STATUS.get(failure.http_status or 400, AttemptStatus.TERMINAL_400), FailKind.TERMINAL)
    if verdict.verdict is Verdict.DEADLINE or now_ms >= plan.deadline_at_ms or cut_by is Bound.DEADLINE:
        return done(AttemptStatus.DEADLINE_EXCEEDED_MID_CALL, FailKind.DEADLINE)
    if now_ms >= plan.budget_end_ms or cut_by is Bound.BUDGET:
        status = AttemptStatus.TIMEOUT_BEFORE_FIRST_TOKEN if timed_out else AttemptStatus.FAILED_OVER
        return done(status, FailKind.ALL_FAILED)

    sleep_did_not_fit = False
    if verdict.verdict is Verdict.RETRY and state.attempts_on(call.entry) < plan.max_attempts_per_provider:
        sleep_ms = _sleep_before_retry(plan, call, failure, event.draw)
        if now_ms + sleep_ms < plan.effective_end_ms:  # a call can still be issued after waking
            assert verdict.reason is not None  # classify's postcondition: RETRY carries a reason
            record = _record(
                call,
                now_ms,
                RETRY_STATUS[verdict.reason],
                http_status=failure.http_status,
                retry_reason=verdict.reason,
                first_token_ms=event.first_token_ms,
            )
            recorded = replace(state, records=(*state.records, record))
            if len(recorded.records) >= plan.attempts_cap:
                return _fail(recorded, FailKind.ATTEMPTS_CAP, failure, call.entry)  # no sleep before a stop
            sleep = Sleep(duration_ms=sleep_ms, retry_after=_honours_retry_after(failure))
            return replace(recorded, pending=sleep), sleep
        sleep_did_not_fit = True  # no sleep past the budget or the deadline: fail over at once

    record = _record(
        call,
        now_ms,
        AttemptStatus.FAILED_OVER,
        http_status=failure.http_status,
        retry_reason=verdict.reason,
        first_token_ms=event.first_token_ms,
    )
    next_state, action = _issue(
        replace(state, records=(*state.records, record), pending=None), call.position + 1, now_ms
    )
    if isinstance(action, Fail):
        kind = action.kind
        if kind is FailKind.ALL_FAILED and sleep_did_not_fit and plan.deadline_at_ms <= plan.budget_end_ms:
            kind = FailKind.DEADLINE  # nowhere to fail over, and the retry would end past the caller's deadline
        return _fail(next_state, kind, failure, call.entry)
    return next_state, action


def _honours_retry_after(failure: AttemptFailure) -> bool:
    return (
        failure.kind is FailureKind.HTTP_STATUS
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
    if isinstance(state.pending, Sleep):
        return isinstance(event, SleepDone)
    return isinstance(state.pending, CallProvider) and not isinstance(event, SleepDone)


def _step(state: KernelState, event: Event) -> tuple[KernelState, Action]:
    pending = state.pending
    if isinstance(pending, Sleep):
        return _issue(replace(state, pending=None), state.position, event.now_ms)
    if not isinstance(pending, CallProvider) or isinstance(event, SleepDone):
        raise ValueError(f"event {event!r} does not answer the pending action {pending!r}")
    if isinstance(event, AttemptSucceeded):
        record = _record(
            pending,
            event.now_ms,
            AttemptStatus.SUCCEEDED,
            http_status=event.http_status,
            first_token_ms=event.first_token_ms,
        )
        records = (*state.records, record)
        return replace(state, records=records, pending=None, done=True), Succeed(records=records, entry=pending.entry)
    if isinstance(event, AttemptRefused):
        if event.refusal is Refusal.TERMINAL:
            return _fail(replace(state, pending=None), FailKind.BUDGET, None, pending.entry)
        return _issue(replace(state, pending=None), pending.position + 1, event.now_ms)
    return _on_failure(state, pending, event)


def plan_valid(plan: CallPlan) -> bool:
    """A plan the kernel accepts: positive limits, a usable backoff, positions matching the chain."""
    backoff = plan.backoff
    return (
        plan.budget_ms > 0
        and plan.max_attempts_per_provider >= 1
        and plan.attempts_cap >= 1
        and plan.attempt_timeout_ms > 0
        and all(timeout_ms > 0 for _, timeout_ms in plan.provider_timeouts_ms)
        and 0 <= backoff.jitter_percent <= 100
        and all(d >= 0 for d in backoff.delays_ms)
        and (
            (0 < backoff.base_ms <= backoff.cap_ms)
            if backoff.full_jitter
            else len(backoff.delays_ms) + 1 >= plan.max_attempts_per_provider
        )
    )


def well_formed(state: KernelState) -> bool:
    """The kernel's invariant: bounded records, per-provider attempt counts, positions in range."""
    plan = state.plan
    return (
        plan_valid(plan)
        and len(state.records) <= plan.attempts_cap
        and all(count <= plan.max_attempts_per_provider for _, count in state.used)
        and 0 <= state.position <= max(0, len(plan.chain))
        and state.calls_issued <= plan.attempts_cap
        and (not state.done or state.pending is None)
    )


def _action_within_limits(state: KernelState, action: Action) -> bool:
    plan = state.plan
    if isinstance(action, CallProvider):
        return (
            action.issued_at_ms < plan.effective_end_ms
            and action.issued_at_ms + action.timeout_ms <= plan.effective_end_ms
            and 0 < action.timeout_ms <= plan.timeout_for(action.entry.provider)
            and 1 <= action.attempt_num <= plan.max_attempts_per_provider
            and action.entry == plan.chain[action.position]
        )
    return True


@icontract.require(plan_valid)
@icontract.ensure(lambda result: well_formed(result[0]))
@icontract.ensure(lambda result: _action_within_limits(result[0], result[1]))
def start(plan: CallPlan, now_ms: int) -> tuple[KernelState, Action]:
    """Begin a call at ``now_ms``: the first attempt on the primary, or a failure if none may start."""
    return _issue(KernelState(plan=plan), 0, now_ms)


@icontract.require(well_formed)
@icontract.require(lambda state: not state.done, "no event is accepted after the call ended")
@icontract.require(answers, "the event must answer the pending action")
@icontract.ensure(lambda result: well_formed(result[0]))
@icontract.ensure(lambda result: _action_within_limits(result[0], result[1]))
@icontract.ensure(
    lambda event, result: (
        not isinstance(result[1], Sleep) or result[0].plan.effective_end_ms > event.now_ms + result[1].duration_ms
    )
)
@icontract.ensure(lambda state, result: len(result[0].records) >= len(state.records))
def step(state: KernelState, event: Event) -> tuple[KernelState, Action]:
    """Feed what happened to the pending action; get the new state and the next action."""
    return _step(state, event)
