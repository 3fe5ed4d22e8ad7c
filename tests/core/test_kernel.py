"""The decision kernel, one acceptance criterion of seed 000 at a time (virtual milliseconds)."""

from __future__ import annotations

import pytest

from routeproof.core.kernel import (
    ATTEMPTS_CAP_REASON,
    AttemptFailed,
    AttemptRefused,
    BackoffPolicy,
    Bound,
    CallFailureKind,
    CallProvider,
    Fail,
    RefusalEffect,
    Sleep,
    Succeed,
    start,
    step,
)
from routeproof.core.types import AttemptFailure, AttemptFailureKind, AttemptStatus, ProviderKind, RetryReason
from tests.core.kernel_sim import chain, http, ok, plan, simulate, transport

B, A, OA = ProviderKind.BEDROCK, ProviderKind.ANTHROPIC, ProviderKind.OPENAI


def statuses(action: Succeed | Fail | object) -> list[AttemptStatus]:
    """The record statuses of a final action."""
    assert isinstance(action, Succeed | Fail)
    return [r.status for r in action.records]


def test_happy_path_one_attempt() -> None:
    """AC1: a 200 on the first attempt gives one SUCCEEDED record with http 200."""
    run = simulate(plan(chain(B)), [ok(850)])
    assert isinstance(run.final, Succeed)
    assert statuses(run.final) == [AttemptStatus.SUCCEEDED]
    assert run.final.records[0].http_status == 200
    assert run.final.records[0].elapsed_ms == 850


def test_503_then_200_retries_after_band_sleep() -> None:
    """AC2: one 503 then 200 retries once after a sleep in [160, 240] ms."""
    for draw in (0.0, 0.25, 0.5, 0.999, 1.0):
        run = simulate(plan(chain(B)), [http(503), ok()], draws=[draw])
        assert statuses(run.final) == [AttemptStatus.RETRIED_AFTER_5XX, AttemptStatus.SUCCEEDED]
        [(_, sleep)] = run.sleeps
        assert 160 <= sleep.duration_ms <= 240


def test_second_retry_sleeps_800_band_not_3200() -> None:
    """Retry policy: the sleep before attempt 3 is 800 ms ± 20 %, never the seed's old 3200 ms."""
    run = simulate(plan(chain(B)), [http(500), http(502), ok()], draws=[1.0])
    assert [s.duration_ms for _, s in run.sleeps] == [240, 960]
    run = simulate(plan(chain(B)), [http(500), http(502), ok()], draws=[0.0])
    assert [s.duration_ms for _, s in run.sleeps] == [160, 640]


def test_three_5xx_fail_over_to_fallback() -> None:
    """AC3: three 503s on Bedrock fail over to Anthropic; the third record is FAILED_OVER."""
    run = simulate(plan(chain(B, A)), [http(503), http(503), http(503), ok()])
    assert isinstance(run.final, Succeed)
    assert statuses(run.final) == [
        AttemptStatus.RETRIED_AFTER_5XX,
        AttemptStatus.RETRIED_AFTER_5XX,
        AttemptStatus.FAILED_OVER,
        AttemptStatus.SUCCEEDED,
    ]
    assert [r.provider for r in run.final.records] == [B, B, B, A]
    assert [r.attempt_num for r in run.final.records] == [1, 2, 3, 1]
    assert [r.fallback_position for r in run.final.records] == [0, 0, 0, 1]
    assert len(run.sleeps) == 2  # no inter-provider sleep


@pytest.mark.parametrize(
    ("status", "kind", "record"),
    [
        (400, CallFailureKind.TERMINAL, AttemptStatus.TERMINAL_400),
        (404, CallFailureKind.TERMINAL, AttemptStatus.TERMINAL_404),
        (401, CallFailureKind.AUTH, AttemptStatus.TERMINAL_AUTH),
        (403, CallFailureKind.AUTH, AttemptStatus.TERMINAL_AUTH),
    ],
)
def test_terminal_statuses_stop_at_once(status: int, kind: CallFailureKind, record: AttemptStatus) -> None:
    """AC4-6: 400/404 are terminal and 401/403 are auth errors: no retry, no failover, status kept."""
    run = simulate(plan(chain(B, A)), [http(status), ok()])
    assert isinstance(run.final, Fail)
    assert run.final.kind is kind
    assert statuses(run.final) == [record]
    assert run.final.records[0].http_status == status  # a 403 is recorded as 403, not 401
    assert len(run.calls) == 1


def test_other_4xx_fails_over_without_retry() -> None:
    """Other 4xx (e.g. 422) fail over at once, without retrying the same provider."""
    run = simulate(plan(chain(B, A)), [http(422), ok()])
    assert statuses(run.final) == [AttemptStatus.FAILED_OVER, AttemptStatus.SUCCEEDED]
    assert run.sleeps == []


