"""Budgeted hedging (issue 32 item 4): when a second, concurrent attempt goes to another deployment.

Theory of operation
-------------------
An alias may carry a :class:`HedgePolicy` (opt-in). While the kernel's pending attempt runs, the
shell (``routeproof.hedging``) asks :func:`decide` what to do, with the call's kernel state, the
pending attempt, the deployment groups, the hedge bucket's level, the target's retry-budget verdict
and the delay (fixed, or the pending deployment's observed p95 from :func:`p95_ms`). The answer is

* :class:`HedgeNow`: send the hedge now, as this :class:`~routeproof.core.kernel.CallProvider`
  (another deployment of the pending one's group, never attempted in this call, its timeout within
  the deadline and the 30 s budget);
* :class:`HedgeLater`: not before ``at_ms`` (ask again then, if the pending attempt is still running);
* :class:`HedgeNever`: not in this call, for :class:`NeverReason`.

The bucket is judged only when the hedge is due (its delay has passed): a call that starts while the
bucket is empty waits for its delay like any other, because every call started meanwhile earns the
alias tokens. (Judged at the start, one hedge drained a small bucket and every call that started in
the next few milliseconds lost its hedge for good: in TRAFFIC-HEDGE, 59 of 400 calls, and with them
enough of the slow ones to leave the p99 where it was.)

The money budget is not an input: the ledger reserves the hedge's worst case atomically before it
is sent (``core/ledger.py``), and a refusal means no hedge (``NeverReason.MONEY``).

The extra-request ratio is a token bucket per alias in integer thousandths: each hedge-enabled call
earns ``max_extra_ratio_milli`` (:func:`earn`), up to ``burst_milli``; a hedge costs :data:`MILLI`
(:func:`spend`) and is allowed only when the bucket holds it. So over any run of ``n`` calls the
hedges sent are at most ``ratio * n + burst`` (the bucket starts empty: no burst at start-up).

When the race ends, :func:`fold_race` writes the attempt that did not decide the call into the
kernel state (a ``HEDGE_CANCELLED`` record for a cancelled loser, ``FAILED_OVER`` for one that
failed while the other ran), counts the hedge as issued, and leaves the deciding attempt pending,
so the kernel's own ``step`` takes the deciding event as it takes any attempt's.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, replace

import icontract

from routeproof.core.balance import Member, groups_of
from routeproof.core.call_plan import Bound
from routeproof.core.classify import Verdict, classify_failure
from routeproof.core.kernel import CallProvider, KernelState, attempt_record, well_formed
from routeproof.core.types import AttemptFailure, AttemptFailureKind, AttemptStatus, RetryReason

__all__ = [
    "DEFAULT_BURST",
    "DEFAULT_FALLBACK_DELAY_MS",
    "FOLDED_STATUSES",
    "MAX_DELAY_MS",
    "MILLI",
    "MIN_HEDGE_LEFT_MS",
    "MIN_P95_SAMPLES",
    "HedgeDecision",
    "HedgeLater",
    "HedgeNever",
    "HedgeNow",
    "HedgePolicy",
    "NeverReason",
    "Runner",
    "cancelled_booking_pico_usd",
    "decide",
    "delay_ms",
    "earn",
    "fold_race",
    "loser_status",
    "p95_ms",
    "spend",
    "taken_first",
    "waits_for_the_other",
]

MILLI = 1000
"""One hedge costs this many bucket thousandths."""

DEFAULT_BURST = 10
"""The bucket's size in hedges unless configured. The bucket starts empty, so the burst never lifts the
ratio bound; it decides whether a cluster of slow answers is hedged. At ratio 0.1 over 400 calls with
5 % slow answers, the p99 stays slow in 86 % of runs at a burst of 1, 20 % at 2 and 0.55 % at 10
(``benchmarks/traffic/hedge_bucket_model.py --bursts 1 2 10``, 2,000 seeds, lag 30)."""

MIN_HEDGE_LEFT_MS = 250
"""A hedge is not sent when less than this (or less than its own delay) is left of the call."""

MIN_P95_SAMPLES = 20
"""A p95 delay needs this many latency samples of the deployment; before that the fallback applies."""

DEFAULT_FALLBACK_DELAY_MS = 1000
"""The p95 delay's fallback while the deployment has too few samples."""

MAX_DELAY_MS = 30_000
"""The longest delay: the 30 s failover budget."""


