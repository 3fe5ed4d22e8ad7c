"""What happens after a streamed answer is committed: what it costs, what it says about the
provider's health, and whether the turn may be retried from scratch.

Up to the first token a streaming call is decided by the kernel like any call. After it the call
is committed to one provider, and these rules decide which events are held back before they are
relayed (:func:`hold_back`: a tool-call block until it closes, or the whole turn), and how the
stream's end is settled.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import icontract

from routeproof.core.classify import HealthEffect
from routeproof.core.types import BlockStop, MessageStop, StreamError, StreamEvent, ToolUseDelta, ToolUseStart

__all__ = [
    "MAX_TURN_RESTARTS",
    "Held",
    "Hold",
    "Settlement",
    "StreamEnd",
    "hold_back",
    "may_restart_turn",
    "settle_stream",
]

MAX_TURN_RESTARTS = 1
"""With ``restart_on_interrupt``, how many times an interrupted turn is retried from scratch."""


class StreamEnd(enum.Enum):
    """How a committed stream ended."""

    COMPLETED = "completed"  # MessageStop with usage
    INTERRUPTED = "interrupted"  # the provider dropped, garbled or stalled the stream
    DEADLINE = "deadline"  # the caller's deadline elapsed mid-stream
    ABANDONED = "abandoned"  # the caller stopped reading


@dataclass(frozen=True, slots=True, kw_only=True)
class Settlement:
    """What to book for the stream, and its effect on the provider's health."""

    booked_pico_usd: int
    health: HealthEffect


def _settle_stream(
    end: StreamEnd, reserved_pico_usd: int, usage_cost_pico_usd: int, reported_cost_pico_usd: int | None
) -> Settlement:
    # Only the provider's own failure counts against its health.
    health = {StreamEnd.COMPLETED: HealthEffect.SUCCESS, StreamEnd.INTERRUPTED: HealthEffect.FAILURE}.get(
        end, HealthEffect.NEUTRAL
    )
    if end is StreamEnd.COMPLETED:
        return Settlement(booked_pico_usd=usage_cost_pico_usd, health=health)
    if reported_cost_pico_usd is not None:
        # The provider reported its usage (Anthropic's message_delta, OpenAI's usage chunk) before the
        # cut: that is what it bills, so that is what is booked, not the worst case.
        return Settlement(booked_pico_usd=reported_cost_pico_usd, health=health)
    # The usage never arrived and the provider may bill what it generated: book the worst case that
    # was reserved for the call, never zero.
    return Settlement(booked_pico_usd=reserved_pico_usd, health=health)


@icontract.require(lambda reserved_pico_usd, usage_cost_pico_usd: reserved_pico_usd >= 0 and usage_cost_pico_usd >= 0)
@icontract.require(lambda reported_cost_pico_usd: reported_cost_pico_usd is None or reported_cost_pico_usd >= 0)
@icontract.ensure(
    lambda end, usage_cost_pico_usd, result: (
        end is not StreamEnd.COMPLETED or result.booked_pico_usd == usage_cost_pico_usd
    )
)
@icontract.ensure(
    lambda end, reported_cost_pico_usd, result: (
        end is StreamEnd.COMPLETED or reported_cost_pico_usd is None or result.booked_pico_usd == reported_cost_pico_usd
    ),
    "a stream cut after the provider reported its usage books that usage, not the worst case",
)
@icontract.ensure(
    lambda end, reserved_pico_usd, reported_cost_pico_usd, result: (
        end is StreamEnd.COMPLETED or reported_cost_pico_usd is not None or result.booked_pico_usd == reserved_pico_usd
    ),
    "a stream cut before its usage books the reserved worst case, not zero",
)
@icontract.ensure(lambda end, result: (result.health is HealthEffect.FAILURE) == (end is StreamEnd.INTERRUPTED))
def settle_stream(
    end: StreamEnd, *, reserved_pico_usd: int, usage_cost_pico_usd: int, reported_cost_pico_usd: int | None = None
) -> Settlement:
    """The settlement of a committed stream that ended as ``end``.

    ``usage_cost_pico_usd`` is the cost of a completed stream's usage; ``reported_cost_pico_usd`` the
    cost of a usage the provider reported before a stream that did not complete was cut (None: none
    arrived, or it could not be priced).
    """
    return _settle_stream(end, reserved_pico_usd, usage_cost_pico_usd, reported_cost_pico_usd)


def _may_restart_turn(restarts_done: int, now_ms: int, deadline_at_ms: int) -> bool:
    return restarts_done < MAX_TURN_RESTARTS and now_ms < deadline_at_ms


@icontract.require(lambda restarts_done: restarts_done >= 0)
@icontract.ensure(lambda restarts_done, result: not result or restarts_done < MAX_TURN_RESTARTS)
@icontract.ensure(lambda now_ms, deadline_at_ms, result: not result or now_ms < deadline_at_ms)
def may_restart_turn(restarts_done: int, now_ms: int, deadline_at_ms: int) -> bool:
    """Whether an interrupted turn may be retried from scratch: within the cap and the deadline."""
    return _may_restart_turn(restarts_done, now_ms, deadline_at_ms)


class Hold(enum.Enum):
    """What the relay does with one event of a committed stream (not its end event)."""

    EMIT = "emit"  # relay it now
    HOLD = "hold"  # keep it back (a tool block in progress, or the whole turn)
    RELEASE = "release"  # keep it back, then relay everything held: the tool block closed


@dataclass(frozen=True, slots=True, kw_only=True)
class Held:
    """The decision for one event, and whether a tool block is open after it."""

    hold: Hold
    in_tool: bool


def _hold_back(event: StreamEvent, in_tool: bool, whole_turn: bool) -> Held:
    if whole_turn:
        return Held(hold=Hold.HOLD, in_tool=in_tool)
    if isinstance(event, ToolUseStart):
        return Held(hold=Hold.HOLD, in_tool=True)
    if in_tool and isinstance(event, ToolUseDelta):
        return Held(hold=Hold.HOLD, in_tool=True)
    if in_tool and isinstance(event, BlockStop):
        return Held(hold=Hold.RELEASE, in_tool=False)
    return Held(hold=Hold.EMIT, in_tool=in_tool)


@icontract.require(
    lambda event: not isinstance(event, MessageStop | StreamError), "the end of a stream is settled, not held"
)
@icontract.ensure(lambda whole_turn, result: not whole_turn or result.hold is Hold.HOLD)
@icontract.ensure(
    lambda event, whole_turn, result: whole_turn or not isinstance(event, ToolUseStart) or result.hold is Hold.HOLD,
    "a tool call is never relayed before its block closes",
)
@icontract.ensure(lambda result: result.hold is not Hold.RELEASE or not result.in_tool)
@icontract.ensure(
    lambda event, in_tool, whole_turn, result: (
        whole_turn or not in_tool or not isinstance(event, ToolUseDelta) or result.hold is Hold.HOLD
    ),
    "partial tool JSON is held while its block is open",
)
def hold_back(event: StreamEvent, *, in_tool: bool, whole_turn: bool) -> Held:
    """Which events a committed stream holds back before relaying them.

    With ``whole_turn`` (``restart_on_interrupt``) every event is held until the MessageStop.
    Otherwise a tool-call block is held from its ``ToolUseStart`` until its ``BlockStop``, so a
    consumer never sees partial tool JSON from an interrupted stream; everything else is relayed.
    """
    return _hold_back(event, in_tool, whole_turn)
