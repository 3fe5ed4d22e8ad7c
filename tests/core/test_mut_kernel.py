"""The kernel's records and endings, field by field: what each failure writes and how each call ends."""

from __future__ import annotations

from dataclasses import replace

import pytest

from routeproof.core import kernel
from routeproof.core.kernel import (
    AttemptFailed,
    BackoffPolicy,
    CallFailureKind,
    CallPlan,
    CallProvider,
    Fail,
    KernelState,
    Sleep,
    SleepDone,
)
from routeproof.core.types import (
    AttemptFailure,
    AttemptFailureKind,
    AttemptRecord,
    AttemptStatus,
    ProviderKind,
    RetryReason,
)
from tests.core.kernel_sim import chain, plan

A, B = ProviderKind.ANTHROPIC, ProviderKind.OPENAI
E503 = AttemptFailure(kind=AttemptFailureKind.HTTP_STATUS, http_status=503)
GARBLED = AttemptFailure(kind=AttemptFailureKind.INVALID_RESPONSE, message="garbled")


def _fail_once(
    p: CallPlan, failure: AttemptFailure, now_ms: int, first_token_ms: int | None = 7, draw: float = 0.0
) -> tuple[KernelState, kernel.Action]:
    state, action = kernel.start(p, 0)
    assert isinstance(action, CallProvider)
    return kernel.step(state, AttemptFailed(now_ms=now_ms, failure=failure, draw=draw, first_token_ms=first_token_ms))


def _record(
    status: AttemptStatus,
    elapsed_ms: int,
    *,
    http_status: int | None = None,
    retry_reason: RetryReason | None = None,
    first_token_ms: int | None = None,
) -> AttemptRecord:
    return AttemptRecord(
        provider=A,
        model="model-0",
        attempt_num=1,
        fallback_position=0,
        status=status,
        elapsed_ms=elapsed_ms,
        http_status=http_status,
        retry_reason=retry_reason,
        first_token_ms=first_token_ms,
    )


def test_a_retried_attempt_records_status_reason_and_first_token() -> None:
    """A 503 that is retried records RETRIED_AFTER_5XX with its HTTP status, reason and time to first token."""
    state, action = _fail_once(plan(chain(A)), E503, 100)
    assert isinstance(action, Sleep)
    assert state.records == (
        _record(
            AttemptStatus.RETRIED_AFTER_5XX, 100, http_status=503, retry_reason=RetryReason.FIVE_XX, first_token_ms=7
        ),
    )


def test_a_failed_over_attempt_records_status_reason_and_first_token() -> None:
    """An attempt that fails over records FAILED_OVER, its HTTP status, retry reason and first token time."""
    state, action = kernel.start(plan(chain(A, B), deadline_ms=10_000), 0)
    assert isinstance(action, CallProvider)
    # the retry would sleep past the deadline, so it fails over at once
    state, action = kernel.step(state, AttemptFailed(now_ms=9_990, failure=E503, draw=0.0, first_token_ms=3))
    assert state.records == (
        _record(AttemptStatus.FAILED_OVER, 9_990, http_status=503, retry_reason=RetryReason.FIVE_XX, first_token_ms=3),
    )


def test_a_terminal_failure_ends_the_call_with_its_record_failure_and_entry() -> None:
    """A 404 ends the call: TERMINAL_404 record (status, first token), Fail with the failure and the entry."""
    failure = AttemptFailure(kind=AttemptFailureKind.HTTP_STATUS, http_status=404)
    p = plan(chain(A, B))
    state, action = _fail_once(p, failure, 50)
    record = _record(AttemptStatus.TERMINAL_404, 50, http_status=404, first_token_ms=7)
    assert action == Fail(kind=CallFailureKind.TERMINAL, records=(record,), failure=failure, entry=p.chain[0])
    assert state.done is True
    assert state.pending is None


def test_a_terminal_failure_with_another_http_status_is_a_terminal_400() -> None:
    """A context overflow (terminal without failover) carrying HTTP 413 is recorded as TERMINAL_400."""
    failure = AttemptFailure(kind=AttemptFailureKind.CONTEXT_OVERFLOW, http_status=413)
    state, action = _fail_once(plan(chain(A)), failure, 50)
    assert isinstance(action, Fail)
    assert action.kind is CallFailureKind.TERMINAL
    assert state.records[0].status is AttemptStatus.TERMINAL_400