@dataclass(frozen=True, slots=True, kw_only=True)
class HedgePolicy:
    """One alias's hedging. ``delay_ms``: the fixed delay, or (``p95``) the fallback until the pending
    deployment has :data:`MIN_P95_SAMPLES` samples; ``max_extra_ratio_milli``: extra requests per
    call in thousandths (100 = 10 %); ``burst_milli``: the bucket's capacity (1000 = one hedge)."""

    delay_ms: int = DEFAULT_FALLBACK_DELAY_MS
    p95: bool = False
    max_extra_ratio_milli: int = 100
    burst_milli: int = DEFAULT_BURST * MILLI

    def __post_init__(self) -> None:  # plain code: kept under python -O
        if (
            isinstance(self.delay_ms, bool)
            or not isinstance(self.delay_ms, int)
            or not 0 <= self.delay_ms <= MAX_DELAY_MS
        ):
            raise ValueError(f"hedge delay_ms must be an int in 0..{MAX_DELAY_MS}, got {self.delay_ms!r}")
        if not isinstance(self.p95, bool):
            raise ValueError(f"hedge p95 must be a bool, got {self.p95!r}")
        ratio = self.max_extra_ratio_milli
        if isinstance(ratio, bool) or not isinstance(ratio, int) or not 1 <= ratio <= MILLI:
            raise ValueError(f"hedge max_extra_ratio must be in 0.001..1 (milli 1..1000), got {ratio!r}")
        burst = self.burst_milli
        if isinstance(burst, bool) or not isinstance(burst, int) or not MILLI <= burst <= 100 * MILLI:
            raise ValueError(f"hedge burst must be 1..100 hedges (milli 1000..100000), got {burst!r}")


class NeverReason(enum.Enum):
    """Why a call gets no hedge."""

    ALREADY_HEDGED = "already_hedged"  # one hedge per call
    NO_OTHER_DEPLOYMENT = "no_other_deployment"  # the pending deployment's group has no untried other
    RATIO_SPENT = "ratio_spent"  # the alias's extra-request bucket is empty
    RETRY_BUDGET = "retry_budget"  # the target's retry budget is spent
    DEADLINE = "deadline"  # the caller's deadline leaves no room for a second attempt
    BUDGET = "budget"  # the 30 s failover budget leaves no room for a second attempt
    ATTEMPTS_CAP = "attempts_cap"  # two more records would pass the attempts cap
    MONEY = "money"  # the ledger refused to reserve the hedge's worst case (the shell's verdict)
    NO_SLOT = "no_slot"  # no local in-flight slot free for the hedge (the shell's verdict)


@dataclass(frozen=True, slots=True, kw_only=True)
class HedgeNow:
    """Send ``action`` (the hedge) now."""

    action: CallProvider


@dataclass(frozen=True, slots=True, kw_only=True)
class HedgeLater:
    """Ask again at ``at_ms``."""

    at_ms: int


@dataclass(frozen=True, slots=True, kw_only=True)
class HedgeNever:
    """No hedge in this call."""

    reason: NeverReason


HedgeDecision = HedgeNow | HedgeLater | HedgeNever


# --- the bucket ----------------------------------------------------------------------------------


def _earn(policy: HedgePolicy, tokens_milli: int) -> int:
    return min(policy.burst_milli, tokens_milli + policy.max_extra_ratio_milli)


@icontract.require(lambda policy, tokens_milli: 0 <= tokens_milli <= policy.burst_milli)
@icontract.ensure(lambda policy, result: 0 <= result <= policy.burst_milli)
@icontract.ensure(lambda policy, tokens_milli, result: result <= tokens_milli + policy.max_extra_ratio_milli)
@icontract.ensure(lambda tokens_milli, result: result >= tokens_milli)
def earn(policy: HedgePolicy, tokens_milli: int) -> int:
    """The bucket after one hedge-enabled call: ``max_extra_ratio`` more, capped at the burst."""
    return _earn(policy, tokens_milli)


def _spend(tokens_milli: int) -> int:
    return tokens_milli - MILLI


@icontract.require(lambda tokens_milli: tokens_milli >= MILLI, "a hedge needs a whole token")
@icontract.ensure(lambda tokens_milli, result: result == tokens_milli - MILLI >= 0)
def spend(tokens_milli: int) -> int:
    """The bucket after one hedge was sent."""
    return _spend(tokens_milli)


# --- the delay -----------------------------------------------------------------------------------


