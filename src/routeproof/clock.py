"""Deadlines on time: long waits are split so the final wake-up is short.

On Linux an ``epoll_wait`` of T may return up to ~0.1 % of T late (the kernel's timer slack for a
normal task, capped at 100 ms): a 30 s attempt timer fires up to ~30 ms late before any work is
done. :func:`timeout_at` is ``asyncio.timeout_at`` plus a no-op waypoint :data:`LAST_LEG_S` before
the deadline: the loop wakes there (a little late, harmlessly), and the last wait is short, so its
slack is at most ~0.1 % of :data:`LAST_LEG_S`.

This is also the one place where the kernel's instants (integer milliseconds on the loop's clock)
become loop times and back: :func:`loop_ms` and :func:`deadline_ms` into the kernel, :func:`loop_s`
out of it (used by :func:`timeout_at_ms` and :func:`sleep_until`, trio's ``move_on_at`` /
``sleep_until``: one absolute instant, no remaining-seconds arithmetic).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable
from contextvars import ContextVar, Token
from types import TracebackType

__all__ = [
    "LAST_LEG_S",
    "PreciseTimeout",
    "attempt_bound",
    "deadline_ms",
    "loop_ms",
    "loop_now_ms",
    "loop_s",
    "ms_of_s",
    "s_of_ms",
    "sleep_until",
    "timeout_at",
    "timeout_at_ms",
    "wall_ms",
    "waypoint",
]

LAST_LEG_S = 0.2
"""The final wait before a deadline: its timer slack is at most ~0.2 ms."""


def _wake() -> None:
    """Nothing: the loop only has to wake so that its next wait is short."""


def waypoint(loop: asyncio.AbstractEventLoop, when: float) -> asyncio.TimerHandle | None:
    """Schedule the waypoint for a wait ending at ``when`` (None if the wait is short already)."""
    if when - loop.time() <= 2 * LAST_LEG_S:
        return None
    return loop.call_at(when - LAST_LEG_S, _wake)


class PreciseTimeout:
    """``async with timeout_at(when):`` -- ``asyncio.timeout_at`` whose final wake-up is short.

    A long wait starts one timer, not two: the waypoint's, which arms the deadline's own (then a
    short wait) when it fires. Most attempts end long before their waypoint, so the deadline's timer
    is never made (one timer per attempt; issue 25).

    The expiry is ``asyncio.Timeout``'s (Python 3.11's ``asyncio/timeouts.py``), written out here
    rather than wrapped: at the deadline the task is cancelled, and leaving the block turns that
    cancellation (and no other: ``uncancel`` counts them) into ``TimeoutError``. Wrapping it cost a
    Timeout, its entry and exit and its reschedule on every attempt (issue 25).

    Entering and leaving await nothing, so the block is also a plain ``with`` (the driver's, per
    attempt: no coroutine to enter or leave it). ``bounds_attempt``: the block also declares, while it
    runs, that it bounds the attempt run inside it (:func:`attempt_bound`): an attempt's one timer
    and its declaration, one object (issue 25).
    """

    __slots__ = ("_bound", "_bounds_attempt", "_cancelling", "_expired", "_handle", "_task", "when")

    def __init__(self, when: float, *, bounds_attempt: bool = False) -> None:
        self.when = when  # the deadline, in loop time (seconds); an attribute, not a property: read per attempt
        self._handle: asyncio.TimerHandle | asyncio.Handle | None = None
        self._task: asyncio.Task[object] | None = None
        self._cancelling = 0
        self._expired = False
        self._bounds_attempt = bounds_attempt
        self._bound: Token[float | None] | None = None  # the declaration made on entry, undone on exit

    def _arm(self) -> None:
        _wake()
        self._handle = _at(asyncio.get_running_loop(), self.when, self._on_timeout)

    def _on_timeout(self) -> None:
        assert self._task is not None  # entered before any timer was scheduled
        self._task.cancel()
        self._expired = True
        self._handle = None

    def __enter__(self) -> PreciseTimeout:
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("Timeout should be used inside a task")
        self._task = task
        self._cancelling = task.cancelling()
        loop = asyncio.get_running_loop()
        if self.when - loop.time() <= 2 * LAST_LEG_S:  # short already: the deadline's own timer
            self._handle = _at(loop, self.when, self._on_timeout)
        else:  # the deadline's timer is armed at the waypoint (_arm)
            self._handle = loop.call_at(self.when - LAST_LEG_S, self._arm)
        if self._bounds_attempt:
            self._bound = _ATTEMPT_BOUND.set(self.when)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._bound is not None:  # declared on entry: undone first, as an inner block's would be
            _ATTEMPT_BOUND.reset(self._bound)
        if self._handle is not None:
            self._handle.cancel()
        if self._expired:
            assert self._task is not None  # set on entry
            if self._task.uncancel() <= self._cancelling and exc_type is asyncio.CancelledError:
                raise TimeoutError from exc  # no other cancellation is pending: it was ours

    async def __aenter__(self) -> PreciseTimeout:
        return self.__enter__()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.__exit__(exc_type, exc, tb)


def _at(
    loop: asyncio.AbstractEventLoop, when: float, callback: Callable[[], None]
) -> asyncio.TimerHandle | asyncio.Handle:
    """``callback`` at loop time ``when``, or soon if that has passed (as ``Timeout.reschedule`` does)."""
    if when <= loop.time():
        return loop.call_soon(callback)
    return loop.call_at(when, callback)


def timeout_at(when: float) -> PreciseTimeout:
    """Like ``asyncio.timeout_at(when)`` (raises ``TimeoutError``), split so it fires on time."""
    return PreciseTimeout(when)


def loop_ms(loop_time_s: float) -> int:
    """A loop instant as the kernel's integer milliseconds (rounded: exact durations stay exact)."""
    return round(loop_time_s * 1000)


