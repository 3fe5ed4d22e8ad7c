"""Budgeted hedging's decisions (core/hedge.py): the bucket, the delay, when and where a hedge goes,
and how a finished race is folded into the kernel state."""

from __future__ import annotations

import icontract
import pytest
from hypothesis import given
from hypothesis import strategies as st

from routeproof.core import kernel
from routeproof.core.balance import Member
from routeproof.core.hedge import (
    DEFAULT_BURST,
    MILLI,
    MIN_HEDGE_LEFT_MS,
    MIN_P95_SAMPLES,
    HedgeLater,
    HedgeNever,
    HedgeNow,
    HedgePolicy,
    NeverReason,
    Runner,
    cancelled_booking_pico_usd,
    decide,
    delay_ms,
    earn,
    fold_race,
    loser_status,
    p95_ms,
    spend,
    taken_first,
    waits_for_the_other,
)
from routeproof.core.kernel import AttemptSucceeded, CallPlan, CallProvider, KernelState, Succeed
from routeproof.core.types import AttemptFailure, AttemptFailureKind, AttemptStatus, ChainEntry, ProviderName

GROUP = {"a": Member(priority=0), "b": Member(priority=0), "c": Member(priority=1)}
POLICY = HedgePolicy(delay_ms=300, max_extra_ratio_milli=100)


def chain(*names: str) -> tuple[ChainEntry, ...]:
    """One chain entry per name, model ``m``."""
    return tuple(ChainEntry(provider=ProviderName(n), model="m", fallback_position=i) for i, n in enumerate(names))


def started(
    names: tuple[str, ...] = ("a", "b", "c"), *, deadline_at_ms: int = 20_000
) -> tuple[KernelState, CallProvider]:
    """A call started at 0 with its first attempt pending."""
    state, action = kernel.start(CallPlan(chain=chain(*names), started_at_ms=0, deadline_at_ms=deadline_at_ms), 0)
    assert isinstance(action, CallProvider)
    return state, action


def ask(
    state: KernelState,
    pending: CallProvider,
    *,
    now_ms: int = 300,
    bucket_milli: int = MILLI,
    retry_spent: frozenset[str] = frozenset(),
    hedged: bool = False,
    members: dict[str, Member] | None = None,
) -> object:
    """decide() with the defaults of a hedge that is due."""
    return decide(
        POLICY,
        state,
        pending,
        GROUP if members is None else members,
        now_ms=now_ms,
        wait_ms=300,
        bucket_milli=bucket_milli,
        retry_spent=retry_spent,
        hedged=hedged,
    )


def test_a_due_hedge_goes_to_the_other_deployment_of_the_group() -> None:
    """After its delay, the hedge targets b (a's group), within the deadline and the budget."""
    state, pending = started()
    decision = ask(state, pending)
    assert isinstance(decision, HedgeNow)
    assert decision.action.entry.provider == ProviderName("b")
    assert decision.action.issued_at_ms == 300
    assert decision.action.timeout_at_ms <= state.plan.effective_end_ms


def test_before_its_delay_the_hedge_waits() -> None:
    """Asked early, the answer is 'not before issued + delay'."""
    state, pending = started()
    assert ask(state, pending, now_ms=10) == HedgeLater(at_ms=300)


def test_an_empty_bucket_is_judged_when_the_hedge_is_due_not_before() -> None:
    """A call that starts while the bucket is empty waits for its delay (calls started meanwhile
    earn tokens); the bucket says never only once the hedge is due."""
    state, pending = started()
    assert ask(state, pending, now_ms=10, bucket_milli=0) == HedgeLater(at_ms=300)
    assert ask(state, pending, now_ms=300, bucket_milli=0) == HedgeNever(reason=NeverReason.RATIO_SPENT)


