"""The completion interval the MPA-007 plot draws agrees with the row's own binomial verdict."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from falsification.test_mpa007_chaos import CLAIMED_FAILURE_RATE, SIGNIFICANCE, falsified
from routeproof.report._stats import binomial_tail_at_least, clopper_pearson


def test_known_bounds() -> None:
    """All successes in 10 trials: the one-sided 95 % lower bound is 0.05 ** (1/10); none: 1 - that."""
    low, high = clopper_pearson(10, 10, 0.05)
    assert low == pytest.approx(0.05**0.1, abs=1e-9)
    assert high == 1.0
    low, high = clopper_pearson(0, 10, 0.05)
    assert low == 0.0
    assert high == pytest.approx(1 - 0.05**0.1, abs=1e-9)


def test_tail_matches_the_exact_sum() -> None:
    """The log-space binomial tail equals the exact sum where the exact sum is computable."""
    exact = sum(math.comb(200, i) * 0.01**i * 0.99 ** (200 - i) for i in range(9, 201))
    assert binomial_tail_at_least(200, 9, 0.01) == pytest.approx(exact, rel=1e-9)


@given(n=st.integers(1, 1_000), data=st.data())  # the row's own sum overflows a float past n ~ 1,020
def test_upper_end_left_of_the_claim_iff_the_row_falsifies(n: int, data: st.DataObject) -> None:
    """For any run, the plotted interval's upper end is below 99 % exactly when MPA-007's test falsifies."""
    failures = data.draw(st.integers(0, min(n, 40)))
    refuted, p_value = falsified(n, failures)
    if abs(p_value - SIGNIFICANCE) < 1e-9:
        return  # on the boundary itself the bisection's last digit decides
    _, upper = clopper_pearson(n - failures, n, SIGNIFICANCE)
    assert (upper < 1 - CLAIMED_FAILURE_RATE) == refuted
