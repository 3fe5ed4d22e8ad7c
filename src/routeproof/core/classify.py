"""What a finished attempt means: retry (with a reason), fail over, or stop.

The decision table is data (``STATUS_TABLE``, ``FAILURE_TABLE``) so that tests and docs can list
it; ``classify_status`` and ``classify_failure`` only look things up. The module's other former jobs
live next door and are re-exported here: Retry-After parsing in :mod:`routeproof.core.retry_after`,
an attempt's effect on provider health in :mod:`routeproof.core.attempt_health`.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

import icontract

from routeproof.core.attempt_health import HEALTH_TABLE, HealthEffect, health_effect
from routeproof.core.retry_after import MAX_RETRY_AFTER_MS, parse_retry_after_ms
from routeproof.core.types import AttemptFailure, AttemptFailureKind, RetryReason

__all__ = [
    "FAILURE_TABLE",
    "HEALTH_TABLE",
    "MAX_RETRY_AFTER_MS",
    "STATUS_TABLE",
    "Classification",
    "HealthEffect",
    "Verdict",
    "classify_failure",
    "classify_status",
    "health_effect",
    "is_billable",
    "parse_retry_after_ms",
]


class Verdict(enum.Enum):
    """What the kernel does after a failed attempt."""

    RETRY = "retry"  # transient: same provider again, after a backoff or Retry-After
    FAIL_OVER = "fail_over"  # persistent for this provider: next provider, no retry
    TERMINAL = "terminal"  # the request itself is wrong (400, 404): stop, no failover
    TERMINAL_AUTH = "terminal_auth"  # the gateway's credentials are wrong (401, 403): stop, sev-1
    DEADLINE = "deadline"  # the caller's deadline elapsed mid-call


@dataclass(frozen=True, slots=True, kw_only=True)
class Classification:
    """A verdict and, for retries, the reason label of ``ai_router_retries_total``."""

    verdict: Verdict
    reason: RetryReason | None = None


_RETRY_5XX = Classification(verdict=Verdict.RETRY, reason=RetryReason.FIVE_XX)
_FAIL_OVER = Classification(verdict=Verdict.FAIL_OVER)

STATUS_TABLE: Mapping[int, Classification] = MappingProxyType(
    {
        400: Classification(verdict=Verdict.TERMINAL),
        401: Classification(verdict=Verdict.TERMINAL_AUTH),
        403: Classification(verdict=Verdict.TERMINAL_AUTH),
        404: Classification(verdict=Verdict.TERMINAL),
        408: Classification(verdict=Verdict.RETRY, reason=RetryReason.TIMEOUT),
        429: Classification(verdict=Verdict.RETRY, reason=RetryReason.TOO_MANY_REQUESTS),
        500: _RETRY_5XX,
        502: _RETRY_5XX,
        503: _RETRY_5XX,
        504: _RETRY_5XX,
        529: _RETRY_5XX,  # Anthropic's "overloaded_error": transient by its documentation
    }
)
"""Every HTTP status with its own rule. Any other 4xx or 5xx fails over without a retry."""

FAILURE_TABLE: Mapping[AttemptFailureKind, Classification] = MappingProxyType(
    {
        AttemptFailureKind.CONN_RESET: Classification(verdict=Verdict.RETRY, reason=RetryReason.CONN_RESET),
        AttemptFailureKind.CONN_REFUSED: Classification(verdict=Verdict.RETRY, reason=RetryReason.CONN_RESET),
        AttemptFailureKind.CONNECT_TIMEOUT: Classification(verdict=Verdict.RETRY, reason=RetryReason.TIMEOUT),
        AttemptFailureKind.READ_TIMEOUT: Classification(verdict=Verdict.RETRY, reason=RetryReason.TIMEOUT),
        AttemptFailureKind.ATTEMPT_TIMEOUT: Classification(verdict=Verdict.RETRY, reason=RetryReason.TIMEOUT),
        AttemptFailureKind.DEADLINE: Classification(verdict=Verdict.DEADLINE),
        AttemptFailureKind.INVALID_RESPONSE: _FAIL_OVER,
        AttemptFailureKind.CONTEXT_OVERFLOW: Classification(verdict=Verdict.TERMINAL),
        # An in-band error (Anthropic "overloaded_error") or corrupt SSE before the first token is
        # the provider failing mid-answer: transient, like a 5xx (seed 003: "retry once" and more).
        AttemptFailureKind.STREAM_ERROR: _RETRY_5XX,
    }
)
"""Every non-HTTP failure kind (``HTTP_STATUS`` goes through ``STATUS_TABLE``)."""

TIMEOUT_KINDS = frozenset(
    {AttemptFailureKind.CONNECT_TIMEOUT, AttemptFailureKind.READ_TIMEOUT, AttemptFailureKind.ATTEMPT_TIMEOUT}
)

_4XX_REASONS = (RetryReason.TIMEOUT, RetryReason.TOO_MANY_REQUESTS)


def _classify_status(status: int) -> Classification:
    known = STATUS_TABLE.get(status)
    if known is not None:
        return known
    return _FAIL_OVER


@icontract.require(lambda status: 100 <= status <= 999)
@icontract.ensure(lambda status, result: status not in (401, 403) or result.verdict is Verdict.TERMINAL_AUTH)
@icontract.ensure(lambda status, result: status not in (400, 404) or result.verdict is Verdict.TERMINAL)
@icontract.ensure(
    lambda status, result: status not in (408, 429, 500, 502, 503, 504) or result.verdict is Verdict.RETRY
)
@icontract.ensure(lambda result: (result.reason is not None) == (result.verdict is Verdict.RETRY))
@icontract.ensure(lambda status, result: not (400 <= status < 500) or result.reason in (None, *_4XX_REASONS))
def classify_status(status: int) -> Classification:
    """The decision for an HTTP error status: retry (408, 429, 5xx), terminal, auth, or fail over."""
    return _classify_status(status)


def _classify_failure(failure: AttemptFailure, context_window_failover: bool) -> Classification:
    if failure.kind is AttemptFailureKind.HTTP_STATUS:
        return _classify_status(failure.http_status if failure.http_status is not None else 0)
    if failure.kind is AttemptFailureKind.CONTEXT_OVERFLOW and context_window_failover:
        return _FAIL_OVER
    return FAILURE_TABLE[failure.kind]


@icontract.require(
    lambda failure: (
        failure.kind is not AttemptFailureKind.HTTP_STATUS
        or (failure.http_status is not None and 100 <= failure.http_status <= 999)
    )
)
@icontract.ensure(lambda result: (result.reason is not None) == (result.verdict is Verdict.RETRY))
@icontract.ensure(
    lambda failure, context_window_failover, result: (
        failure.kind is not AttemptFailureKind.CONTEXT_OVERFLOW
        or result.verdict is (Verdict.FAIL_OVER if context_window_failover else Verdict.TERMINAL)
    )
)
@icontract.ensure(lambda failure, result: failure.kind not in TIMEOUT_KINDS or result.reason is RetryReason.TIMEOUT)
def classify_failure(failure: AttemptFailure, *, context_window_failover: bool = False) -> Classification:
    """The decision for one failed attempt (an HTTP status or a transport failure)."""
    return _classify_failure(failure, context_window_failover)


@icontract.ensure(
    lambda failure, result: (
        not result or not (failure.kind is AttemptFailureKind.HTTP_STATUS and failure.http_status in (401, 403))
    )
)
def is_billable(failure: AttemptFailure) -> bool:
    """Whether what a provider reports it billed for a failed attempt is booked: never for an
    auth failure (the tenant is never charged for the gateway's bad credentials)."""
    return _classify_failure(failure, False).verdict is not Verdict.TERMINAL_AUTH