def test_a_call_that_ends_after_a_sleep_names_the_last_attempted_entry() -> None:
    """A sleep that wakes past the deadline ends the call; the Fail names the last attempt's entry."""
    p = plan(chain(A, B), deadline_ms=1_000)
    state, action = _fail_once(p, E503, 100)
    assert isinstance(action, Sleep)
    state, end = kernel.step(state, SleepDone(now_ms=1_000))
    assert isinstance(end, Fail)
    assert end.kind is CallFailureKind.DEADLINE
    assert end.entry == p.chain[0]
    assert end.failure is None
    assert state.done is True


def test_an_attempt_timed_out_at_the_deadline_within_tolerance_is_cut_by_the_deadline() -> None:
    """A timeout firing TIMEOUT_TOLERANCE_MS before its deadline-set end counts as the deadline."""
    p = plan(chain(A), deadline_ms=10_000)
    timeout = AttemptFailure(kind=AttemptFailureKind.ATTEMPT_TIMEOUT)
    state, action = _fail_once(p, timeout, 10_000 - kernel.TIMEOUT_TOLERANCE_MS, first_token_ms=None)
    assert isinstance(action, Fail)
    assert action.kind is CallFailureKind.DEADLINE
    assert state.records[-1].status is AttemptStatus.DEADLINE_EXCEEDED_MID_CALL


def test_any_failure_at_the_deadline_is_deadline_exceeded_mid_call() -> None:
    """A 503 answered exactly at the caller's deadline ends the call as DEADLINE, recorded mid-call."""
    state, action = _fail_once(plan(chain(A, B), deadline_ms=10_000), E503, 10_000)
    assert isinstance(action, Fail)
    assert action.kind is CallFailureKind.DEADLINE
    assert state.records == (
        _record(AttemptStatus.DEADLINE_EXCEEDED_MID_CALL, 10_000, http_status=503, first_token_ms=7),
    )


def test_a_failure_exactly_at_the_budget_end_fails_over_no_retry_reason() -> None:
    """A 503 at the 30 s budget's end ends the call ALL_FAILED with a FAILED_OVER record, no retry reason."""
    state, action = _fail_once(plan(chain(A, B)), E503, 30_000)
    assert isinstance(action, Fail)
    assert action.kind is CallFailureKind.ALL_FAILED
    assert state.records == (_record(AttemptStatus.FAILED_OVER, 30_000, http_status=503, first_token_ms=7),)


def test_failing_over_off_the_chain_without_a_retry_is_all_failed() -> None:
    """With the deadline inside the budget, a failover (no retry attempted) off the chain is ALL_FAILED."""
    p = plan(chain(A), deadline_ms=20_000)
    _, action = _fail_once(p, GARBLED, 100)
    assert isinstance(action, Fail)
    assert action.kind is CallFailureKind.ALL_FAILED
    assert action.entry == p.chain[0]
    assert action.failure == GARBLED


def test_a_retry_that_cannot_fit_before_a_deadline_equal_to_the_budget_end_is_deadline() -> None:
    """Deadline == budget end: a retry whose sleep does not fit ends the call as DEADLINE."""
    state, action = _fail_once(plan(chain(A), deadline_ms=30_000), E503, 29_900)
    assert isinstance(action, Fail)
    assert action.kind is CallFailureKind.DEADLINE
    assert state.records[-1].status is AttemptStatus.FAILED_OVER


def test_the_attempts_cap_stops_before_sleeping_and_keeps_the_failure() -> None:
    """When a retried attempt fills the attempts cap, the call ends ATTEMPTS_CAP with that failure, no sleep."""
    p = replace(plan(chain(A)), attempts_cap=1)
    state, action = _fail_once(p, E503, 100)
    assert action == Fail(kind=CallFailureKind.ATTEMPTS_CAP, records=state.records, failure=E503, entry=p.chain[0])


