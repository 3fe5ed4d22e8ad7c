"""Kernel invariants over random chains, outcome scripts, deadlines and draws (Hypothesis)."""

from __future__ import annotations

from collections import Counter, defaultdict

from hypothesis import given
from hypothesis import strategies as st

from routeproof.core.constants import ATTEMPTS_CAP, FAILOVER_BUDGET_MS, MAX_ATTEMPTS_PER_PROVIDER
from routeproof.core.kernel import CallFailureKind, CallPlan, Fail, Succeed
from routeproof.core.types import (
    AttemptFailure,
    AttemptFailureKind,
    AttemptStatus,
    ChainEntry,
    ProviderId,
    ProviderKind,
)
from tests.core.kernel_sim import Outcome, Run, simulate

KINDS = [ProviderKind.BEDROCK, ProviderKind.ANTHROPIC, ProviderKind.OPENAI, ProviderKind.OLLAMA]
STATUSES = [400, 401, 403, 404, 408, 409, 422, 429, 500, 501, 502, 503, 504, 529]


@st.composite
def entries(draw: st.DrawFn) -> tuple[ChainEntry, ...]:
    """Chains of 0-8 entries; kinds and models from small pools so a provider can recur."""
    size = draw(st.integers(0, 8))
    return tuple(
        ChainEntry(
            provider=draw(st.sampled_from(KINDS)), model=draw(st.sampled_from(["m1", "m2", "m3"])), fallback_position=i
        )
        for i in range(size)
    )


failures = st.one_of(
    st.builds(
        lambda status, ra: AttemptFailure(kind=AttemptFailureKind.HTTP_STATUS, http_status=status, retry_after_ms=ra),
        st.sampled_from(STATUSES),
        st.one_of(st.none(), st.integers(0, 70_000)),
    ),
    st.builds(lambda kind: AttemptFailure(kind=kind), st.sampled_from(list(AttemptFailureKind))).filter(
        lambda f: f.kind is not AttemptFailureKind.HTTP_STATUS
    ),
)
outcomes = st.builds(Outcome, st.integers(0, 40_000), st.one_of(st.none(), failures, failures, failures))


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[CallPlan, list[Outcome], list[float]]:
    """A plan (chain, start, deadline, opt-in) with a script of outcomes and backoff draws."""
    start_ms = draw(st.integers(0, 10**9))
    plan = CallPlan(
        chain=draw(entries()),
        started_at_ms=start_ms,
        deadline_at_ms=start_ms + draw(st.integers(-100, 90_000)),
        context_window_failover=draw(st.booleans()),
    )
    script = draw(st.lists(outcomes, max_size=24))
    draws = draw(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=5))
    return plan, script, draws


def run_scenario(scenario: tuple[CallPlan, list[Outcome], list[float]]) -> Run:
    """Simulate one scenario to its end."""
    plan, script, draws = scenario
    return simulate(plan, script, draws)


@given(scenarios())
def test_no_call_at_or_after_the_effective_end(scenario: tuple[CallPlan, list[Outcome], list[float]]) -> None:
    """No call is issued at or after the caller deadline or the budget's end, nor outlives them."""
    plan = scenario[0]
    run = run_scenario(scenario)
    for issued, call in run.calls:
        assert issued < plan.deadline_at_ms
        assert issued < plan.started_at_ms + FAILOVER_BUDGET_MS
        assert issued + call.timeout_ms <= min(plan.deadline_at_ms, plan.started_at_ms + FAILOVER_BUDGET_MS)


@given(scenarios())
def test_no_sleep_ends_past_the_effective_end(scenario: tuple[CallPlan, list[Outcome], list[float]]) -> None:
    """Every sleep wakes strictly before the effective end, so a call can still follow it."""
    plan = scenario[0]
    run = run_scenario(scenario)
    for started, sleep in run.sleeps:
        assert started + sleep.duration_ms < plan.effective_end_ms


