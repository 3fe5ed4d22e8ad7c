"""core.admission.readmit: an attempt that queued for a local slot is re-issued, not recorded."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from routeproof.core import kernel
from routeproof.core.admission import readmit, waited
from routeproof.core.kernel import AttemptFailed, Bound, CallFailureKind, CallProvider, Fail
from routeproof.core.types import AttemptFailure, AttemptFailureKind, ProviderKind
from tests.core.kernel_sim import chain, plan

A, B = ProviderKind.ANTHROPIC, ProviderKind.OPENAI


def test_readmitted_attempt_starts_when_its_slot_is_granted() -> None:
    """Queued 5 s: the same attempt is issued at 5 s with its full 30 s timeout, and no record."""
    state, action = kernel.start(plan(chain(A, B)), 0)
    assert isinstance(action, CallProvider)
    assert waited(action, 5_000)
    assert not waited(action, 0)
    again_state, again = readmit(state, 5_000)
    assert isinstance(again, CallProvider)
    assert (again.entry, again.attempt_num, again.issued_at_ms) == (action.entry, 1, 5_000)
    assert again.timeout_ms == 25_000
    assert again.bound is Bound.BUDGET
    assert again_state.records == ()
    assert again_state.used == state.used


def test_queueing_past_the_deadline_ends_the_call_without_a_record() -> None:
    """A slot granted at the deadline ends the call as DEADLINE, with no attempt recorded."""
    state, _ = kernel.start(plan(chain(A), deadline_ms=2_000), 0)
    _, end = readmit(state, 2_000)
    assert isinstance(end, Fail)
    assert end.kind is CallFailureKind.DEADLINE
    assert end.records == ()


@given(st.integers(min_value=0, max_value=40_000))
def test_a_retry_that_queued_keeps_its_attempt_number(queued_ms: int) -> None:
    """After a failed first attempt, a queued retry is still attempt 2 on the same provider (or the end)."""
    state, first = kernel.start(plan(chain(A), deadline_ms=60_000), 0)
    assert isinstance(first, CallProvider)
    failure = AttemptFailure(kind=AttemptFailureKind.CONN_RESET, message="reset")
    state, action = kernel.step(state, AttemptFailed(now_ms=10, failure=failure, draw=0.0))
    while not isinstance(action, CallProvider | Fail):
        state, action = kernel.step(state, kernel.SleepDone(now_ms=state.plan.started_at_ms + 2_000))
    assert isinstance(action, CallProvider)
    new_state, again = readmit(state, action.issued_at_ms + queued_ms)
    assert new_state.records == state.records
    if isinstance(again, CallProvider):
        assert again.attempt_num == 2
        assert again.entry == action.entry
        assert again.issued_at_ms + again.timeout_ms <= state.plan.effective_end_ms
    else:
        assert action.issued_at_ms + queued_ms >= state.plan.effective_end_ms