def test_failover_budget_30s_with_8s_attempts() -> None:
    """AC7: providers that take 8 s to 503 exhaust the 30 s budget; the call ends by 30 s."""
    run = simulate(plan(chain(B, A, OA)), lambda call: http(503, duration_ms=8_000))
    assert isinstance(run.final, Fail)
    assert run.final.kind is CallFailureKind.ALL_FAILED
    assert run.end_ms <= 30_000
    assert run.final.records[-1].status is AttemptStatus.TIMEOUT_BEFORE_FIRST_TOKEN
    assert all(t + c.timeout_ms <= 30_000 for t, c in run.calls)


def test_deadline_cuts_a_slow_provider() -> None:
    """AC8: a 5 s caller deadline against a 10 s provider fails with DEADLINE at 5 s."""
    run = simulate(plan(chain(B), deadline_ms=5_000), [ok(10_000)])
    assert isinstance(run.final, Fail)
    assert run.final.kind is CallFailureKind.DEADLINE
    assert run.end_ms == 5_000
    [(_, call)] = run.calls
    assert call.bound is Bound.DEADLINE
    assert statuses(run.final) == [AttemptStatus.DEADLINE_EXCEEDED_MID_CALL]
    assert run.final.records[0].http_status is None


def test_retry_after_honoured_exactly() -> None:
    """AC12: a 429 with Retry-After 5 s sleeps exactly 5 s (not the 200 ms backoff) then retries."""
    run = simulate(plan(chain(B)), [http(429, retry_after_ms=5_000), ok()])
    assert [s.duration_ms for _, s in run.sleeps] == [5_000]
    assert run.sleeps[0][1].retry_after
    assert statuses(run.final) == [AttemptStatus.RETRIED_AFTER_429, AttemptStatus.SUCCEEDED]
    assert run.final.records[0].retry_reason is RetryReason.TOO_MANY_REQUESTS  # type: ignore[union-attr]  # Succeed checked above


def test_retry_after_past_budget_fails_over_without_sleeping() -> None:
    """AC12: Retry-After 60 s with a 10 s deadline fails over at once, with no sleep."""
    run = simulate(plan(chain(B, A), deadline_ms=10_000), [http(429, retry_after_ms=60_000), ok()])
    assert run.sleeps == []
    assert isinstance(run.final, Succeed)
    assert [r.provider for r in run.final.records] == [B, A]
    assert run.final.records[0].status is AttemptStatus.FAILED_OVER


def test_retry_after_exactly_at_the_budget_edge_does_not_sleep() -> None:
    """A Retry-After that would wake exactly at the effective end is refused (no call could follow)."""
    run = simulate(plan(chain(B), deadline_ms=10_000), [http(429, duration_ms=100, retry_after_ms=9_900), ok()])
    assert run.sleeps == []
    assert isinstance(run.final, Fail)
    assert run.final.kind is CallFailureKind.DEADLINE


def test_attempts_cap_16_stops_before_the_17th() -> None:
    """AC13: eight failing providers stop at 16 records with the attempts-cap reason; no 17th call."""
    entries = chain(*([B] * 8), models=[f"m{i}" for i in range(8)])
    run = simulate(plan(entries, deadline_ms=600_000), lambda call: http(503, duration_ms=1))
    assert isinstance(run.final, Fail)
    assert run.final.kind is CallFailureKind.ATTEMPTS_CAP
    assert len(run.calls) == 16
    assert len(run.final.records) == 16
    assert "attempts cap exceeded" in ATTEMPTS_CAP_REASON


def test_attempts_cap_ends_the_call_without_a_trailing_sleep() -> None:
    """The 16th record is a retryable failure with retries left: the call stops at once, no sleep first."""
    entries = chain(*([B] * 8), models=[f"m{i}" for i in range(8)])
    run = simulate(plan(entries, deadline_ms=600_000), lambda call: http(503, duration_ms=1))
    last_call_at_ms, _ = run.calls[-1]
    assert isinstance(run.final, Fail)
    assert run.final.kind is CallFailureKind.ATTEMPTS_CAP
    assert all(at_ms < last_call_at_ms for at_ms, _ in run.sleeps)
    assert run.end_ms == last_call_at_ms + 1


def test_failover_does_not_reset_the_per_provider_counter() -> None:
    """A provider that returns later in the chain gets no new attempts in the same call."""
    entries = chain(B, A, B, models=["same", "x", "same"])
    run = simulate(plan(entries), lambda call: http(503, duration_ms=1))
    assert [c.entry.fallback_position for _, c in run.calls] == [0, 0, 0, 1, 1, 1]
    assert isinstance(run.final, Fail)
    assert run.final.kind is CallFailureKind.ALL_FAILED