@given(scenarios())
def test_call_ends_within_the_budget(scenario: tuple[CallPlan, list[Outcome], list[float]]) -> None:
    """Sleeps plus attempts never take the call past 30 s (nor past the caller's deadline)."""
    plan = scenario[0]
    run = run_scenario(scenario)
    assert run.end_ms - plan.started_at_ms <= FAILOVER_BUDGET_MS
    assert run.end_ms <= max(plan.deadline_at_ms, plan.started_at_ms)


@given(scenarios())
def test_attempt_counts_and_numbering(scenario: tuple[CallPlan, list[Outcome], list[float]]) -> None:
    """<= 3 attempts per provider, numbered 1, 2, 3 in order; <= 16 records; one record per call."""
    run = run_scenario(scenario)
    per_provider: dict[tuple[ProviderId, str], list[int]] = defaultdict(list)
    for _, call in run.calls:
        per_provider[(call.entry.provider, call.entry.model)].append(call.attempt_num)
    for numbers in per_provider.values():
        assert numbers == list(range(1, len(numbers) + 1))
        assert len(numbers) <= MAX_ATTEMPTS_PER_PROVIDER
    final = run.final
    assert isinstance(final, Succeed | Fail)
    assert len(final.records) <= ATTEMPTS_CAP
    assert len(final.records) == len(run.calls)
    assert Counter((r.provider, r.model) for r in final.records) == Counter(
        {k: len(v) for k, v in per_provider.items()}
    )


@given(scenarios())
def test_fallback_position_is_the_chain_index(scenario: tuple[CallPlan, list[Outcome], list[float]]) -> None:
    """Each call and record carries the chain index it came from, and positions never go back."""
    plan = scenario[0]
    run = run_scenario(scenario)
    positions = [call.position for _, call in run.calls]
    assert positions == sorted(positions)
    for _, call in run.calls:
        assert call.entry is plan.chain[call.position]
        assert call.entry.fallback_position == call.position


@given(scenarios())
def test_nothing_after_a_terminal_outcome(scenario: tuple[CallPlan, list[Outcome], list[float]]) -> None:
    """A 400/401/403/404 ends the call at that attempt: it is the last record, no retry, no failover."""
    run = run_scenario(scenario)
    final = run.final
    assert isinstance(final, Succeed | Fail)
    terminal = {AttemptStatus.TERMINAL_400, AttemptStatus.TERMINAL_404, AttemptStatus.TERMINAL_AUTH}
    for index, record in enumerate(final.records):
        if record.status in terminal:
            assert index == len(final.records) - 1
            assert isinstance(final, Fail)
            assert final.kind in (CallFailureKind.TERMINAL, CallFailureKind.AUTH)
        if record.http_status in (401, 403):
            assert record.status is AttemptStatus.TERMINAL_AUTH


@given(scenarios())
def test_terminates_within_bounded_steps(scenario: tuple[CallPlan, list[Outcome], list[float]]) -> None:
    """The call ends within 2 x 3 x chain length + 1 actions (each attempt at most one sleep)."""
    plan = scenario[0]
    run = run_scenario(scenario)
    assert len(run.actions) <= 2 * MAX_ATTEMPTS_PER_PROVIDER * len(plan.chain) + 1
    assert len(run.calls) <= MAX_ATTEMPTS_PER_PROVIDER * len(plan.chain)


@given(scenarios())
def test_success_record_is_last_and_only(scenario: tuple[CallPlan, list[Outcome], list[float]]) -> None:
    """A successful call ends with exactly one SUCCEEDED record, the last one."""
    run = run_scenario(scenario)
    final = run.final
    assert isinstance(final, Succeed | Fail)
    succeeded = [r for r in final.records if r.status is AttemptStatus.SUCCEEDED]
    if isinstance(final, Succeed):
        assert succeeded == [final.records[-1]]
    else:
        assert succeeded == []