@pytest.mark.parametrize(
    ("kwargs", "reason"),
    [
        ({"bucket_milli": MILLI - 1}, NeverReason.RATIO_SPENT),
        ({"retry_spent": frozenset({"b"})}, NeverReason.RETRY_BUDGET),
        ({"hedged": True}, NeverReason.ALREADY_HEDGED),
        ({"members": {"a": Member(priority=0), "b": Member(priority=1)}}, NeverReason.NO_OTHER_DEPLOYMENT),
        ({"members": {}}, NeverReason.NO_OTHER_DEPLOYMENT),
    ],
)
def test_never_names_its_reason(kwargs: dict[str, object], reason: NeverReason) -> None:
    """Each limit that forbids a hedge is the reason given."""
    state, pending = started()
    assert ask(state, pending, **kwargs) == HedgeNever(reason=reason)  # type: ignore[arg-type]  # the parametrized keywords


def test_no_hedge_the_deadline_cannot_cover() -> None:
    """A deadline 400 ms out leaves 100 ms after a 300 ms delay: less than the delay, so never."""
    state, pending = started(deadline_at_ms=400)
    assert ask(state, pending, now_ms=0) == HedgeNever(reason=NeverReason.DEADLINE)


def test_the_attempts_cap_must_hold_both_records_of_a_race() -> None:
    """A cap of 2 holds the pending attempt and the hedge: due, it goes; a cap of 1 cannot (never,
    the cap named)."""
    for cap, hedges in ((2, True), (1, False)):
        plan = CallPlan(chain=chain("a", "b", "c"), started_at_ms=0, deadline_at_ms=20_000, attempts_cap=cap)
        state, pending = kernel.start(plan, 0)
        assert isinstance(pending, CallProvider)
        decision = ask(state, pending)
        assert isinstance(decision, HedgeNow) if hedges else decision == HedgeNever(reason=NeverReason.ATTEMPTS_CAP)


def test_a_deadline_that_leaves_exactly_the_delay_still_takes_the_hedge() -> None:
    """Deadline 600 ms, delay 300 ms: due at 300 with 300 left, as much as the delay: the hedge goes."""
    state, pending = started(deadline_at_ms=600)
    assert isinstance(ask(state, pending), HedgeNow)


def test_a_deadline_at_the_budgets_end_is_named_the_deadline() -> None:
    """The caller's deadline falls with the 30 s budget's end and leaves too little: the reason
    named is the deadline (the caller's own bound), not the budget."""
    state, pending = started(deadline_at_ms=30_000)
    assert ask(state, pending, now_ms=29_900) == HedgeNever(reason=NeverReason.DEADLINE)


def test_a_budget_that_leaves_exactly_the_delay_still_takes_the_hedge() -> None:
    """The caller's deadline later than the budget; due at 29 700 with 300 ms of budget left, as much
    as the delay: the hedge goes, within the budget's end."""
    state, pending = started(deadline_at_ms=60_000)
    late = CallProvider(
        position=0,
        entry=pending.entry,
        attempt_num=1,
        timeout_ms=300,
        issued_at_ms=29_400,
        timeout_at_ms=29_700,
        bound=pending.bound,
    )
    state = KernelState(plan=state.plan, used=state.used, pending=late, calls_issued=1)
    decision = ask(state, late, now_ms=29_700)
    assert isinstance(decision, HedgeNow)
    assert decision.action.timeout_at_ms == 30_000


def test_no_hedge_the_30_s_budget_cannot_cover() -> None:
    """Near the end of the 30 s budget (the caller's deadline later), never, for the budget."""
    state, pending = started(deadline_at_ms=60_000)
    late = CallProvider(
        position=0,
        entry=pending.entry,
        attempt_num=1,
        timeout_ms=200,
        issued_at_ms=29_800,
        timeout_at_ms=30_000,
        bound=pending.bound,
    )
    state = KernelState(plan=state.plan, used=state.used, pending=late, calls_issued=1)
    assert ask(state, late, now_ms=29_800) == HedgeNever(reason=NeverReason.BUDGET)


def test_a_deployment_already_tried_is_no_target() -> None:
    """Only a deployment this call has not tried yet can take the hedge."""
    state, pending = started(("a", "b"))
    tried = KernelState(plan=state.plan, used=(*state.used, (("b", "m"), 1)), pending=pending, calls_issued=1)
    assert ask(tried, pending) == HedgeNever(reason=NeverReason.NO_OTHER_DEPLOYMENT)


