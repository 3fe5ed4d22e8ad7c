"""The decision table and Retry-After parsing (RFC 9110 §10.2.3)."""

from __future__ import annotations

from datetime import UTC, datetime
from email.utils import format_datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from routeproof.core.classify import (
    FAILURE_TABLE,
    MAX_RETRY_AFTER_MS,
    Verdict,
    classify_failure,
    classify_status,
    parse_retry_after_ms,
)
from routeproof.core.types import AttemptFailure, AttemptFailureKind, RetryReason


@pytest.mark.parametrize(
    ("status", "verdict", "reason"),
    [
        (400, Verdict.TERMINAL, None),
        (401, Verdict.TERMINAL_AUTH, None),
        (403, Verdict.TERMINAL_AUTH, None),
        (404, Verdict.TERMINAL, None),
        (408, Verdict.RETRY, RetryReason.TIMEOUT),
        (429, Verdict.RETRY, RetryReason.TOO_MANY_REQUESTS),
        (500, Verdict.RETRY, RetryReason.FIVE_XX),
        (502, Verdict.RETRY, RetryReason.FIVE_XX),
        (503, Verdict.RETRY, RetryReason.FIVE_XX),
        (504, Verdict.RETRY, RetryReason.FIVE_XX),
        (529, Verdict.RETRY, RetryReason.FIVE_XX),
        (402, Verdict.FAIL_OVER, None),
        (409, Verdict.FAIL_OVER, None),
        (413, Verdict.FAIL_OVER, None),
        (422, Verdict.FAIL_OVER, None),
        (501, Verdict.FAIL_OVER, None),
    ],
)
def test_status_table(status: int, verdict: Verdict, reason: RetryReason | None) -> None:
    """Each status maps to the reconciled rule (DESIGN.md): retry, terminal, auth or fail over."""
    result = classify_status(status)
    assert (result.verdict, result.reason) == (verdict, reason)


@given(st.integers(400, 499))
def test_4xx_is_never_retried_except_408_and_429(status: int) -> None:
    """No 4xx other than 408 and 429 is ever retried."""
    assert (classify_status(status).verdict is Verdict.RETRY) == (status in (408, 429))


def test_every_failure_kind_has_a_rule() -> None:
    """The failure table covers every non-HTTP failure kind."""
    assert set(FAILURE_TABLE) == set(AttemptFailureKind) - {AttemptFailureKind.HTTP_STATUS}


@pytest.mark.parametrize(
    ("kind", "reason"),
    [
        (AttemptFailureKind.CONN_RESET, RetryReason.CONN_RESET),
        (AttemptFailureKind.CONN_REFUSED, RetryReason.CONN_RESET),
        (AttemptFailureKind.CONNECT_TIMEOUT, RetryReason.TIMEOUT),
        (AttemptFailureKind.READ_TIMEOUT, RetryReason.TIMEOUT),
        (AttemptFailureKind.ATTEMPT_TIMEOUT, RetryReason.TIMEOUT),
    ],
)
def test_transport_failures_retry(kind: AttemptFailureKind, reason: RetryReason) -> None:
    """Resets, refusals and timeouts are retried with their reason label."""
    result = classify_failure(AttemptFailure(kind=kind))
    assert (result.verdict, result.reason) == (Verdict.RETRY, reason)


def test_context_overflow_opt_in() -> None:
    """Context overflow is terminal unless the policy opts into context-window failover."""
    failure = AttemptFailure(kind=AttemptFailureKind.CONTEXT_OVERFLOW, http_status=400)
    assert classify_failure(failure).verdict is Verdict.TERMINAL
    assert classify_failure(failure, context_window_failover=True).verdict is Verdict.FAIL_OVER


NOW_MS = 1_700_000_000_000


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("5", 5_000),
        ("0", 0),
        (" 12 ", 12_000),
        ("86400", 86_400_000),
        ("86401", None),  # absurd: more than a day
        ("-5", None),
        ("1.5", None),
        ("soon", None),
        ("", None),
        (None, None),
        ("٣", None),  # a non-ASCII digit is not delay-seconds
        ("99999999999999999999", None),
        ("Tue, 14 Nov 2023 22:13:40", None),  # no zone: not an HTTP-date
    ],
)
def test_retry_after_values(header: str | None, expected: int | None) -> None:
    """Delay-seconds parse exactly; negative, fractional, garbage and absurd values count as absent."""
    assert parse_retry_after_ms(header, NOW_MS) == expected


def test_retry_after_http_date() -> None:
    """An HTTP-date is measured against the given now; a date in the past means 0."""
    now = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)
    now_ms = int(now.timestamp() * 1000)
    later = format_datetime(datetime(2026, 11, 30, 12, 0, 7, tzinfo=UTC), usegmt=True)
    earlier = format_datetime(datetime(2026, 11, 30, 11, 0, 0, tzinfo=UTC), usegmt=True)
    assert parse_retry_after_ms(later, now_ms) == 7_000
    assert parse_retry_after_ms(earlier, now_ms) == 0
    assert parse_retry_after_ms("Wed, 21 Oct 2015 07:28:00 GMT", 1445412470000) == 10_000


@given(st.text(max_size=40))
def test_retry_after_never_raises(header: str) -> None:
    """Any header text parses to None or a delay within [0, one day]; nothing raises."""
    result = parse_retry_after_ms(header, NOW_MS)
    assert result is None or 0 <= result <= MAX_RETRY_AFTER_MS


def test_health_table_covers_every_status() -> None:
    """Every attempt status has a health effect; only provider faults count toward a cooldown."""
    from routeproof.core.classify import HEALTH_TABLE, HealthEffect, health_effect
    from routeproof.core.types import AttemptStatus

    assert set(HEALTH_TABLE) == set(AttemptStatus)
    assert health_effect(AttemptStatus.DEADLINE_EXCEEDED_MID_CALL) is HealthEffect.NEUTRAL
    assert health_effect(AttemptStatus.TERMINAL_AUTH) is HealthEffect.NEUTRAL
    assert health_effect(AttemptStatus.RETRIED_AFTER_TIMEOUT) is HealthEffect.FAILURE
    assert health_effect(AttemptStatus.FAILED_OVER) is HealthEffect.FAILURE