def loop_now_ms(loop: asyncio.AbstractEventLoop) -> int:
    """``loop``'s now as the kernel's integer milliseconds: :func:`loop_ms` of ``loop.time()``, in one
    call (a call's clock, read about five times per routed call; issue 25)."""
    return round(loop.time() * 1000)


def deadline_ms(loop_time_s: float) -> int:
    """The caller's deadline in milliseconds, floored: with ``now`` rounded, ``now_ms < deadline_ms``
    still implies the real now is before the real deadline, so no call starts after it."""
    return math.floor(loop_time_s * 1000)


def loop_s(at_ms: int) -> float:
    """A kernel instant (integer ms on the loop's clock) as a loop time in seconds."""
    return at_ms / 1000


def ms_of_s(seconds: float) -> int:
    """A duration in seconds as whole milliseconds, floored (never longer than asked)."""
    return math.floor(seconds * 1000)


def s_of_ms(duration_ms: int) -> float:
    """A duration in milliseconds as seconds (asyncio's unit)."""
    return duration_ms / 1000


def wall_ms(wall_s: float) -> int:
    """A wall-clock reading (``time.time()``, epoch seconds) as integer epoch milliseconds, floored."""
    return int(wall_s * 1000)


def timeout_at_ms(at_ms: int) -> PreciseTimeout:
    """An attempt's :func:`timeout_at` for the kernel instant ``at_ms`` (a ``CallProvider.timeout_at_ms``),
    declaring for its block that it bounds the attempt (:func:`attempt_bound`)."""
    return PreciseTimeout(at_ms / 1000, bounds_attempt=True)  # loop_s(at_ms), without its call: per attempt


async def sleep_until(at_ms: int) -> None:
    """Sleep until the kernel instant ``at_ms`` (a ``Sleep.sleep_until_ms``); at once if it passed."""
    loop = asyncio.get_running_loop()
    await asyncio.sleep(max(0.0, loop_s(at_ms) - loop.time()))


_ATTEMPT_BOUND: ContextVar[float | None] = ContextVar("routeproof_attempt_bound", default=None)


def attempt_bound() -> float | None:
    """The loop time by which the router's driver cancels the attempt running in this task, or None
    outside one (a provider used on its own): a built-in provider whose own ``timeout_at`` is not
    earlier needs no timer of its own (one timer per attempt, not two; issue 25)."""
    return _ATTEMPT_BOUND.get()
