"""Retry delays: the slice-2 jitter band and the contract's capped full jitter.

Both are pure integer arithmetic on milliseconds. Randomness is an argument ``u`` in [0, 1], turned
into an integer numerator over ``2**53`` so that no base, cap or attempt number can overflow a
float or produce infinity.
"""

from __future__ import annotations

import icontract

from routeproof.core.constants import JITTER_PERCENT, RETRY_DELAYS_MS

__all__ = ["UNIT_SCALE", "band_delay_ms", "full_jitter_ms", "jitter_ms", "retry_delay_ms"]

UNIT_SCALE = 1 << 53
"""Resolution of the random draw: ``u`` becomes ``round(u * UNIT_SCALE)`` out of ``UNIT_SCALE``."""


def _draw_numerator(u: float) -> int:
    """``u`` in [0, 1] as an exact integer in [0, UNIT_SCALE]."""
    return min(UNIT_SCALE, max(0, int(u * UNIT_SCALE)))


def _jitter_ms(base_ms: int, jitter_percent: int, u: float) -> int:
    delta = base_ms * jitter_percent // 100
    if delta == 0:
        return base_ms
    offset = (2 * delta * _draw_numerator(u)) // UNIT_SCALE - delta
    return base_ms + offset


@icontract.require(lambda base_ms: base_ms >= 0)
@icontract.require(lambda jitter_percent: 0 <= jitter_percent <= 100)
@icontract.require(lambda u: 0.0 <= u <= 1.0)
@icontract.ensure(lambda result: result >= 0)
@icontract.ensure(
    lambda base_ms, jitter_percent, result: (
        base_ms - base_ms * jitter_percent // 100 <= result <= base_ms + base_ms * jitter_percent // 100
    )
)
@icontract.ensure(lambda base_ms, jitter_percent, result: jitter_percent != 0 or result == base_ms)
def jitter_ms(base_ms: int, jitter_percent: int, u: float) -> int:
    """``base_ms`` moved uniformly within ±``jitter_percent`` % by the draw ``u`` (0 % returns the base)."""
    return _jitter_ms(base_ms, jitter_percent, u)


def _band_delay_ms(attempt_num: int, u: float, delays_ms: tuple[int, ...], jitter_percent: int) -> int:
    return _jitter_ms(delays_ms[attempt_num - 2], jitter_percent, u)


@icontract.require(lambda attempt_num, delays_ms: 2 <= attempt_num <= len(delays_ms) + 1)
@icontract.require(lambda delays_ms: all(d >= 0 for d in delays_ms))
@icontract.require(lambda jitter_percent: 0 <= jitter_percent <= 100)
@icontract.require(lambda u: 0.0 <= u <= 1.0)
@icontract.ensure(
    lambda attempt_num, delays_ms, jitter_percent, result: (
        delays_ms[attempt_num - 2] * (100 - jitter_percent) <= result * 100
        and result * 100 <= delays_ms[attempt_num - 2] * (100 + jitter_percent)
    )
)
def band_delay_ms(
    attempt_num: int,
    u: float,
    delays_ms: tuple[int, ...] = RETRY_DELAYS_MS,
    jitter_percent: int = JITTER_PERCENT,
) -> int:
    """The sleep before attempt ``attempt_num`` (2 or 3): 200 ms then 800 ms, each ±20 %."""
    return _band_delay_ms(attempt_num, u, delays_ms, jitter_percent)


def _full_jitter_ms(attempt: int, base_ms: int, cap_ms: int, u: float) -> int:
    # base << attempt would build a huge int for absurd attempts: once the shift passes the
    # cap's bit length the ceiling is the cap anyway.
    ceiling = cap_ms if attempt >= cap_ms.bit_length() else min(cap_ms, base_ms << attempt)
    return ceiling * _draw_numerator(u) // UNIT_SCALE


@icontract.require(lambda attempt: attempt >= 0)
@icontract.require(lambda base_ms, cap_ms: 0 < base_ms <= cap_ms)
@icontract.require(lambda u: 0.0 <= u <= 1.0)
@icontract.ensure(lambda result: result >= 0)
@icontract.ensure(lambda cap_ms, result: result <= cap_ms)
@icontract.ensure(lambda attempt, base_ms, result: attempt > 62 or result <= base_ms * (1 << attempt))
def full_jitter_ms(attempt: int, base_ms: int, cap_ms: int, u: float) -> int:
    """The contract's full jitter: ``u × min(cap, base × 2^attempt)``, never above ``cap_ms``."""
    return _full_jitter_ms(attempt, base_ms, cap_ms, u)


@icontract.require(lambda attempt_num: attempt_num >= 2)
@icontract.require(lambda u: 0.0 <= u <= 1.0)
@icontract.require(lambda full_jitter, base_ms, cap_ms: not full_jitter or 0 < base_ms <= cap_ms)
@icontract.require(
    lambda full_jitter, attempt_num, delays_ms, jitter_percent: (
        full_jitter
        or (attempt_num <= len(delays_ms) + 1 and all(d >= 0 for d in delays_ms) and 0 <= jitter_percent <= 100)
    )
)
@icontract.ensure(lambda result: result >= 0)
@icontract.ensure(lambda full_jitter, cap_ms, result: not full_jitter or result <= cap_ms)
def retry_delay_ms(
    attempt_num: int,
    u: float,
    *,
    full_jitter: bool = False,
    base_ms: int = 200,
    cap_ms: int = 30_000,
    delays_ms: tuple[int, ...] = RETRY_DELAYS_MS,
    jitter_percent: int = JITTER_PERCENT,
) -> int:
    """The sleep before ``attempt_num`` (>= 2) under the selected policy (band by default)."""
    if full_jitter:
        return full_jitter_ms(attempt_num - 2, base_ms, cap_ms, u)
    return band_delay_ms(attempt_num, u, delays_ms, jitter_percent)
