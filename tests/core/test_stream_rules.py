"""Settling a committed stream and restarting an interrupted turn (core/stream_rules.py)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from routeproof.core.classify import HealthEffect
from routeproof.core.stream_rules import MAX_TURN_RESTARTS, StreamEnd, may_restart_turn, settle_stream


@pytest.mark.parametrize(
    ("end", "booked", "health"),
    [
        (StreamEnd.COMPLETED, 81, HealthEffect.SUCCESS),  # the usage's real cost
        (StreamEnd.INTERRUPTED, 1_000, HealthEffect.FAILURE),  # worst case; the provider's fault
        (StreamEnd.DEADLINE, 1_000, HealthEffect.NEUTRAL),  # worst case; the caller's limit
        (StreamEnd.ABANDONED, 1_000, HealthEffect.NEUTRAL),  # worst case; the caller stopped reading
    ],
)
def test_settlement_by_how_the_stream_ended(end: StreamEnd, booked: int, health: HealthEffect) -> None:
    """A completed stream books its usage; any other end books the reserved worst case, not zero."""
    result = settle_stream(end, reserved_pico_usd=1_000, usage_cost_pico_usd=81)
    assert (result.booked_pico_usd, result.health) == (booked, health)


@given(st.sampled_from(list(StreamEnd)), st.integers(0, 10**15), st.integers(0, 10**15))
def test_only_a_completed_stream_books_less_than_its_reservation(end: StreamEnd, reserved: int, cost: int) -> None:
    """Without usage the whole reservation is booked; with it, exactly its cost."""
    result = settle_stream(end, reserved_pico_usd=reserved, usage_cost_pico_usd=cost)
    assert result.booked_pico_usd == (cost if end is StreamEnd.COMPLETED else reserved)


def test_a_turn_restarts_once_and_only_before_the_deadline() -> None:
    """restart_on_interrupt retries a turn at most MAX_TURN_RESTARTS times, never at or past the deadline."""
    assert MAX_TURN_RESTARTS == 1
    assert may_restart_turn(0, 999, 1_000)
    assert not may_restart_turn(0, 1_000, 1_000)
    assert not may_restart_turn(1, 0, 1_000)
