"""falsification/sequential.py: the e-processes behind the randomised rows' verdicts."""

from __future__ import annotations

import random

import pytest

from falsification.sequential import SignTest, distribution


def test_all_seeds_above_threshold_establish_the_claim() -> None:
    """Every seed at or above the threshold: e_for reaches 1/alpha and the claim survives."""
    test = SignTest(threshold=0.2, alpha=0.05)
    while not test.decided:
        test.update(0.2)
    assert test.survived
    assert test.e_for >= 20
    assert test.e_against == 1.0
    assert len(test.values) < 15
    assert test.outcome.startswith("claim established")


def test_all_seeds_below_threshold_refute_the_claim() -> None:
    """Every seed below the threshold: e_against reaches 1/alpha, the claim does not survive."""
    test = SignTest(threshold=0.2)
    while not test.decided:
        test.update(0.19)
    assert not test.survived
    assert test.outcome.startswith("claim refuted")


def test_a_fair_coin_rarely_establishes_the_claim() -> None:
    """Type-I control: with P(value >= threshold) = 1/2, at most alpha of 200 runs of 40 seeds survive."""
    rng = random.Random(1)
    survived = 0
    for _ in range(200):
        test = SignTest(threshold=0.5, alpha=0.05)
        for _seed in range(40):
            test.update(rng.random())
            if test.decided:
                break
        survived += test.survived
    assert survived <= 10  # alpha x 200 (measured: 4; a bet that peeks at the seed it bets on gives 28)


def test_undecided_outcome_and_bad_alpha() -> None:
    """An undecided run says so; alpha outside (0, 1) is refused."""
    test = SignTest(threshold=0.0)
    test.update(1.0)
    test.update(-1.0)
    assert not test.decided
    assert test.outcome.startswith("claim not established within 2 seeds")
    with pytest.raises(ValueError, match="alpha must be in"):
        SignTest(threshold=0.0, alpha=1.0)


def test_distribution_reports_quartiles() -> None:
    """distribution(): min, quartiles, max and mean as percentages."""
    assert distribution([0.1]) == "10.0%"
    assert distribution([0.0, 0.1, 0.2, 0.3, 0.4]) == (
        "min 0.0%, q1 10.0%, median 20.0%, q3 30.0%, max 40.0%, mean 20.0%"
    )
