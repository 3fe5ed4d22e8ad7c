"""The caller's deadline: an absolute instant on the running event loop's clock, in seconds.

``Router.call_provider(..., deadline, ...)`` takes ``loop.time()``-based instants (monotonic), not
``time.time()`` (wall clock). :func:`deadline_in` makes "N seconds from now" on the right clock;
:func:`check_deadline` refuses values that cannot be a deadline on that clock, with an explanation,
as plain code (it stays under ``python -O``).
"""

from __future__ import annotations

import asyncio
import math

__all__ = ["MAX_DEADLINE_AHEAD_S", "check_deadline", "deadline_in"]

MAX_DEADLINE_AHEAD_S = 86_400.0
"""A deadline further ahead than a day is on another clock (``time.time()`` is ~1.7e9 s; the loop's
clock counts from boot or, under looptime, from 0). Every call ends within 30 s anyway."""


def deadline_in(seconds: float) -> float:
    """The instant ``seconds`` from now on the running loop's clock: the deadline to pass to a call.

    Call it inside the coroutine that makes the call (it reads ``asyncio.get_running_loop()``).
    """
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not math.isfinite(seconds):
        raise ValueError(f"deadline_in(seconds): seconds must be a finite number, got {seconds!r}")
    if seconds < 0:
        raise ValueError(f"deadline_in(seconds): seconds must be >= 0, got {seconds!r}")
    return asyncio.get_running_loop().time() + seconds


def check_deadline(deadline: object, now_s: float) -> float:
    """``deadline`` if it can be an instant on the loop clock whose now is ``now_s``; else ValueError.

    A deadline in the past is allowed (the call fails with DeadlineExceeded, as the contract says);
    one more than :data:`MAX_DEADLINE_AHEAD_S` ahead is refused as a wall-clock value.
    """
    if isinstance(deadline, bool) or not isinstance(deadline, int | float):
        raise ValueError(
            f"deadline must be a number of seconds on the event loop's clock, got {deadline!r}; "
            "use routeproof.deadline_in(seconds)"
        )
    if not math.isfinite(deadline):
        raise ValueError(f"deadline must be finite, got {deadline!r}; use routeproof.deadline_in(seconds)")
    ahead_s = deadline - now_s
    if ahead_s > MAX_DEADLINE_AHEAD_S:
        raise ValueError(
            f"deadline={deadline!r} is {ahead_s:.0f} s ahead of the event loop's clock (now {now_s:.3f}): "
            "it looks like a wall-clock time.time() value. Deadlines are asyncio loop.time() instants; "
            "use routeproof.deadline_in(seconds)"
        )
    return float(deadline)


def past_deadline_hint(deadline: float, now_s: float) -> str:
    """What to say when a call's deadline had already passed when it began (often a relative value)."""
    return (
        f"the deadline {deadline!r} was already {now_s - deadline:.3f} s in the past when the call began "
        f"(loop time {now_s:.3f}); a deadline is an absolute loop.time() instant, not a duration: "
        f"for {deadline!r} seconds from now use routeproof.deadline_in({deadline!r})"
    )