def test_the_retry_sleep_uses_the_plans_backoff_settings() -> None:
    """The band policy's own delays and jitter set the sleep before the retry."""
    policy = BackoffPolicy(delays_ms=(1_000, 1_000), jitter_percent=0)
    _, action = _fail_once(plan(chain(A), backoff=policy), E503, 100)
    assert isinstance(action, Sleep)
    assert (action.duration_ms, action.retry_after) == (1_000, False)


def test_the_full_jitter_sleep_is_capped_by_the_plans_cap() -> None:
    """Full jitter, base 300 ms, cap 400 ms: the second retry sleeps at most 400 ms (not 600) at the largest draw."""
    policy = BackoffPolicy(full_jitter=True, base_ms=300, cap_ms=400)
    state, action = _fail_once(plan(chain(A), backoff=policy), E503, 100, draw=1.0)
    assert isinstance(action, Sleep)
    assert (action.duration_ms, action.retry_after) == (300, False)
    state, action = kernel.step(state, SleepDone(now_ms=400))
    assert isinstance(action, CallProvider)
    _, action = kernel.step(state, AttemptFailed(now_ms=500, failure=E503, draw=1.0))
    assert isinstance(action, Sleep)
    assert (action.duration_ms, action.retry_after) == (400, False)


def test_a_draw_above_one_is_clamped_to_one() -> None:
    """A backoff draw above 1 sleeps exactly as a draw of 1."""
    _, high = _fail_once(plan(chain(A)), E503, 100, draw=1.7)
    _, one = _fail_once(plan(chain(A)), E503, 100, draw=1.0)
    assert high == one


def test_a_provider_timeout_applies_to_its_provider_only_and_never_exceeds_the_attempt_timeout() -> None:
    """timeout_for: a provider's own timeout if shorter, the plan's attempt timeout otherwise."""
    p = replace(plan(chain(A, B)), provider_timeouts_ms=((A, 5_000),))
    assert (p.timeout_for(A), p.timeout_for(B)) == (5_000, 30_000)
    longer = replace(plan(chain(A, B)), provider_timeouts_ms=((A, 40_000),))
    assert longer.timeout_for(A) == 30_000


def test_a_success_is_recorded_with_its_time_and_first_token_and_ends_the_call() -> None:
    """A success records SUCCEEDED, the elapsed time since issue, and the first-token time; the call is done."""
    p = plan(chain(A), start_ms=1_000)
    state, _ = kernel.start(p, 1_000)
    state, action = kernel.step(state, kernel.AttemptSucceeded(now_ms=1_250, first_token_ms=40))
    expected = _record(AttemptStatus.SUCCEEDED, 250, http_status=200, first_token_ms=40)
    assert state.records == (expected,)
    assert action == kernel.Succeed(records=(expected,), entry=p.chain[0])
    assert state.done is True


def test_an_instant_answer_has_zero_elapsed() -> None:
    """An answer at the instant of issue is recorded with elapsed_ms 0."""
    state, _ = kernel.start(plan(chain(A)), 0)
    state, _ = kernel.step(state, kernel.AttemptSucceeded(now_ms=0))
    assert state.records[0].elapsed_ms == 0


def test_only_the_matching_event_answers_the_pending_action() -> None:
    """A SleepDone does not answer a call, and nothing answers a state with nothing pending."""
    state, _ = kernel.start(plan(chain(A)), 0)
    assert not kernel.answers(state, SleepDone(now_ms=1))
    assert kernel.answers(state, AttemptFailed(now_ms=1, failure=E503))
    idle = replace(state, pending=None)
    assert not kernel.answers(idle, AttemptFailed(now_ms=1, failure=E503))


def test_a_sleep_done_for_a_pending_call_is_refused() -> None:
    """Stepping a pending call with SleepDone is a ValueError naming the event and the pending action."""
    state, _ = kernel.start(plan(chain(A)), 0)
    with pytest.raises(
        ValueError, match=r"event SleepDone\(now_ms=1\) does not answer the pending action CallProvider"
    ):
        kernel._step(state, SleepDone(now_ms=1))


