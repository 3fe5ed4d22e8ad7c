"""Settling a committed stream, holding back tool blocks, restarting a turn (core/stream_rules.py)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from routeproof.core.classify import HealthEffect
from routeproof.core.stream_rules import (
    MAX_TURN_RESTARTS,
    Hold,
    StreamEnd,
    hold_back,
    may_restart_turn,
    settle_stream,
)
from routeproof.core.types import BlockStop, StreamEvent, TextDelta, ToolUseDelta, ToolUseStart


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


def _relay(events: list[StreamEvent], *, whole_turn: bool = False) -> tuple[list[StreamEvent], list[StreamEvent]]:
    """Apply hold_back to ``events`` as the relay does: (relayed so far, still held)."""
    relayed: list[StreamEvent] = []
    held: list[StreamEvent] = []
    in_tool = False
    for event in events:
        decision = hold_back(event, in_tool=in_tool, whole_turn=whole_turn)
        in_tool = decision.in_tool
        if decision.hold is Hold.EMIT:
            relayed.append(event)
            continue
        held.append(event)
        if decision.hold is Hold.RELEASE:
            relayed.extend(held)
            held.clear()
    return relayed, held


START = ToolUseStart(id="t1", name="lookup")
DELTA = ToolUseDelta(id="t1", partial_json='{"q": ')
TEXT = TextDelta(text="hi")


def test_a_tool_block_is_held_until_it_closes() -> None:
    """ToolUseStart and its deltas are held back, then relayed together at the block's BlockStop."""
    relayed, held = _relay([TEXT, START, DELTA])
    assert (relayed, held) == ([TEXT], [START, DELTA])
    relayed, held = _relay([TEXT, START, DELTA, BlockStop(), TEXT])
    assert (relayed, held) == ([TEXT, START, DELTA, BlockStop(), TEXT], [])


def test_a_block_stop_outside_a_tool_block_is_relayed_at_once() -> None:
    """A text block's BlockStop, or a stray ToolUseDelta, is not held: only an open tool block is."""
    assert hold_back(BlockStop(), in_tool=False, whole_turn=False).hold is Hold.EMIT
    assert hold_back(DELTA, in_tool=False, whole_turn=False).hold is Hold.EMIT


def test_with_whole_turn_every_event_is_held() -> None:
    """restart_on_interrupt holds the whole turn: nothing is relayed before the MessageStop."""
    relayed, held = _relay([TEXT, START, DELTA, BlockStop(), TEXT], whole_turn=True)
    assert (relayed, len(held)) == ([], 5)


_EVENTS = st.sampled_from([TEXT, START, DELTA, BlockStop()])


@given(st.lists(_EVENTS, max_size=30))
def test_no_partial_tool_call_is_ever_relayed(events: list[StreamEvent]) -> None:
    """Whatever the order, every relayed ToolUseStart is followed by its BlockStop within what was relayed."""
    relayed, _ = _relay(events)
    open_block = False
    for event in relayed:
        if isinstance(event, ToolUseStart):
            open_block = True
        elif isinstance(event, BlockStop):
            open_block = False
    assert not open_block


@given(st.sampled_from(list(StreamEnd)), st.integers(0, 10**15), st.integers(0, 10**15), st.integers(0, 10**15))
def test_a_usage_reported_before_the_cut_is_what_is_booked(
    end: StreamEnd, reserved: int, cost: int, reported: int
) -> None:
    """Cut after the provider reported its usage (it bills it): that usage is booked, not the worst case."""
    result = settle_stream(end, reserved_pico_usd=reserved, usage_cost_pico_usd=cost, reported_cost_pico_usd=reported)
    assert result.booked_pico_usd == (cost if end is StreamEnd.COMPLETED else reported)
    assert (result.health is HealthEffect.FAILURE) == (end is StreamEnd.INTERRUPTED)
