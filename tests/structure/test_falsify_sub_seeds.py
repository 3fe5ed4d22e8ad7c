"""The rows' sub-seeds are part of their pre-registration: moving the derivation must not move a draw."""

from __future__ import annotations

import random

import pytest

from falsification.seeds import SubSeeds


def _drawn(row: str, seed: int, order: tuple[str, ...]) -> dict[str, int]:
    rng = random.Random(f"{row}/{seed}")
    return {name: rng.randrange(2**32) for name in order}


@pytest.mark.parametrize(
    ("row", "order"),
    [("h0-latency", ("provider", "arrival", "jitter")), ("latency-sla", ("arrival", "provider", "jitter"))],
)
def test_sub_seeds_are_the_rows_pre_registered_draws(row: str, order: tuple[str, str, str]) -> None:
    """Each row's sub-seeds are drawn from ``row/seed`` in the row's own order, as registered."""
    for seed in (11, 31, 101, 1001, 2001):
        sub = SubSeeds.of(row, seed, order=order)
        assert {"arrival": sub.arrival, "provider": sub.provider, "jitter": sub.jitter} == _drawn(row, seed, order)


def test_sub_seeds_refuse_an_order_that_misses_a_name() -> None:
    """An order that repeats or misses a sub-seed is refused, naming the order given."""
    with pytest.raises(ValueError, match="'arrival', 'arrival', 'jitter'"):
        SubSeeds.of("h0-latency", 11, order=("arrival", "arrival", "jitter"))
