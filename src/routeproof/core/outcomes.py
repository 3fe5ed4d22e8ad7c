"""How a call ends, as tables: what a ledger refusal does, which error a kernel failure raises,
how the last failed attempt is described, and the call's metric outcome.

The kernel ends a call with ``Fail(kind, failure, entry)``; the shell turns it into one
``RouterError``. Every choice on the way is a row here, so the shell only looks up and builds:

* a ledger refusal's scope -> skip this provider, or end the call (:func:`refusal_for`);
* the kernel's ``CallFailureKind`` (and what the call knows) -> :class:`ErrorKind` and
  :class:`CallOutcome` (:func:`call_failure`); an ``ALL_FAILED`` with no attempt record means no
  provider was eligible;
* a ``NO_ELIGIBLE`` end -> which cause the caller is told (:func:`no_eligible_cause`);
* the last failed attempt -> the kind of ``last_error`` that describes it (:func:`last_error_kind`):
  a retryable 503 that ran out is not described as terminal.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

import icontract

from routeproof.core.classify import Verdict, classify_status
from routeproof.core.kernel import CallFailureKind, RefusalEffect
from routeproof.core.ledger import BudgetScope
from routeproof.core.types import AttemptFailureKind

__all__ = [
    "BUDGET_SKIP_REASON",
    "CALL_FAILURES",
    "REFUSAL_BY_SCOPE",
    "CallFailure",
    "CallOutcome",
    "ErrorKind",
    "LastErrorKind",
    "NoEligibleCause",
    "call_failure",
    "last_error_kind",
    "no_eligible_cause",
    "refusal_for",
]

BUDGET_SKIP_REASON = "budget_provider_daily"
"""The ``SkipRecord.reason`` of a provider skipped because its daily budget refused."""


class CallOutcome(enum.Enum):
    """The closed ``outcome`` label of ``ai_router_calls_total`` (observe.CALL_OUTCOMES)."""

    SUCCEEDED = "succeeded"
    TERMINAL_4XX = "terminal_4xx"
    AUTH_ERROR = "auth_error"
    ALL_FAILED = "all_failed"


class ErrorKind(enum.Enum):
    """Which ``RouterError`` a failed call raises."""

    DEADLINE = "deadline"  # DeadlineExceeded
    AUTH = "auth"  # AuthError
    TERMINAL = "terminal"  # TerminalProviderError (400, 404, context overflow)
    ATTEMPTS_CAP = "attempts_cap"  # InvalidResponse(ATTEMPTS_CAP_REASON)
    BUDGET = "budget"  # the ledger refusal's BudgetExhausted
    NO_ELIGIBLE = "no_eligible"  # see no_eligible_cause
    ALL_FAILED = "all_failed"  # AllProvidersFailed(last_error=...)


class Needs(enum.Enum):
    """What a row needs from the call to apply; without it the row's fallback applies."""

    NOTHING = "nothing"
    FAILURE = "failure"  # the failed attempt (and its provider)
    REFUSAL = "refusal"  # the ledger's refusal
    RECORDS = "records"  # at least one attempt record


@dataclass(frozen=True, slots=True, kw_only=True)
class CallFailure:
    """One row: the error to raise and the metric outcome, if the row's need is met; else the fallback."""

    error: ErrorKind
    outcome: CallOutcome
    needs: Needs = Needs.NOTHING
    fallback: ErrorKind = ErrorKind.ALL_FAILED


CALL_FAILURES: Mapping[CallFailureKind, CallFailure] = MappingProxyType(
    {
        CallFailureKind.DEADLINE: CallFailure(error=ErrorKind.DEADLINE, outcome=CallOutcome.ALL_FAILED),
        CallFailureKind.AUTH: CallFailure(error=ErrorKind.AUTH, outcome=CallOutcome.AUTH_ERROR, needs=Needs.FAILURE),
        CallFailureKind.TERMINAL: CallFailure(
            error=ErrorKind.TERMINAL, outcome=CallOutcome.TERMINAL_4XX, needs=Needs.FAILURE
        ),
        CallFailureKind.ATTEMPTS_CAP: CallFailure(error=ErrorKind.ATTEMPTS_CAP, outcome=CallOutcome.ALL_FAILED),
        CallFailureKind.BUDGET: CallFailure(
            error=ErrorKind.BUDGET, outcome=CallOutcome.ALL_FAILED, needs=Needs.REFUSAL
        ),
        CallFailureKind.NO_ELIGIBLE: CallFailure(error=ErrorKind.NO_ELIGIBLE, outcome=CallOutcome.ALL_FAILED),
        # all failed with no attempt record: nothing could be sent, so no provider was eligible
        CallFailureKind.ALL_FAILED: CallFailure(
            error=ErrorKind.ALL_FAILED,
            outcome=CallOutcome.ALL_FAILED,
            needs=Needs.RECORDS,
            fallback=ErrorKind.NO_ELIGIBLE,
        ),
    }
)
"""The kernel's ``CallFailureKind`` -> the error and the outcome (one row per kind)."""