def test_no_call_is_issued_at_or_after_the_deadline() -> None:
    """A retry whose backoff ends at the deadline is not slept and no call is issued past it."""
    # 503 at 4_800 ms; the 200 ms band sleep (draw 0.5 -> 200) would wake at exactly 5_000.
    run = simulate(plan(chain(B), deadline_ms=5_000), [http(503, duration_ms=4_800), ok()])
    assert all(t < 5_000 for t, _ in run.calls)
    assert run.sleeps == []
    assert isinstance(run.final, Fail)
    assert run.final.kind is CallFailureKind.DEADLINE


def test_timeout_retries_as_timeout_reason() -> None:
    """A per-attempt timeout (30 s ceiling) is retried with reason ``timeout``."""
    run = simulate(plan(chain(B), deadline_ms=600_000), [ok(40_000)])
    # the first attempt times out at 30 s = the budget: budget-bound, so the call ends
    assert isinstance(run.final, Fail)
    assert run.final.kind is CallFailureKind.ALL_FAILED
    run = simulate(plan(chain(B)), [transport(AttemptFailureKind.READ_TIMEOUT), ok()])
    assert statuses(run.final) == [AttemptStatus.RETRIED_AFTER_TIMEOUT, AttemptStatus.SUCCEEDED]


def test_conn_reset_and_refused_retry_as_conn_reset() -> None:
    """Connection reset and refused are retried with reason ``conn_reset``."""
    run = simulate(
        plan(chain(B)), [transport(AttemptFailureKind.CONN_RESET), transport(AttemptFailureKind.CONN_REFUSED), ok()]
    )
    assert isinstance(run.final, Succeed)
    assert [r.retry_reason for r in run.final.records[:2]] == [RetryReason.CONN_RESET, RetryReason.CONN_RESET]
    assert statuses(run.final)[:2] == [AttemptStatus.RETRIED_AFTER_CONN_RESET] * 2


def test_invalid_response_fails_over() -> None:
    """A 200 with a malformed body fails over without a retry."""
    run = simulate(plan(chain(B, A)), [transport(AttemptFailureKind.INVALID_RESPONSE), ok()])
    assert statuses(run.final) == [AttemptStatus.FAILED_OVER, AttemptStatus.SUCCEEDED]


def test_context_overflow_is_terminal_unless_opted_in() -> None:
    """A context-length 400 is terminal by default and fails over when the policy opts in."""
    run = simulate(plan(chain(B, A)), [transport(AttemptFailureKind.CONTEXT_OVERFLOW), ok()])
    assert isinstance(run.final, Fail)
    assert run.final.kind is CallFailureKind.TERMINAL
    run = simulate(
        plan(chain(B, A), context_window_failover=True), [transport(AttemptFailureKind.CONTEXT_OVERFLOW), ok()]
    )
    assert isinstance(run.final, Succeed)


def test_empty_chain_is_no_eligible_provider() -> None:
    """An empty chain fails at once with NO_ELIGIBLE."""
    _, action = start(plan(()), 0)
    assert isinstance(action, Fail)
    assert action.kind is CallFailureKind.NO_ELIGIBLE


def test_budget_refusals_skip_or_stop() -> None:
    """A provider-scope refusal moves down the chain with no record; a terminal one ends the call."""
    state, action = start(plan(chain(B, A)), 0)
    state, action = step(state, AttemptRefused(now_ms=0, refusal=RefusalEffect.SKIP_PROVIDER))
    assert isinstance(action, CallProvider)
    assert action.entry.provider is A
    assert state.records == ()
    _, action = step(state, AttemptRefused(now_ms=0, refusal=RefusalEffect.TERMINAL))
    assert isinstance(action, Fail)
    assert action.kind is CallFailureKind.BUDGET


def test_no_event_after_the_call_ended() -> None:
    """Feeding an event to a finished call violates the kernel's precondition."""
    import icontract

    state, action = start(plan(chain(B)), 0)
    failure = AttemptFailure(kind=AttemptFailureKind.HTTP_STATUS, http_status=400)
    state, action = step(state, AttemptFailed(now_ms=10, failure=failure))
    assert isinstance(action, Fail)
    with pytest.raises(icontract.ViolationError):
        step(state, AttemptFailed(now_ms=20, failure=failure))


def test_full_jitter_policy_is_selectable() -> None:
    """The contract's full-jitter backoff can replace the band: sleeps are u × min(cap, base × 2^n)."""
    from routeproof.core.kernel import BackoffPolicy

    policy = BackoffPolicy(full_jitter=True, base_ms=100, cap_ms=1_000)
    run = simulate(plan(chain(B), backoff=policy), [http(503), http(503), ok()], draws=[1.0])
    assert [s.duration_ms for _, s in run.sleeps] == [100, 200]


