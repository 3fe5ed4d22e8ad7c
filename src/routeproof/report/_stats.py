"""Exact binomial confidence bounds (Clopper-Pearson) for completion rates, without scipy."""

from __future__ import annotations

import math

__all__ = ["binomial_tail_at_least", "clopper_pearson"]


def _log_pmf(n: int, i: int, p: float) -> float:
    return math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * math.log(p) + (n - i) * math.log1p(-p)


def binomial_tail_at_least(n: int, k: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p), summed in log space so large n cannot overflow."""
    if k <= 0:
        return 1.0
    if k > n:
        return 0.0
    if p <= 0.0:
        return 0.0
    if p >= 1.0:
        return 1.0
    logs = [_log_pmf(n, i, p) for i in range(k, n + 1)]
    top = max(logs)
    return min(1.0, math.exp(top) * sum(math.exp(x - top) for x in logs))


def _solve(target: float, k: int, n: int, *, at_least: bool) -> float:
    """Bisection for p with P(X >= k | p) = target (``at_least``) or P(X <= k | p) = target."""
    lo, hi = 0.0, 1.0
    for _ in range(80):
        mid = (lo + hi) / 2
        value = binomial_tail_at_least(n, k, mid) if at_least else 1.0 - binomial_tail_at_least(n, k + 1, mid)
        # P(X >= k | p) grows with p, P(X <= k | p) shrinks with it
        if (value < target) == at_least:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def clopper_pearson(k: int, n: int, alpha_each_side: float) -> tuple[float, float]:
    """The exact interval for a proportion from ``k`` successes in ``n`` trials.

    The lower end ``p_lo`` solves P(X >= k | p_lo) = alpha, the upper end ``p_hi`` solves
    P(X <= k | p_hi) = alpha (so each end is a one-sided bound at level 1 - alpha).
    """
    if not 0 <= k <= n or n <= 0:
        raise ValueError(f"need 0 <= k <= n and n > 0, got k={k!r}, n={n!r}")
    lower = 0.0 if k == 0 else _solve(alpha_each_side, k, n, at_least=True)
    upper = 1.0 if k == n else _solve(alpha_each_side, k, n, at_least=False)
    return lower, upper
