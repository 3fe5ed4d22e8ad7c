"""What happens after a streamed answer is committed: what it costs, what it says about the
provider's health, and whether the turn may be retried from scratch.

Up to the first token a streaming call is decided by the kernel like any call. After it the call
is committed to one provider, and these rules decide how the stream's end is settled.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import icontract

from routeproof.core.classify import HealthEffect

__all__ = ["MAX_TURN_RESTARTS", "Settlement", "StreamEnd", "may_restart_turn", "settle_stream"]

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


def _settle_stream(end: StreamEnd, reserved_pico_usd: int, usage_cost_pico_usd: int) -> Settlement:
    if end is StreamEnd.COMPLETED:
        return Settlement(booked_pico_usd=usage_cost_pico_usd, health=HealthEffect.SUCCESS)
    # The usage never arrived and the provider may bill what it generated: book the worst case that
    # was reserved for the call, never zero. Only the provider's own failure counts against it.
    health = HealthEffect.FAILURE if end is StreamEnd.INTERRUPTED else HealthEffect.NEUTRAL
    return Settlement(booked_pico_usd=reserved_pico_usd, health=health)


@icontract.require(lambda reserved_pico_usd, usage_cost_pico_usd: reserved_pico_usd >= 0 and usage_cost_pico_usd >= 0)
@icontract.ensure(
    lambda end, usage_cost_pico_usd, result: (
        end is not StreamEnd.COMPLETED or result.booked_pico_usd == usage_cost_pico_usd
    )
)
@icontract.ensure(
    lambda end, reserved_pico_usd, result: end is StreamEnd.COMPLETED or result.booked_pico_usd == reserved_pico_usd,
    "a stream cut before its usage books the reserved worst case, not zero",
)
@icontract.ensure(lambda end, result: (result.health is HealthEffect.FAILURE) == (end is StreamEnd.INTERRUPTED))
def settle_stream(end: StreamEnd, *, reserved_pico_usd: int, usage_cost_pico_usd: int) -> Settlement:
    """The settlement of a committed stream that ended as ``end``."""
    return _settle_stream(end, reserved_pico_usd, usage_cost_pico_usd)


def _may_restart_turn(restarts_done: int, now_ms: int, deadline_at_ms: int) -> bool:
    return restarts_done < MAX_TURN_RESTARTS and now_ms < deadline_at_ms


@icontract.require(lambda restarts_done: restarts_done >= 0)
@icontract.ensure(lambda restarts_done, result: not result or restarts_done < MAX_TURN_RESTARTS)
@icontract.ensure(lambda now_ms, deadline_at_ms, result: not result or now_ms < deadline_at_ms)
def may_restart_turn(restarts_done: int, now_ms: int, deadline_at_ms: int) -> bool:
    """Whether an interrupted turn may be retried from scratch: within the cap and the deadline."""
    return _may_restart_turn(restarts_done, now_ms, deadline_at_ms)
