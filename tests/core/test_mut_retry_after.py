"""Retry-After's delay-seconds length guard: more than 12 digits is refused unparsed, whatever the value."""

from __future__ import annotations

from routeproof.core.retry_after import parse_retry_after_ms


def test_twelve_digits_with_leading_zeros_are_parsed() -> None:
    """A 12-character delay-seconds value is parsed by value: '000000000001' is one second."""
    assert parse_retry_after_ms("000000000001", 0) == 1_000


def test_thirteen_digits_are_refused_even_when_small() -> None:
    """A delay-seconds value longer than 12 characters is None, even when its leading zeros make it small."""
    assert parse_retry_after_ms("0000000000001", 0) is None