def _p95_ms(latencies_ms: tuple[int, ...]) -> int | None:
    if len(latencies_ms) < MIN_P95_SAMPLES:
        return None
    ordered = sorted(latencies_ms)
    rank = -(-95 * len(ordered) // 100)  # ceil(0.95 n), 1-based (nearest rank)
    return ordered[rank - 1]


@icontract.require(lambda latencies_ms: all(x >= 0 for x in latencies_ms))
@icontract.ensure(lambda latencies_ms, result: (result is None) == (len(latencies_ms) < MIN_P95_SAMPLES))
@icontract.ensure(lambda latencies_ms, result: result is None or result in latencies_ms)
@icontract.ensure(
    lambda latencies_ms, result: (
        result is None or 100 * sum(1 for x in latencies_ms if x <= result) >= 95 * len(latencies_ms)
    )
)
def p95_ms(latencies_ms: tuple[int, ...]) -> int | None:
    """The nearest-rank p95 of a deployment's recent latencies, or None with too few samples."""
    return _p95_ms(latencies_ms)


def _delay_ms(policy: HedgePolicy, observed_p95_ms: int | None) -> int:
    if policy.p95 and observed_p95_ms is not None:
        return min(MAX_DELAY_MS, observed_p95_ms)
    return policy.delay_ms


@icontract.require(lambda observed_p95_ms: observed_p95_ms is None or observed_p95_ms >= 0)
@icontract.ensure(lambda result: 0 <= result <= MAX_DELAY_MS)
@icontract.ensure(lambda policy, result: policy.p95 or result == policy.delay_ms)
def delay_ms(policy: HedgePolicy, observed_p95_ms: int | None) -> int:
    """How long after the pending attempt was issued a hedge may go: fixed, or the observed p95."""
    return _delay_ms(policy, observed_p95_ms)


# --- the decision --------------------------------------------------------------------------------


def _target(
    state: KernelState, pending: CallProvider, members: Mapping[str, Member], retry_spent: frozenset[str]
) -> tuple[int | None, bool]:
    """The chain position of the first other deployment of the pending one's group never tried in
    this call whose retry budget is not spent; and whether any such deployment exists at all."""
    chain = state.plan.chain
    start = 0
    for group in groups_of(chain, members):
        end = start + len(group)
        if start <= pending.position < end:
            others = [
                p
                for p in range(start, end)
                if chain[p].provider != pending.entry.provider and state.attempts_on(chain[p]) == 0
            ]
            allowed = [p for p in others if chain[p].provider.value not in retry_spent]
            return (allowed[0] if allowed else None), bool(others)
        start = end
    return None, False  # pragma: no cover - the pending position is in the chain (kernel invariant)


def _hedge_action(state: KernelState, position: int, now_ms: int) -> CallProvider:
    plan = state.plan
    entry = plan.chain[position]
    limits = (
        (plan.deadline_at_ms - now_ms, Bound.DEADLINE),
        (plan.budget_end_ms - now_ms, Bound.BUDGET),
        (plan.timeout_for(entry.provider), Bound.ATTEMPT),
    )
    timeout_ms, bound = min(limits, key=lambda limit: limit[0])  # ties keep the caller's deadline
    return CallProvider(
        position=position,
        entry=entry,
        attempt_num=state.attempts_on(entry) + 1,
        timeout_ms=timeout_ms,
        issued_at_ms=now_ms,
        timeout_at_ms=now_ms + timeout_ms,
        bound=bound,
    )


def _decide(
    *,
    policy: HedgePolicy,
    state: KernelState,
    pending: CallProvider,
    members: Mapping[str, Member],
    now_ms: int,
    wait_ms: int,
    bucket_milli: int,
    retry_spent: frozenset[str],
    hedged: bool,
) -> HedgeDecision:
    plan = state.plan
    if hedged:
        return HedgeNever(reason=NeverReason.ALREADY_HEDGED)
    position, any_other = _target(state, pending, members, retry_spent)
    if not any_other:
        return HedgeNever(reason=NeverReason.NO_OTHER_DEPLOYMENT)
    if position is None:
        return HedgeNever(reason=NeverReason.RETRY_BUDGET)
    if len(state.records) + 2 > plan.attempts_cap or state.calls_issued + 1 > plan.attempts_cap:
        return HedgeNever(reason=NeverReason.ATTEMPTS_CAP)
    at_ms = max(now_ms, pending.issued_at_ms + wait_ms)
    needed_ms = max(MIN_HEDGE_LEFT_MS, wait_ms)  # the second attempt must have time to answer
    if plan.deadline_at_ms - at_ms < needed_ms and plan.deadline_at_ms <= plan.budget_end_ms:
        return HedgeNever(reason=NeverReason.DEADLINE)
    if plan.effective_end_ms - at_ms < needed_ms:
        return HedgeNever(reason=NeverReason.BUDGET)
    if at_ms > now_ms:
        return HedgeLater(at_ms=at_ms)
    if bucket_milli < MILLI:  # judged when the hedge is due: calls earn tokens while this one waits
        return HedgeNever(reason=NeverReason.RATIO_SPENT)
    return HedgeNow(action=_hedge_action(state, position, now_ms))


def _sends_a_valid_hedge(
    state: KernelState, pending: CallProvider, now_ms: int, retry_spent: frozenset[str], result: HedgeDecision
) -> bool:
    if not isinstance(result, HedgeNow):
        return True
    plan, action = state.plan, result.action
    return (
        action.entry.provider != pending.entry.provider
        and action.entry.provider.value not in retry_spent
        and action.entry == plan.chain[action.position]
        and state.attempts_on(action.entry) == 0
        and action.issued_at_ms == now_ms
        and action.timeout_ms > 0
        and action.issued_at_ms + action.timeout_ms == action.timeout_at_ms <= plan.effective_end_ms
        and plan.effective_end_ms - now_ms >= MIN_HEDGE_LEFT_MS
    )


@icontract.require(lambda state: well_formed(state) and not state.done)
@icontract.require(lambda state, pending: state.pending == pending, "the pending attempt is the kernel's")
@icontract.require(lambda pending, now_ms: now_ms >= pending.issued_at_ms)
@icontract.require(lambda wait_ms, bucket_milli: wait_ms >= 0 and bucket_milli >= 0)
@icontract.ensure(_sends_a_valid_hedge)
@icontract.ensure(
    lambda bucket_milli, result: not isinstance(result, HedgeNow) or bucket_milli >= MILLI,
    "no hedge without a whole token in the bucket",
)
@icontract.ensure(lambda hedged, result: not hedged or isinstance(result, HedgeNever))
@icontract.ensure(
    lambda pending, now_ms, wait_ms, result: (
        not isinstance(result, HedgeNow) or now_ms >= pending.issued_at_ms + wait_ms
    ),
    "no hedge before its delay",
)
@icontract.ensure(lambda now_ms, result: not isinstance(result, HedgeLater) or result.at_ms > now_ms)
@icontract.ensure(
    lambda pending, now_ms, wait_ms, result: (
        not (isinstance(result, HedgeNever) and result.reason is NeverReason.RATIO_SPENT)
        or now_ms >= pending.issued_at_ms + wait_ms
    ),
    "the bucket is judged when the hedge is due, not before: calls earn tokens during the delay",
)
def decide(
    policy: HedgePolicy,
    state: KernelState,
    pending: CallProvider,
    members: Mapping[str, Member],
    *,
    now_ms: int,
    wait_ms: int,
    bucket_milli: int,
    retry_spent: frozenset[str],
    hedged: bool,
) -> HedgeDecision:
    """Whether the call hedges its pending attempt now, later or never (see the module docstring).

    ``wait_ms``: the delay (:func:`delay_ms`); ``bucket_milli``: the alias's bucket; ``retry_spent``:
    the names of deployments whose retry budget is spent (never a hedge's target); ``hedged``: this
    call already hedged once.
    """
    return _decide(
        policy=policy,
        state=state,
        pending=pending,
        members=members,
        now_ms=now_ms,
        wait_ms=wait_ms,
        bucket_milli=bucket_milli,
        retry_spent=retry_spent,
        hedged=hedged,
    )


# --- the end of the race -------------------------------------------------------------------------

FOLDED_STATUSES = frozenset({AttemptStatus.HEDGE_CANCELLED, AttemptStatus.FAILED_OVER})


@icontract.ensure(lambda result: result in FOLDED_STATUSES)
def loser_status(other_failure: AttemptFailure | None) -> AttemptStatus:
    """The record of the race's other attempt: ``FAILED_OVER`` when it failed while the kept one ran
    (its failure is why the call went on elsewhere), ``HEDGE_CANCELLED`` when the race cancelled it."""
    return AttemptStatus.HEDGE_CANCELLED if other_failure is None else AttemptStatus.FAILED_OVER


class Runner(enum.Enum):
    """One of the race's two attempts."""

    PRIMARY = "primary"  # the kernel's own pending attempt
    HEDGE = "hedge"


@icontract.require(lambda primary_ended, hedge_ended: primary_ended or hedge_ended, "one attempt has ended")
@icontract.ensure(lambda primary_ended, result: result is Runner.PRIMARY or not primary_ended)
def taken_first(*, primary_ended: bool, hedge_ended: bool) -> Runner:
    """Which ended attempt the race takes first. Both ended in the same loop turn: the kernel's own
    (primary) attempt, so a tie never hands the call to the hedge."""
    return Runner.PRIMARY if primary_ended else Runner.HEDGE


def _fold_race(
    *,
    state: KernelState,
    hedge: CallProvider,
    kept: CallProvider,
    other: CallProvider,
    other_failure: AttemptFailure | None,
    other_now_ms: int,
    other_retry_reason: RetryReason | None,
) -> KernelState:
    http_status = None if other_failure is None else other_failure.http_status
    record = attempt_record(
        other, other_now_ms, loser_status(other_failure), http_status=http_status, retry_reason=other_retry_reason
    )
    key = (hedge.entry.provider.value, hedge.entry.model)
    count = next((c for k, c in state.used if k == key), 0)
    used = (*((k, c) for k, c in state.used if k != key), (key, count + 1))
    return replace(
        state,
        records=(*state.records, record),
        used=used,
        pending=kept,
        position=kept.position,
        calls_issued=state.calls_issued + 1,
    )


@icontract.require(lambda state: well_formed(state) and not state.done)
@icontract.require(lambda state, hedge: isinstance(state.pending, CallProvider) and hedge != state.pending)
@icontract.require(lambda state, hedge, kept, other: {kept, other} == {state.pending, hedge})
@icontract.require(lambda state: len(state.records) + 2 <= state.plan.attempts_cap)
@icontract.ensure(lambda result: well_formed(state=result))
@icontract.ensure(lambda kept, result: result.pending == kept and result.position == kept.position)
@icontract.ensure(
    lambda state, result: result.records[:-1] == state.records and len(result.records) == len(state.records) + 1
)
@icontract.ensure(
    lambda other, other_failure, result: (
        result.records[-1].status in FOLDED_STATUSES
        and (result.records[-1].status is AttemptStatus.HEDGE_CANCELLED) == (other_failure is None)
        and result.records[-1].provider == other.entry.provider
        and result.records[-1].http_status == (None if other_failure is None else other_failure.http_status)
    ),
    "the loser is recorded cancelled, or failed over with its own status",
)
@icontract.ensure(lambda state, result: result.calls_issued == state.calls_issued + 1)
def fold_race(
    state: KernelState,
    hedge: CallProvider,
    *,
    kept: CallProvider,
    other: CallProvider,
    other_failure: AttemptFailure | None,
    other_now_ms: int,
    other_retry_reason: RetryReason | None = None,
) -> KernelState:
    """The kernel state after a race between the pending attempt and ``hedge``: ``other`` recorded
    (:func:`loser_status`: cancelled, or failed over with ``other_failure`` while ``kept`` ran), the
    hedge counted as issued, ``kept`` pending for the kernel's ``step`` to take its event."""
    return _fold_race(
        state=state,
        hedge=hedge,
        kept=kept,
        other=other,
        other_failure=other_failure,
        other_now_ms=other_now_ms,
        other_retry_reason=other_retry_reason,
    )


def _cancelled_booking_pico_usd(reserved_pico_usd: int) -> int:
    return reserved_pico_usd


@icontract.require(lambda reserved_pico_usd: reserved_pico_usd >= 0)
@icontract.ensure(
    lambda reserved_pico_usd, result: result == reserved_pico_usd,
    "a loser cut before its usage arrived books the reserved worst case, never zero",
)
def cancelled_booking_pico_usd(reserved_pico_usd: int) -> int:
    """What a hedge loser cancelled in flight books: the provider may bill what it generated and its
    usage never arrived, so the reserved worst case (core/stream_rules.py's rule for a cut stream)."""
    return _cancelled_booking_pico_usd(reserved_pico_usd)


def _waits_for_the_other(failure: AttemptFailure, context_window_failover: bool) -> bool:
    verdict = classify_failure(failure, context_window_failover=context_window_failover).verdict
    return verdict not in (Verdict.TERMINAL_AUTH, Verdict.TERMINAL, Verdict.DEADLINE)


@icontract.require(
    lambda failure: (
        failure.kind is not AttemptFailureKind.HTTP_STATUS
        or (failure.http_status is not None and 100 <= failure.http_status <= 999)
    ),
    "an HTTP failure carries its status (classify_failure's precondition)",
)
@icontract.ensure(
    lambda failure, context_window_failover, result: (
        not result
        or classify_failure(failure, context_window_failover=context_window_failover).verdict
        not in (Verdict.TERMINAL_AUTH, Verdict.TERMINAL)
    ),
    "a terminal failure (bad credentials, a bad request) ends the race: the other deployment would only repeat it",
)
def waits_for_the_other(failure: AttemptFailure, *, context_window_failover: bool = False) -> bool:
    """Whether a race goes on when one of its attempts failed: the other may still answer, unless
    the failure is terminal (the kernel ends the call on it) or the caller's deadline passed."""
    return _waits_for_the_other(failure, context_window_failover)
