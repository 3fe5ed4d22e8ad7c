"""Retry-After parsing (RFC 9110 §10.2.3): delay-seconds or an HTTP-date, against a "now" passed in.

Pure: the caller passes the current Unix time in milliseconds; no clock is read here. A value that
is absent, garbage, negative or longer than a day is None (ignored), never an error.
"""

from __future__ import annotations

from email.utils import parsedate_to_datetime

import icontract

__all__ = ["MAX_RETRY_AFTER_MS", "parse_retry_after_ms"]

MAX_RETRY_AFTER_MS = 86_400_000
"""A Retry-After beyond one day is absurd: it counts as absent."""


def _parse_retry_after_ms(value: str | None, now_epoch_ms: int) -> int | None:
    if value is None:
        return None
    text = value.strip()
    if not text:
        return None
    if text.isascii() and text.isdigit():
        if len(text) > 12:
            return None
        delay_ms = int(text) * 1000
    else:
        try:
            when = parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError, OverflowError):
            return None
        if when.tzinfo is None:  # RFC 9110 HTTP-dates are always GMT
            return None
        delay_ms = max(0, int(when.timestamp() * 1000) - now_epoch_ms)
    if delay_ms > MAX_RETRY_AFTER_MS:
        return None
    return delay_ms


@icontract.require(lambda now_epoch_ms: now_epoch_ms >= 0)
@icontract.ensure(lambda result: result is None or 0 <= result <= MAX_RETRY_AFTER_MS)
@icontract.ensure(lambda value, result: value is not None or result is None)
@icontract.ensure(
    lambda value, result: (
        not (value is not None and value.isascii() and value.isdigit() and len(value) <= 4)
        or result == int(value) * 1000
    )
)
def parse_retry_after_ms(value: str | None, now_epoch_ms: int) -> int | None:
    """Retry-After as milliseconds from now, or None when absent, garbage, negative or absurd."""
    return _parse_retry_after_ms(value, now_epoch_ms)