@pytest.mark.parametrize(
    ("bound_deadline_ms", "kind", "status"),
    [
        (10_000, CallFailureKind.DEADLINE, AttemptStatus.DEADLINE_EXCEEDED_MID_CALL),  # the caller's deadline set it
        (120_000, CallFailureKind.ALL_FAILED, AttemptStatus.TIMEOUT_BEFORE_FIRST_TOKEN),  # the 30 s budget set it
    ],
)
def test_a_timeout_at_its_own_end_is_blamed_on_the_limit_that_set_it(
    bound_deadline_ms: int, kind: CallFailureKind, status: AttemptStatus
) -> None:
    """A timeout firing (a few ms early, by clock rounding) at the attempt's end is that limit's doing."""
    state, action = start(plan(chain(B, A), deadline_ms=bound_deadline_ms), 0)
    assert isinstance(action, CallProvider)
    end = action.issued_at_ms + action.timeout_ms
    failure = AttemptFailure(kind=AttemptFailureKind.READ_TIMEOUT)
    _, final = step(state, AttemptFailed(now_ms=end - 3, failure=failure))
    assert isinstance(final, Fail)
    assert final.kind is kind
    assert final.records[-1].status is status
    assert final.failure is failure  # the shell builds the error from the last failure and entry
    assert final.entry == action.entry


def test_an_early_timeout_is_an_ordinary_retry() -> None:
    """A provider's own timeout well before the attempt's end is retried like any timeout."""
    state, _ = start(plan(chain(B), deadline_ms=10_000), 0)
    failure = AttemptFailure(kind=AttemptFailureKind.READ_TIMEOUT)
    _, nxt = step(state, AttemptFailed(now_ms=1_000, failure=failure))
    assert isinstance(nxt, Sleep)


def test_fail_carries_the_last_failure_and_entry() -> None:
    """AllProvidersFailed is built from the Fail's failure and entry: both are the last attempt's."""
    run = simulate(plan(chain(B, A)), [http(503)] * 3 + [http(502)] * 3)
    assert isinstance(run.final, Fail)
    assert run.final.failure is not None
    assert run.final.failure.http_status == 502
    assert run.final.entry is not None
    assert run.final.entry.provider is A


@pytest.mark.parametrize(
    "bad",
    [
        {"budget_ms": 0},
        {"max_attempts_per_provider": 0},
        {"attempts_cap": 0},
        {"attempt_timeout_ms": 0},
        {"backoff": BackoffPolicy(jitter_percent=101)},
        {"backoff": BackoffPolicy(delays_ms=(200, -1))},
        {"backoff": BackoffPolicy(full_jitter=True, base_ms=500, cap_ms=100)},
        {"backoff": BackoffPolicy(delays_ms=(200,))},  # too few delays for 3 attempts
    ],
)
def test_invalid_plans_are_refused(bad: dict[str, object]) -> None:
    """start() refuses a plan with no budget, no attempts, no cap, no timeout or an unusable backoff."""
    from dataclasses import replace

    import icontract

    with pytest.raises(icontract.ViolationError):
        start(replace(plan(chain(B)), **bad), 0)  # type: ignore[arg-type]  # fields by name


def test_each_phase_accepts_only_the_events_that_answer_it() -> None:
    """CALLING takes attempt events, SLEEPING only SleepDone, DONE nothing; the phase follows each step."""
    import icontract

    from routeproof.core.kernel import Phase, SleepDone, answers

    five_oh_three = AttemptFailed(
        now_ms=10, failure=AttemptFailure(kind=AttemptFailureKind.HTTP_STATUS, http_status=503)
    )
    state, action = start(plan(chain(B)), 0)
    assert (state.phase, isinstance(action, CallProvider)) == (Phase.CALLING, True)
    assert answers(state, five_oh_three)
    assert not answers(state, SleepDone(now_ms=10))
    state, action = step(state, five_oh_three)
    assert (state.phase, isinstance(action, Sleep)) == (Phase.SLEEPING, True)
    assert answers(state, SleepDone(now_ms=500))
    assert not answers(state, five_oh_three)
    with pytest.raises(icontract.ViolationError):
        step(state, five_oh_three)
    state, action = step(state, SleepDone(now_ms=500))
    assert (state.phase, isinstance(action, CallProvider)) == (Phase.CALLING, True)
    state, action = step(
        state, AttemptFailed(now_ms=600, failure=AttemptFailure(kind=AttemptFailureKind.HTTP_STATUS, http_status=400))
    )
    assert (state.phase, isinstance(action, Fail)) == (Phase.DONE, True)
    assert not answers(state, SleepDone(now_ms=700))