@given(
    now_ms=st.integers(0, 40_000),
    deadline_at_ms=st.integers(1, 40_000),
    wait_ms=st.integers(0, 30_000),
    bucket_milli=st.integers(0, 3 * MILLI),
    names=st.lists(st.sampled_from(["a", "b", "c", "d"]), min_size=1, max_size=4, unique=True),
    priorities=st.lists(st.integers(0, 2), min_size=4, max_size=4),
)
def test_a_hedge_is_always_another_deployment_within_every_bound(  # noqa: PLR0917  # one parameter per strategy
    now_ms: int, deadline_at_ms: int, wait_ms: int, bucket_milli: int, names: list[str], priorities: list[int]
) -> None:
    """Whatever the state, a HedgeNow targets another, untried deployment of the pending one's group,
    after the delay, with a token, ending by the call's end with at least the minimum left."""
    plan = CallPlan(chain=chain(*names), started_at_ms=0, deadline_at_ms=deadline_at_ms)
    state, pending = kernel.start(plan, 0)
    if not isinstance(pending, CallProvider):
        return
    members = {n: Member(priority=p) for n, p in zip(["a", "b", "c", "d"], priorities, strict=True)}
    now_ms = max(now_ms, pending.issued_at_ms)
    decision = decide(
        POLICY, state, pending, members, now_ms=now_ms, wait_ms=wait_ms, bucket_milli=bucket_milli,
        retry_spent=frozenset(), hedged=False,
    )  # fmt: skip
    if isinstance(decision, HedgeNow):
        target = decision.action.entry
        assert target.provider != pending.entry.provider
        assert members[target.provider.value].priority == members[pending.entry.provider.value].priority
        assert bucket_milli >= MILLI
        assert now_ms >= pending.issued_at_ms + wait_ms
        assert decision.action.timeout_at_ms <= plan.effective_end_ms
        assert plan.effective_end_ms - now_ms >= max(MIN_HEDGE_LEFT_MS, wait_ms)
    elif isinstance(decision, HedgeLater):
        assert decision.at_ms == pending.issued_at_ms + wait_ms > now_ms


@given(ratio=st.integers(1, MILLI), burst=st.integers(1, 5), outcomes=st.lists(st.booleans(), max_size=300))
def test_hedges_never_exceed_the_ratio_of_calls_plus_the_burst(ratio: int, burst: int, outcomes: list[bool]) -> None:
    """Over any run of n calls, hedging whenever the bucket allows: hedges <= ratio x n + burst."""
    policy = HedgePolicy(max_extra_ratio_milli=ratio, burst_milli=burst * MILLI)
    tokens = hedges = 0
    for wants in outcomes:
        tokens = earn(policy, tokens)
        if wants and tokens >= MILLI:
            tokens = spend(tokens)
            hedges += 1
    assert hedges * MILLI <= ratio * len(outcomes) + burst * MILLI
    assert hedges * MILLI <= ratio * len(outcomes)  # the bucket starts empty: not even the burst at start


def test_the_default_bucket_hedges_a_cluster_of_slow_answers() -> None:
    """With no burst configured, 100 quiet calls at the default 10 % let the next ten slow calls all be
    hedged (a one-hedge bucket, the old default, hedged one of them and left the p99 where it was in
    86 % of the model's runs)."""
    policy = HedgePolicy()
    tokens = 0
    for _ in range(100):
        tokens = earn(policy, tokens)
    hedged = 0
    for _ in range(10):
        tokens = earn(policy, tokens)
        if tokens >= MILLI:
            tokens = spend(tokens)
            hedged += 1
    assert (policy.burst_milli, hedged) == (DEFAULT_BURST * MILLI, 10)


def test_ten_percent_is_one_hedge_in_ten_calls() -> None:
    """0.1 earns a whole hedge on the tenth call, not before."""
    tokens = 0
    for _ in range(9):
        tokens = earn(POLICY, tokens)
    assert tokens < MILLI <= earn(POLICY, tokens)


def test_spending_without_a_token_is_refused() -> None:
    """spend() on an empty bucket violates its precondition."""
    with pytest.raises(icontract.ViolationError):
        spend(MILLI - 1)