def test_a_terminal_budget_refusal_ends_the_call_naming_the_refused_entry() -> None:
    """A refused first attempt (session budget) ends the call BUDGET, no failure, naming the refused entry."""
    p = plan(chain(A, B))
    state, _ = kernel.start(p, 0)
    state, action = kernel.step(state, kernel.AttemptRefused(now_ms=0, refusal=kernel.RefusalEffect.TERMINAL))
    assert action == Fail(kind=CallFailureKind.BUDGET, records=(), failure=None, entry=p.chain[0])
    assert state.done is True


@pytest.mark.parametrize(
    ("changes", "valid"),
    [
        ({"budget_ms": 1}, True),
        ({"budget_ms": 0}, False),
        ({"max_attempts_per_provider": 1}, True),
        ({"max_attempts_per_provider": 0}, False),
        ({"attempt_timeout_ms": 1}, True),
        ({"attempt_timeout_ms": 0}, False),
        ({"provider_timeouts_ms": ((A, 1),)}, True),
        ({"provider_timeouts_ms": ((A, 0),)}, False),
        ({"backoff": BackoffPolicy(jitter_percent=100)}, True),
        ({"backoff": BackoffPolicy(jitter_percent=101)}, False),
        ({"backoff": BackoffPolicy(delays_ms=(0, 0))}, True),
        ({"backoff": BackoffPolicy(delays_ms=(0, -1))}, False),
        ({"backoff": BackoffPolicy(full_jitter=True, base_ms=1, cap_ms=1)}, True),
        ({"backoff": BackoffPolicy(full_jitter=True, base_ms=0, cap_ms=1)}, False),
        ({"backoff": BackoffPolicy(full_jitter=True, base_ms=5, cap_ms=4)}, False),
    ],
)
def test_plan_valid_at_each_limits_edge(changes: dict[str, object], valid: bool) -> None:
    """Each plan limit's smallest valid value is accepted and the next one down refused."""
    assert kernel.plan_valid(replace(plan(chain(A)), **changes)) is valid  # type: ignore[arg-type]


def test_well_formed_rejects_each_broken_clause_alone() -> None:
    """Too many records, an over-used provider, a position off the chain, too many calls or an invalid plan."""
    state, _ = kernel.start(plan(chain(A, B)), 0)
    assert kernel.well_formed(state)
    record = _record(AttemptStatus.FAILED_OVER, 1)
    assert not kernel.well_formed(replace(state, records=(record,) * 17))
    assert not kernel.well_formed(replace(state, used=((("anthropic", "model-0"), 4),)))
    assert not kernel.well_formed(replace(state, position=3))
    assert not kernel.well_formed(replace(state, calls_issued=17))
    assert not kernel.well_formed(replace(state, plan=replace(state.plan, budget_ms=0)))
    assert not kernel.well_formed(KernelState(plan=plan(()), position=1))
    assert kernel.well_formed(KernelState(plan=plan(()), position=0, done=True))  # the end of an empty chain, done


def test_action_within_limits_checks_each_bound() -> None:
    """An issued call must end by the effective end, have a positive timeout within its provider's, a valid number."""
    p = replace(plan(chain(A, B)), provider_timeouts_ms=((A, 5_000),))
    state, action = kernel.start(p, 0)
    assert isinstance(action, CallProvider)
    assert kernel._action_within_limits(state, action)
    assert kernel._action_within_limits(state, replace(action, timeout_ms=1, timeout_at_ms=1))
    for bad in (
        replace(action, timeout_ms=40_000, timeout_at_ms=40_000),
        replace(action, issued_at_ms=28_000, timeout_ms=5_000, timeout_at_ms=33_000),
        replace(action, timeout_ms=0, timeout_at_ms=0),
        replace(action, timeout_ms=10_000, timeout_at_ms=10_000),
        replace(action, attempt_num=4),
        replace(action, position=1),
    ):
        assert not kernel._action_within_limits(state, bad), bad


