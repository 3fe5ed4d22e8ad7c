"""classify_failure's HTTP-status path and the Retry-After length guard (mutation survivors, classify shard)."""

from __future__ import annotations

import pytest

from routeproof.core.classify import Verdict, classify_failure, parse_retry_after_ms
from routeproof.core.types import AttemptFailure, AttemptFailureKind, RetryReason


@pytest.mark.parametrize(
    ("status", "verdict"),
    [(503, Verdict.RETRY), (400, Verdict.TERMINAL), (401, Verdict.TERMINAL_AUTH), (501, Verdict.FAIL_OVER)],
)
def test_http_failures_are_classified_by_their_status(status: int, verdict: Verdict) -> None:
    """classify_failure: an HTTP_STATUS failure gets its status's rule (not the rule of status 0 or 1)."""
    result = classify_failure(AttemptFailure(kind=AttemptFailureKind.HTTP_STATUS, http_status=status))
    assert result.verdict is verdict
    assert result.reason is (RetryReason.FIVE_XX if status == 503 else None)


def test_long_digit_strings_are_absurd_not_parsed() -> None:
    """parse_retry_after_ms: digit strings past a day (86,400 s) are None, however long."""
    assert parse_retry_after_ms("86400", 0) == 86_400_000
    assert parse_retry_after_ms("86401", 0) is None
    for digits in (12, 13, 40):
        assert parse_retry_after_ms("9" * digits, 0) is None
