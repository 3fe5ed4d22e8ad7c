"""Retry delays: the 200/800 ms ±20 % band and the capped full jitter."""

from __future__ import annotations

import icontract
import pytest
from hypothesis import given
from hypothesis import strategies as st

from routeproof.core.backoff import band_delay_ms, full_jitter_ms, jitter_ms, retry_delay_ms

unit = st.floats(0.0, 1.0)


@given(unit)
def test_attempt_2_band_is_160_to_240(u: float) -> None:
    """AC11: the sleep before attempt 2 is in [160, 240] ms for every draw."""
    assert 160 <= band_delay_ms(2, u) <= 240


@given(unit)
def test_attempt_3_band_is_640_to_960(u: float) -> None:
    """AC11: the sleep before attempt 3 is in [640, 960] ms for every draw."""
    assert 640 <= band_delay_ms(3, u) <= 960


def test_band_edges_are_reached() -> None:
    """The band spans its whole width: u=0 gives the low edge, u=1 the high edge, 0.5 the base."""
    assert (band_delay_ms(2, 0.0), band_delay_ms(2, 0.5), band_delay_ms(2, 1.0)) == (160, 200, 240)
    assert (band_delay_ms(3, 0.0), band_delay_ms(3, 1.0)) == (640, 960)


@given(st.integers(0, 10**30), unit)
def test_zero_factor_returns_the_base(base_ms: int, u: float) -> None:
    """Jitter 0 % returns the base unchanged, for any base (no modulo by zero)."""
    assert jitter_ms(base_ms, 0, u) == base_ms


@given(st.integers(0, 10**400), st.integers(0, 100), unit)
def test_jitter_never_negative_nor_overflowing(base_ms: int, percent: int, u: float) -> None:
    """Any base, even beyond float range, stays a non-negative int within the band."""
    result = jitter_ms(base_ms, percent, u)
    delta = base_ms * percent // 100
    assert base_ms - delta <= result <= base_ms + delta
    assert result >= 0


@given(st.integers(0, 10**6), st.integers(1, 10**6), st.integers(0, 10**6), unit)
def test_full_jitter_never_exceeds_cap(attempt: int, base_ms: int, extra: int, u: float) -> None:
    """FALSIFY-MPA-004: u × min(cap, base × 2^attempt) <= cap for every attempt, far past 64."""
    cap_ms = base_ms + extra
    delay = full_jitter_ms(attempt, base_ms, cap_ms, u)
    assert 0 <= delay <= cap_ms
    assert isinstance(delay, int)


def test_full_jitter_grows_then_caps() -> None:
    """With u=1 the ceiling doubles per attempt from the base until it reaches the cap."""
    assert [full_jitter_ms(n, 200, 30_000, 1.0) for n in range(9)] == [
        200, 400, 800, 1600, 3200, 6400, 12800, 25600, 30000,
    ]  # fmt: skip
    assert full_jitter_ms(10**12, 200, 30_000, 1.0) == 30_000


def test_preconditions_reject_bad_arguments() -> None:
    """A cap below the base, a negative attempt or a draw outside [0, 1] violates the contract."""
    with pytest.raises(icontract.ViolationError):
        full_jitter_ms(1, 500, 100, 0.5)
    with pytest.raises(icontract.ViolationError):
        full_jitter_ms(-1, 100, 500, 0.5)
    with pytest.raises(icontract.ViolationError):
        jitter_ms(100, 20, 1.5)
    with pytest.raises(icontract.ViolationError):
        band_delay_ms(4, 0.5)


def test_retry_delay_selects_the_policy() -> None:
    """retry_delay_ms uses the band by default and full jitter on request."""
    assert retry_delay_ms(2, 0.5) == 200
    assert retry_delay_ms(3, 1.0, full_jitter=True, base_ms=100, cap_ms=150) == 150