def test_p95_is_the_nearest_rank_and_needs_samples() -> None:
    """p95 of 1..100 is 95; with fewer than MIN_P95_SAMPLES samples there is none."""
    assert p95_ms(tuple(range(1, 101))) == 95
    assert p95_ms(tuple(range(1, 201))) == 190
    assert p95_ms(tuple(range(MIN_P95_SAMPLES - 1))) is None
    assert p95_ms(tuple(range(1, MIN_P95_SAMPLES + 1))) == 19  # exactly enough samples


def test_the_p95_delay_falls_back_to_the_fixed_one() -> None:
    """A p95 policy uses the observed p95, or its delay_ms until there is one; a fixed policy ignores it."""
    p95 = HedgePolicy(delay_ms=700, p95=True)
    assert (delay_ms(p95, 120), delay_ms(p95, None), delay_ms(POLICY, 120)) == (120, 700, 300)


def test_bad_policies_name_the_value() -> None:
    """Out-of-range values are refused at construction, naming them."""
    with pytest.raises(ValueError, match="got 0"):
        HedgePolicy(max_extra_ratio_milli=0)
    with pytest.raises(ValueError, match="got -1"):
        HedgePolicy(delay_ms=-1)


def test_a_cancelled_loser_books_its_reservation() -> None:
    """The loser's usage never arrived: it books the reserved worst case, never zero."""
    assert cancelled_booking_pico_usd(12_345) == 12_345


def test_a_race_folds_into_the_kernel_and_the_winner_succeeds() -> None:
    """The hedge (b) won: a is recorded HEDGE_CANCELLED, b's success ends the call, records end SUCCEEDED."""
    state, pending = started()
    decision = ask(state, pending)
    assert isinstance(decision, HedgeNow)
    hedge = decision.action
    folded = fold_race(state, hedge, kept=hedge, other=pending, other_failure=None, other_now_ms=420)
    after, action = kernel.step(folded, AttemptSucceeded(now_ms=420))
    assert isinstance(action, Succeed)
    assert [(r.provider.value, r.status) for r in action.records] == [
        ("a", AttemptStatus.HEDGE_CANCELLED),
        ("b", AttemptStatus.SUCCEEDED),
    ]
    assert action.records[0].elapsed_ms == 420
    assert after.attempts_on(hedge.entry) == 1


def test_a_retryable_failure_waits_for_the_other_a_terminal_one_does_not() -> None:
    """A 503 leaves the race running; a 401 or a 400 ends it."""

    def status(code: int) -> AttemptFailure:
        return AttemptFailure(kind=AttemptFailureKind.HTTP_STATUS, http_status=code, message="x")

    assert waits_for_the_other(status(503))
    assert not waits_for_the_other(status(401))
    assert not waits_for_the_other(status(400))


def test_a_loser_that_failed_is_recorded_failed_over_with_its_status() -> None:
    """The primary got a 503 while the hedge ran, and the hedge won: a's record is FAILED_OVER with 503,
    not HEDGE_CANCELLED (the record rule lives here, not in the shell)."""
    state, pending = started()
    decision = ask(state, pending)
    assert isinstance(decision, HedgeNow)
    hedge = decision.action
    failure = AttemptFailure(kind=AttemptFailureKind.HTTP_STATUS, http_status=503, message="busy")
    folded = fold_race(state, hedge, kept=hedge, other=pending, other_failure=failure, other_now_ms=300)
    assert (folded.records[-1].status, folded.records[-1].http_status) == (AttemptStatus.FAILED_OVER, 503)
    assert loser_status(failure) is AttemptStatus.FAILED_OVER
    assert loser_status(None) is AttemptStatus.HEDGE_CANCELLED


def test_a_tie_goes_to_the_primary() -> None:
    """Both ended in one loop turn: the kernel's own attempt is taken first; alone, each is taken."""
    assert taken_first(primary_ended=True, hedge_ended=True) is Runner.PRIMARY
    assert taken_first(primary_ended=True, hedge_ended=False) is Runner.PRIMARY
    assert taken_first(primary_ended=False, hedge_ended=True) is Runner.HEDGE
    with pytest.raises(icontract.ViolationError):
        taken_first(primary_ended=False, hedge_ended=False)
