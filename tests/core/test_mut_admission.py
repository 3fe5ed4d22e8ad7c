"""Re-admission after a local queue: the attempt counts of other providers and the precondition's every clause."""

from __future__ import annotations

from dataclasses import replace

from routeproof.core import kernel
from routeproof.core.admission import _same_attempt, pending_as_issued, readmit
from routeproof.core.kernel import AttemptFailed, CallProvider, Fail, KernelState
from routeproof.core.types import AttemptFailure, AttemptFailureKind, ProviderKind
from tests.core.kernel_sim import chain, plan

A, B = ProviderKind.ANTHROPIC, ProviderKind.OPENAI


def _after_failover() -> tuple[KernelState, CallProvider]:
    """A failed once with a persistent error; B's first attempt is pending."""
    state, _ = kernel.start(plan(chain(A, B)), 0)
    denied = AttemptFailure(kind=AttemptFailureKind.INVALID_RESPONSE, message="garbled")
    state, action = kernel.step(state, AttemptFailed(now_ms=10, failure=denied, draw=0.0))
    assert isinstance(action, CallProvider)
    assert action.entry.provider is B
    return state, action


def _issued() -> KernelState:
    state, _ = kernel.start(plan(chain(A, B)), 0)
    return state


def test_readmitting_after_a_failover_keeps_the_earlier_providers_counts() -> None:
    """Queueing B's attempt does not change A's attempt count: used is the same after readmit."""
    state, action = _after_failover()
    new_state, again = readmit(state, 500)
    assert new_state.used == state.used == ((("anthropic", "model-0"), 1), (("openai", "model-1"), 1))
    assert isinstance(again, CallProvider)
    assert (again.entry, again.attempt_num, again.issued_at_ms) == (action.entry, 1, 500)


def test_a_call_that_ends_while_queued_counts_no_attempt_for_it() -> None:
    """When the slot comes after the deadline, the ended call counts no attempt on that provider."""
    state, _ = kernel.start(plan(chain(A), deadline_ms=2_000), 0)
    end_state, end = readmit(state, 2_000)
    assert isinstance(end, Fail)
    assert end_state.used == ()
    assert end_state.calls_issued == 0


def test_the_state_the_kernel_leaves_after_issuing_is_pending_as_issued() -> None:
    """Right after start and after a failover, the pending attempt is as issued."""
    assert pending_as_issued(_issued())
    assert pending_as_issued(_after_failover()[0])


def test_a_finished_or_idle_state_is_not_pending_as_issued() -> None:
    """A done call, or one with nothing pending, has no attempt to re-admit."""
    state = _issued()
    assert not pending_as_issued(replace(state, done=True))
    assert not pending_as_issued(replace(state, pending=None))


def test_a_pending_attempt_that_does_not_match_the_counts_is_not_as_issued() -> None:
    """Attempt number, chain position, counts and issued calls must all agree with the pending attempt."""
    state = _issued()
    pending = state.pending
    assert isinstance(pending, CallProvider)
    assert not pending_as_issued(replace(state, pending=replace(pending, attempt_num=2)))
    assert not pending_as_issued(replace(state, pending=replace(pending, attempt_num=0)))
    assert not pending_as_issued(replace(state, pending=replace(pending, position=len(state.plan.chain))))
    assert not pending_as_issued(replace(state, pending=replace(pending, position=1)))
    assert not pending_as_issued(replace(state, used=()))
    assert not pending_as_issued(replace(state, calls_issued=0))


def test_the_last_counted_provider_must_be_the_pending_one() -> None:
    """The pending attempt must be the last one counted in used."""
    state, _ = _after_failover()
    reordered = replace(state, used=(state.used[1], state.used[0]))
    assert not pending_as_issued(reordered)


def test_same_attempt_holds_for_the_kernels_own_readmit() -> None:
    """The postcondition accepts readmit's re-timed attempt and a call that ended with no new record."""
    state, _ = _after_failover()
    assert _same_attempt(state, readmit(state, 500))
    ended, _ = kernel.start(plan(chain(A), deadline_ms=2_000), 0)
    assert _same_attempt(ended, readmit(ended, 2_000))


def test_same_attempt_rejects_every_changed_part() -> None:
    """Another entry, attempt number, count or issued-call count, or nothing pending before, is not the same attempt."""
    state, _ = _after_failover()
    new_state, again = readmit(state, 500)
    assert isinstance(again, CallProvider)
    other = state.plan.chain[0]
    assert not _same_attempt(state, (new_state, replace(again, entry=other)))
    assert not _same_attempt(state, (new_state, replace(again, attempt_num=2)))
    assert not _same_attempt(state, (replace(new_state, used=()), again))
    assert not _same_attempt(state, (replace(new_state, calls_issued=9), again))
    assert not _same_attempt(replace(state, pending=None), (new_state, again))


def test_same_attempt_rejects_an_end_that_is_not_done_or_adds_records() -> None:
    """A Fail is the same attempt only when the call is done and no record was added."""
    ended, _ = kernel.start(plan(chain(A), deadline_ms=2_000), 0)
    end_state, end = readmit(ended, 2_000)
    assert isinstance(end, Fail)
    assert not _same_attempt(ended, (replace(end_state, done=False), end))
    state, _ = _after_failover()
    assert not _same_attempt(state, (end_state, end))


def test_an_ill_formed_unfinished_state_is_not_pending_as_issued() -> None:
    """A state that breaks the kernel's invariant (more calls issued than the cap) is never as issued."""
    state = _issued()
    assert not pending_as_issued(replace(state, calls_issued=state.plan.attempts_cap + 1))


def test_a_call_waiting_in_a_backoff_sleep_is_not_pending_as_issued() -> None:
    """An unfinished, well-formed call whose pending action is a Sleep has no attempt to readmit."""
    state, _ = kernel.start(plan(chain(A, B)), 0)
    busy = AttemptFailure(kind=AttemptFailureKind.HTTP_STATUS, http_status=503)
    sleeping, action = kernel.step(state, AttemptFailed(now_ms=10, failure=busy, draw=0.0))
    assert isinstance(action, kernel.Sleep)
    assert not sleeping.done
    assert kernel.well_formed(sleeping)
    assert not pending_as_issued(sleeping)