def _met(needs: Needs, *, has_failure: bool, has_refusal: bool, has_records: bool) -> bool:
    return {
        Needs.NOTHING: True,
        Needs.FAILURE: has_failure,
        Needs.REFUSAL: has_refusal,
        Needs.RECORDS: has_records,
    }[needs]


@icontract.ensure(lambda kind, result: kind is not CallFailureKind.DEADLINE or result.error is ErrorKind.DEADLINE)
@icontract.ensure(
    lambda kind, has_records, result: (
        not (kind is CallFailureKind.ALL_FAILED and not has_records) or result.error is ErrorKind.NO_ELIGIBLE
    ),
    "all failed with no attempt record means no eligible provider",
)
@icontract.ensure(
    lambda result: (
        (result.outcome is CallOutcome.ALL_FAILED) == (result.error not in (ErrorKind.AUTH, ErrorKind.TERMINAL))
    ),
    "only an auth error or a terminal 4xx has its own outcome label",
)
@icontract.ensure(lambda result: result.outcome is not CallOutcome.SUCCEEDED)
def call_failure(kind: CallFailureKind, *, has_failure: bool, has_refusal: bool, has_records: bool) -> CallFailure:
    """The error a call ending with ``kind`` raises, and its metric outcome (a resolved row)."""
    row = CALL_FAILURES[kind]
    if _met(row.needs, has_failure=has_failure, has_refusal=has_refusal, has_records=has_records):
        return row
    return CallFailure(error=row.fallback, outcome=CallOutcome.ALL_FAILED)


REFUSAL_BY_SCOPE: Mapping[BudgetScope, RefusalEffect] = MappingProxyType(
    {
        BudgetScope.PROVIDER_DAILY: RefusalEffect.SKIP_PROVIDER,  # another provider's budget may still allow it
        BudgetScope.SESSION: RefusalEffect.TERMINAL,  # no provider can take the call
        BudgetScope.MONTHLY: RefusalEffect.TERMINAL,
        BudgetScope.TURN: RefusalEffect.TERMINAL,  # a turn threshold warns, it never refuses: kept closed
    }
)
"""Which ledger refusal skips a provider and which ends the call."""


@icontract.ensure(
    lambda scope, result: (result is RefusalEffect.SKIP_PROVIDER) == (scope is BudgetScope.PROVIDER_DAILY)
)
def refusal_for(scope: BudgetScope) -> RefusalEffect:
    """What the kernel is told when the ledger refuses an attempt in ``scope``."""
    return REFUSAL_BY_SCOPE[scope]


class NoEligibleCause(enum.Enum):
    """What a call that could send nothing tells the caller."""

    BUDGET_REFUSAL = "budget_refusal"  # the ledger refused (BudgetExhausted)
    CONFIG_ERROR = "config_error"  # the configuration error that skipped the chain
    NO_PROVIDER = "no_provider"  # NoEligibleProvider, naming the skips


@icontract.ensure(lambda has_records, result: not has_records or result is NoEligibleCause.NO_PROVIDER)
def no_eligible_cause(*, has_records: bool, has_refusal: bool, has_config_error: bool) -> NoEligibleCause:
    """A refusal first, then a configuration error, explain a call that sent nothing; else the skips."""
    if has_records:
        return NoEligibleCause.NO_PROVIDER
    if has_refusal:
        return NoEligibleCause.BUDGET_REFUSAL
    if has_config_error:
        return NoEligibleCause.CONFIG_ERROR
    return NoEligibleCause.NO_PROVIDER


class LastErrorKind(enum.Enum):
    """How ``AllProvidersFailed.last_error`` describes the last failed attempt."""

    TERMINAL_STATUS = "terminal_status"  # TerminalProviderError: an HTTP status that stops a call
    PROVIDER_STATUS = "provider_status"  # ProviderHTTPError: a retryable or fail-over HTTP status
    INVALID_RESPONSE = "invalid_response"  # InvalidResponse
    OTHER = "other"  # RouterError naming the failure kind (timeouts, connection errors)


_TERMINAL_VERDICTS = frozenset({Verdict.TERMINAL, Verdict.TERMINAL_AUTH})


@icontract.require(lambda http_status: http_status is None or 100 <= http_status <= 999)
@icontract.ensure(
    lambda kind, http_status, result: (
        result is not LastErrorKind.TERMINAL_STATUS
        or (kind is AttemptFailureKind.HTTP_STATUS and http_status is not None and http_status < 500)
    ),
    "a 5xx is never described as terminal",
)
def last_error_kind(kind: AttemptFailureKind, http_status: int | None) -> LastErrorKind:
    """The description of a failed attempt whose failure is ``kind`` (with ``http_status``)."""
    if kind is AttemptFailureKind.HTTP_STATUS and http_status is not None:
        terminal = classify_status(http_status).verdict in _TERMINAL_VERDICTS
        return LastErrorKind.TERMINAL_STATUS if terminal else LastErrorKind.PROVIDER_STATUS
    if kind is AttemptFailureKind.INVALID_RESPONSE:
        return LastErrorKind.INVALID_RESPONSE
    return LastErrorKind.OTHER
