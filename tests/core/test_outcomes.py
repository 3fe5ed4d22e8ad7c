"""How a call ends, as tables (core/outcomes.py): refusal scopes, kernel failures, last errors."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from routeproof.core.kernel import CallFailureKind, RefusalEffect
from routeproof.core.ledger import BudgetScope
from routeproof.core.outcomes import (
    CALL_FAILURES,
    REFUSAL_BY_SCOPE,
    CallOutcome,
    ErrorKind,
    LastErrorKind,
    NoEligibleCause,
    call_failure,
    last_error_kind,
    no_eligible_cause,
    refusal_for,
)
from routeproof.core.types import AttemptFailureKind
from routeproof.observe import CALL_OUTCOMES


def test_every_budget_scope_and_every_fail_kind_has_a_row() -> None:
    """The tables are total: no scope or kernel failure falls through to a default."""
    assert set(REFUSAL_BY_SCOPE) == set(BudgetScope)
    assert set(CALL_FAILURES) == set(CallFailureKind)


def test_call_outcomes_are_the_metric_label_set() -> None:
    """The outcome enum is exactly the closed label set of ai_router_calls_total."""
    assert tuple(o.value for o in CallOutcome) == CALL_OUTCOMES


@pytest.mark.parametrize(
    ("scope", "refusal"),
    [
        (BudgetScope.PROVIDER_DAILY, RefusalEffect.SKIP_PROVIDER),
        (BudgetScope.SESSION, RefusalEffect.TERMINAL),
        (BudgetScope.MONTHLY, RefusalEffect.TERMINAL),
        (BudgetScope.TURN, RefusalEffect.TERMINAL),
    ],
)
def test_only_a_provider_daily_refusal_skips_the_provider(scope: BudgetScope, refusal: RefusalEffect) -> None:
    """A provider's daily budget skips to the next provider; a session or monthly refusal ends the call."""
    assert refusal_for(scope) is refusal


@pytest.mark.parametrize(
    ("kind", "error", "outcome"),
    [
        (CallFailureKind.DEADLINE, ErrorKind.DEADLINE, CallOutcome.ALL_FAILED),
        (CallFailureKind.AUTH, ErrorKind.AUTH, CallOutcome.AUTH_ERROR),
        (CallFailureKind.TERMINAL, ErrorKind.TERMINAL, CallOutcome.TERMINAL_4XX),
        (CallFailureKind.ATTEMPTS_CAP, ErrorKind.ATTEMPTS_CAP, CallOutcome.ALL_FAILED),
        (CallFailureKind.BUDGET, ErrorKind.BUDGET, CallOutcome.ALL_FAILED),
        (CallFailureKind.NO_ELIGIBLE, ErrorKind.NO_ELIGIBLE, CallOutcome.ALL_FAILED),
        (CallFailureKind.ALL_FAILED, ErrorKind.ALL_FAILED, CallOutcome.ALL_FAILED),
    ],
)
def test_each_kernel_failure_raises_its_error(kind: CallFailureKind, error: ErrorKind, outcome: CallOutcome) -> None:
    """With everything the row needs, each kernel CallFailureKind maps to its one error and metric outcome."""
    row = call_failure(kind, has_failure=True, has_refusal=True, has_records=True)
    assert (row.error, row.outcome) == (error, outcome)


def test_all_failed_with_no_attempt_record_means_no_eligible_provider() -> None:
    """A chain that failed without sending anything is reported as NoEligibleProvider, not AllProvidersFailed."""
    row = call_failure(CallFailureKind.ALL_FAILED, has_failure=False, has_refusal=False, has_records=False)
    assert row.error is ErrorKind.NO_ELIGIBLE


@pytest.mark.parametrize(
    ("kind", "missing"),
    [(CallFailureKind.AUTH, "failure"), (CallFailureKind.TERMINAL, "failure"), (CallFailureKind.BUDGET, "refusal")],
)
def test_a_row_without_what_it_needs_falls_back_to_all_failed(kind: CallFailureKind, missing: str) -> None:
    """An auth/terminal end without its failure, or a budget end without the refusal, is AllProvidersFailed."""
    row = call_failure(kind, has_failure=missing != "failure", has_refusal=missing != "refusal", has_records=True)
    assert (row.error, row.outcome) == (ErrorKind.ALL_FAILED, CallOutcome.ALL_FAILED)


@given(st.sampled_from(list(CallFailureKind)), st.booleans(), st.booleans(), st.booleans())
def test_the_failure_table_never_reports_success(
    kind: CallFailureKind, failure: bool, refusal: bool, records: bool
) -> None:
    """Whatever the call knows, a failed call's outcome is never 'succeeded' (the postconditions hold)."""
    row = call_failure(kind, has_failure=failure, has_refusal=refusal, has_records=records)
    assert row.outcome is not CallOutcome.SUCCEEDED


@pytest.mark.parametrize(
    ("records", "refusal", "config", "cause"),
    [
        (False, True, True, NoEligibleCause.BUDGET_REFUSAL),
        (False, False, True, NoEligibleCause.CONFIG_ERROR),
        (False, False, False, NoEligibleCause.NO_PROVIDER),
        (True, True, True, NoEligibleCause.NO_PROVIDER),
    ],
)
def test_a_call_that_sent_nothing_names_its_cause(
    records: bool, refusal: bool, config: bool, cause: NoEligibleCause
) -> None:
    """A refusal, then a configuration error, explain a call that sent nothing; otherwise the skips do."""
    assert no_eligible_cause(has_records=records, has_refusal=refusal, has_config_error=config) is cause


@pytest.mark.parametrize(
    ("kind", "status", "described"),
    [
        (AttemptFailureKind.HTTP_STATUS, 503, LastErrorKind.PROVIDER_STATUS),
        (AttemptFailureKind.HTTP_STATUS, 429, LastErrorKind.PROVIDER_STATUS),
        (AttemptFailureKind.HTTP_STATUS, 500, LastErrorKind.PROVIDER_STATUS),
        (AttemptFailureKind.HTTP_STATUS, 400, LastErrorKind.TERMINAL_STATUS),
        (AttemptFailureKind.HTTP_STATUS, 404, LastErrorKind.TERMINAL_STATUS),
        (AttemptFailureKind.INVALID_RESPONSE, None, LastErrorKind.INVALID_RESPONSE),
        (AttemptFailureKind.ATTEMPT_TIMEOUT, None, LastErrorKind.OTHER),
    ],
)
def test_the_last_failed_attempt_is_described_truthfully(
    kind: AttemptFailureKind, status: int | None, described: LastErrorKind
) -> None:
    """A retryable 503 or 429 that ran out is a provider HTTP error, not a terminal one; 400/404 are terminal."""
    assert last_error_kind(kind, status) is described


@given(st.integers(500, 599))
def test_no_5xx_is_ever_described_as_terminal(status: int) -> None:
    """Every 5xx in AllProvidersFailed.last_error is described as a provider (not terminal) HTTP error."""
    assert last_error_kind(AttemptFailureKind.HTTP_STATUS, status) is LastErrorKind.PROVIDER_STATUS
