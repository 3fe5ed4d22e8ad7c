"""FALSIFY-MPA-004 (backoff cap) and AC 11 (the ±20 % jitter band), as the contract states them."""

from __future__ import annotations

import random

import icontract
import pytest

from falsification.report import record_verdict
from routeproof.core.backoff import band_delay_ms, full_jitter_ms
from routeproof.core.constants import FULL_JITTER_BASE_MS, FULL_JITTER_CAP_MS

pytestmark = pytest.mark.falsify


def test_mpa_004_no_delay_exceeds_the_cap() -> None:
    """FALSIFY-MPA-004: 10,000 random attempt counts (up to 10^6): every full-jitter delay <= 30 s."""
    rng = random.Random(4)
    delays: list[int] = []
    violations = 0  # the function's own postcondition caught a delay past the cap
    for _ in range(10_000):
        attempt = rng.choice([rng.randrange(0, 64), rng.randrange(64, 10**6)])
        try:
            delays.append(full_jitter_ms(attempt, FULL_JITTER_BASE_MS, FULL_JITTER_CAP_MS, rng.random()))
        except icontract.ViolationError:
            violations += 1
    worst = max(delays, default=0)
    over = sum(d > FULL_JITTER_CAP_MS for d in delays) + violations
    record_verdict(
        "FALSIFY-MPA-004",
        evidence=f"10000 attempts (0..10^6): max delay {worst} ms, {over} over the {FULL_JITTER_CAP_MS} ms cap "
        f"({violations} stopped by the postcondition)",
        survived=over == 0 and min(delays, default=0) >= 0,
    )
    assert over == 0


def test_ac_11_jitter_band_for_many_seeds() -> None:
    """AC 11: for 200 seeds, 1,000 draws each: attempt-2 sleeps in [160, 240], attempt-3 in [640, 960]."""
    lows, highs = [], []
    outside = 0
    for seed in range(200):
        rng = random.Random(seed)
        second = [band_delay_ms(2, rng.random()) for _ in range(1_000)]
        third = [band_delay_ms(3, rng.random()) for _ in range(1_000)]
        outside += sum(not 160 <= d <= 240 for d in second) + sum(not 640 <= d <= 960 for d in third)
        lows.append((min(second), min(third)))
        highs.append((max(second), max(third)))
    span2 = (min(lo for lo, _ in lows), max(hi for hi, _ in highs))
    span3 = (min(lo for _, lo in lows), max(hi for _, hi in highs))
    record_verdict(
        "AC-11",
        evidence=f"400000 draws over 200 seeds: attempt 2 in {list(span2)} ms, attempt 3 in {list(span3)} ms, "
        f"{outside} outside the band",
        survived=outside == 0,
    )
    assert outside == 0
