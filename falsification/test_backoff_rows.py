"""FALSIFY-MPA-004 (backoff cap) and AC 11 (the ±20 % jitter band), as the contract states them."""

from __future__ import annotations

import random
from collections import Counter

import icontract
import pytest

from falsification.report import record_verdict
from falsification.seeds import base, seed_range
from routeproof.core.backoff import band_delay_ms, full_jitter_ms
from routeproof.core.constants import FULL_JITTER_BASE_MS, FULL_JITTER_CAP_MS

pytestmark = pytest.mark.falsify

MPA_004_SEED = base(4)
AC_11_SEEDS = range(base(0), base(0) + 200)


def test_mpa_004_no_delay_exceeds_the_cap() -> None:
    """FALSIFY-MPA-004: 10,000 random attempt counts (up to 10^6): every full-jitter delay <= 30 s."""
    rng = random.Random(MPA_004_SEED)
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
    bin_ms = 1_000
    bins = Counter(d // bin_ms for d in delays)
    record_verdict(
        "FALSIFY-MPA-004",
        evidence=f"10000 attempts (0..10^6): max delay {worst} ms, {over} over the {FULL_JITTER_CAP_MS} ms cap "
        f"({violations} stopped by the postcondition)",
        survived=over == 0 and min(delays, default=0) >= 0,
        procedure="universal claim sampled: every one of 10,000 random draws checked against the cap, one "
        "delay past it falsifies (the exhaustive walk to bound 16 is KANI-MPA-003 in tests/core)",
        seeds=f"{MPA_004_SEED} (one stream of 10,000 draws)",
        data={
            "full_jitter": {
                "draws": len(delays) + violations,
                "cap_ms": FULL_JITTER_CAP_MS,
                "max_ms": worst,
                "over_cap": over,
                "bin_ms": bin_ms,  # counts[i]: delays in [i * bin_ms, (i + 1) * bin_ms)
                "counts": [bins.get(i, 0) for i in range(max(worst, FULL_JITTER_CAP_MS) // bin_ms + 1)],
            }
        },
    )
    assert over == 0


def test_ac_11_jitter_band_for_many_seeds() -> None:
    """AC 11: for 200 seeds, 1,000 draws each: attempt-2 sleeps in [160, 240], attempt-3 in [640, 960]."""
    lows, highs = [], []
    outside = 0
    seen: dict[int, Counter[int]] = {2: Counter(), 3: Counter()}
    for seed in AC_11_SEEDS:
        rng = random.Random(seed)
        second = [band_delay_ms(2, rng.random()) for _ in range(1_000)]
        third = [band_delay_ms(3, rng.random()) for _ in range(1_000)]
        seen[2].update(second)
        seen[3].update(third)
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
        procedure="all-seeds statement: every draw of every seed must lie in the band; one outside falsifies",
        seeds=f"{seed_range(AC_11_SEEDS)}, 1,000 draws per attempt each",
        data={"band": [_band_histogram(2, 200, seen[2]), _band_histogram(3, 800, seen[3])]},
    )
    assert outside == 0


def _band_histogram(attempt: int, nominal_ms: int, counts: Counter[int]) -> dict[str, object]:
    """One attempt's draws for the report: counts[i] is how many sleeps were exactly first_ms + i."""
    first, last = min(counts), max(counts)
    return {
        "attempt": attempt,
        "nominal_ms": nominal_ms,
        "low_ms": nominal_ms * 8 // 10,
        "high_ms": nominal_ms * 12 // 10,
        "first_ms": first,
        "counts": [counts.get(ms, 0) for ms in range(first, last + 1)],
    }