def test_a_provider_timeout_bounds_the_first_attempt() -> None:
    """With a 5 s provider timeout the first attempt's timeout is 5 s, bound by the attempt."""
    _, action = kernel.start(replace(plan(chain(A)), provider_timeouts_ms=((A, 5_000),)), 0)
    assert isinstance(action, CallProvider)
    assert (action.timeout_ms, action.bound) == (5_000, kernel.Bound.ATTEMPT)


def test_failover_skips_a_chain_entry_whose_provider_is_used_up() -> None:
    """A second chain entry for the same provider and model, already used up, is skipped to the next one."""
    p = replace(plan(chain(A, A, B, models=["m", "m", "n"])), max_attempts_per_provider=1)
    state, action = _fail_once(p, GARBLED, 100)
    assert isinstance(action, CallProvider)
    assert (action.position, action.entry.provider) == (2, B)
    assert (state.position, state.calls_issued) == (2, 2)


def test_a_sleep_ending_at_the_budget_end_ends_the_call() -> None:
    """Waking exactly at the end of the 30 s budget issues nothing: the call ends ALL_FAILED."""
    state, action = _fail_once(plan(chain(A)), E503, 29_700)
    assert isinstance(action, Sleep)
    _, end = kernel.step(state, SleepDone(now_ms=30_000))
    assert isinstance(end, Fail)
    assert end.kind is CallFailureKind.ALL_FAILED


def test_a_failover_onto_a_full_attempts_cap_ends_the_call() -> None:
    """With an attempts cap of 1, failing over after the first record ends the call ATTEMPTS_CAP."""
    p = replace(plan(chain(A, B)), attempts_cap=1)
    state, action = _fail_once(p, GARBLED, 100)
    assert isinstance(action, Fail)
    assert action.kind is CallFailureKind.ATTEMPTS_CAP
    assert action.records == state.records
    assert len(state.records) == 1


def test_well_formed_bounds_the_position_of_a_done_empty_chain_at_zero() -> None:
    """A finished call over an empty chain is well formed only at position 0 (not 1)."""
    assert kernel.well_formed(KernelState(plan=plan(()), position=0, done=True))
    assert not kernel.well_formed(KernelState(plan=plan(()), position=1, done=True))


def test_issuing_and_succeeding_keep_every_other_field_of_the_state() -> None:
    """_issue and a success build the new state with every field named (not dataclasses.replace, issue
    25): each is exactly the replace() of the old state with the fields it changes, after a failover
    (position 1, a record, attempts used, calls issued: no field at its default)."""
    p = plan(chain(A, B))
    state, _ = kernel.start(p, 0)
    failed, moved = kernel.step(state, AttemptFailed(now_ms=10, failure=GARBLED, draw=0.0))
    assert isinstance(moved, CallProvider)
    assert moved.position == 1
    issued_from = replace(state, records=failed.records, pending=None)  # what _on_failure hands _issue
    assert failed == replace(
        issued_from, position=1, used=failed.used, pending=moved, calls_issued=issued_from.calls_issued + 1
    )
    assert failed.records  # nothing at its default
    assert failed.used
    assert failed.calls_issued == 2
    done, succeed = kernel.step(failed, kernel.AttemptSucceeded(now_ms=20))
    assert isinstance(succeed, kernel.Succeed)
    assert done == replace(failed, records=succeed.records, pending=None, done=True)


@pytest.mark.parametrize(
    ("entries", "now_ms", "kind"),
    [
        ((), 0, CallFailureKind.NO_ELIGIBLE),
        ((A,), 120_000, CallFailureKind.DEADLINE),
        ((A,), 30_000, CallFailureKind.ALL_FAILED),
    ],
    ids=["empty-chain", "deadline-passed", "budget-spent"],
)
def test_a_call_that_cannot_start_ends_in_its_plans_first_state(
    entries: tuple[ProviderKind, ...], now_ms: int, kind: CallFailureKind
) -> None:
    """start's Fail (an empty chain, the deadline or the budget already over) leaves the plan's first
    state, done: no position moved, nothing recorded, used or issued (no other field set by the way)."""
    p = plan(chain(*entries))
    state, action = kernel.start(p, now_ms)
    assert action == Fail(kind=kind, records=())
    assert state == KernelState(plan=p, done=True)
