"""How a call ends, as tables (core/outcomes.py): refusal scopes, kernel failures, last errors."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from routeproof.core.kernel import FailKind, Refusal
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
from routeproof.core.types import FailureKind
from routeproof.observe import CALL_OUTCOMES


def test_every_budget_scope_and_every_fail_kind_has_a_row() -> None:
    """The tables are total: no scope or kernel failure falls through to a default."""
    assert set(REFUSAL_BY_SCOPE) == set(BudgetScope)
    assert set(CALL_FAILURES) == set(FailKind)


def test_call_outcomes_are_the_metric_label_set() -> None:
    """The outcome enum is exactly the closed label set of ai_router_calls_total."""
    assert tuple(o.value for o in CallOutcome) == CALL_OUTCOMES


@pytest.mark.parametrize(
    ("scope", "refusal"),
    [
        (BudgetScope.PROVIDER_DAILY, Refusal.SKIP_PROVIDER),
        (BudgetScope.SESSION, Refusal.TERMINAL),
        (BudgetScope.MONTHLY, Refusal.TERMINAL),
        (BudgetScope.TURN, Refusal.TERMINAL),
    ],
)
def test_only_a_provider_daily_refusal_skips_the_provider(scope: BudgetScope, refusal: Refusal) -> None:
    """A provider's daily budget skips to the next provider; a session or monthly refusal ends the call."""
    assert refusal_for(scope) is refusal


@pytest.mark.parametrize(
    ("kind", "error", "outcome"),
    [
        (FailKind.DEADLINE, ErrorKind.DEADLINE, CallOutcome.ALL_FAILED),
        (FailKind.AUTH, ErrorKind.AUTH, CallOutcome.AUTH_ERROR),
        (FailKind.TERMINAL, ErrorKind.TERMINAL, CallOutcome.TERMINAL_4XX),
        (FailKind.ATTEMPTS_CAP, ErrorKind.ATTEMPTS_CAP, CallOutcome.ALL_FAILED),
        (FailKind.BUDGET, ErrorKind.BUDGET, CallOutcome.ALL_FAILED),
        (FailKind.NO_ELIGIBLE, ErrorKind.NO_ELIGIBLE, CallOutcome.ALL_FAILED),
        (FailKind.ALL_FAILED, ErrorKind.ALL_FAILED, CallOutcome.ALL_FAILED),
    ],
)
def test_each_kernel_failure_raises_its_error(kind: FailKind, error: ErrorKind, outcome: CallOutcome) -> None:
    """With everything the row needs, each kernel FailKind maps to its one error and metric outcome."""
    row = call_failure(kind, has_failure=True, has_refusal=True, has_records=True)
    assert (row.error, row.outcome) == (error, outcome)


def test_all_failed_with_no_attempt_record_means_no_eligible_provider() -> None:
    """A chain that failed without sending anything is reported as NoEligibleProvider, not AllProvidersFailed."""
    row = call_failure(FailKind.ALL_FAILED, has_failure=False, has_refusal=False, has_records=False)
    assert row.error is ErrorKind.NO_ELIGIBLE


@pytest.mark.parametrize(
    ("kind", "missing"),
    [(FailKind.AUTH, "failure"), (FailKind.TERMINAL, "failure"), (FailKind.BUDGET, "refusal")],
)
def test_a_row_without_what_it_needs_falls_back_to_all_failed(kind: FailKind, missing: str) -> None:
    """An auth/terminal end without its failure, or a budget end without the refusal, is AllProvidersFailed."""
    row = call_failure(kind, has_failure=missing != "failure", has_refusal=missing != "refusal", has_records=True)
    assert (row.error, row.outcome) == (ErrorKind.ALL_FAILED, CallOutcome.ALL_FAILED)


@given(st.sampled_from(list(FailKind)), st.booleans(), st.booleans(), st.booleans())
def test_the_failure_table_never_reports_success(kind: FailKind, failure: bool, refusal: bool, records: bool) -> None:
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
        (FailureKind.HTTP_STATUS, 503, LastErrorKind.PROVIDER_STATUS),
        (FailureKind.HTTP_STATUS, 429, LastErrorKind.PROVIDER_STATUS),
        (FailureKind.HTTP_STATUS, 500, LastErrorKind.PROVIDER_STATUS),
        (FailureKind.HTTP_STATUS, 400, LastErrorKind.TERMINAL_STATUS),
        (FailureKind.HTTP_STATUS, 404, LastErrorKind.TERMINAL_STATUS),
        (FailureKind.INVALID_RESPONSE, None, LastErrorKind.INVALID_RESPONSE),
        (FailureKind.ATTEMPT_TIMEOUT, None, LastErrorKind.OTHER),
    ],
)
def test_the_last_failed_attempt_is_described_truthfully(
    kind: FailureKind, status: int | None, described: LastErrorKind
) -> None:
    """A retryable 503 or 429 that ran out is a provider HTTP error, not a terminal one; 400/404 are terminal."""
    assert last_error_kind(kind, status) is described


@given(st.integers(500, 599))
def test_no_5xx_is_ever_described_as_terminal(status: int) -> None:
    """Every 5xx in AllProvidersFailed.last_error is described as a provider (not terminal) HTTP error."""
    assert last_error_kind(FailureKind.HTTP_STATUS, status) is LastErrorKind.PROVIDER_STATUS
