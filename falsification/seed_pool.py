"""Run a virtual-time row's pre-registered seeds several at once, and read them in seed order.

A statistical row (H0-LATENCY, LATENCY-SLA, FALSIFY-MPA-007's large-N run) simulates one seed after
another until its sequential test decides. Each seed is CPU-bound Python on a virtual clock, so one
process used one of the machine's cores. Here each seed runs in a spawned process of its own
(``WORKERS`` at once), on a virtual-time loop of its own that starts at 0, and the results come back in
seed order, so the test stops at the seed where a single process would have stopped.

A seed's result is then a function of its number alone. When every seed shared the test's one loop,
a seed started at the virtual time the seeds before it had used; its timers were rounded to the
microsecond from that point, and its figures moved slightly with it.

Every worker checks that icontract enforces (it imports ``routeproof`` as the test's process does, with
the same flags); a worker where it did not fails the row. Leaving :func:`seed_pool` terminates the
workers: a seed still running past the stopping one is not waited for.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import multiprocessing.pool
import os
from collections import deque
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable, Iterator
from contextlib import contextmanager
from functools import partial
from itertools import islice
from typing import Any, Generic, TypeVar

import looptime

__all__ = ["WORKERS", "SeedPool", "seed_pool"]

T = TypeVar("T")


def _workers(value: str) -> int:
    """``ROUTEPROOF_SEED_WORKERS`` as a pool size (a whole number >= 1), or an error naming it."""
    if not value.strip().isdigit() or int(value) < 1:
        raise ValueError(f"ROUTEPROOF_SEED_WORKERS must be a whole number >= 1, got {value!r}")
    return int(value)


# the gate's machine has two cores and falsify runs alone in its tox env; teeth, which runs two rows at
# once already, sets ROUTEPROOF_SEED_WORKERS=1 so that two rows do not start four busy processes
WORKERS = _workers(os.environ.get("ROUTEPROOF_SEED_WORKERS", "2"))


def _on_virtual_time(
    run: Callable[..., Coroutine[Any, Any, T]], args: tuple[Any, ...], end: float, noop_cycles: int
) -> tuple[T, bool]:
    """In a worker: ``run(*args)`` on a fresh virtual-time loop; also whether icontract enforced here."""
    from falsification.conftest import icontract_enforcing

    with asyncio.Runner(loop_factory=partial(looptime.new_event_loop, end=end, noop_cycles=noop_cycles)) as runner:
        result = runner.run(run(*args))
    return result, icontract_enforcing()


class SeedPool(Generic[T]):
    """Jobs of one row in worker processes, each a future of the test's running loop."""

    def __init__(self, pool: multiprocessing.pool.Pool, *, workers: int, end: float, noop_cycles: int) -> None:
        self._pool = pool
        self._workers = workers
        self._end = end
        self._noop_cycles = noop_cycles
        self._futures: list[asyncio.Future[T]] = []

    def submit(self, run: Callable[..., Coroutine[Any, Any, T]], *args: Any) -> asyncio.Future[T]:
        """``run(*args)`` in a worker; ``run`` and ``args`` must pickle (a module-level coroutine function)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()

        def settle(outcome: tuple[T, bool] | BaseException) -> None:  # called in the pool's result thread
            def set_it() -> None:
                if future.done():  # cancelled on the way out
                    return
                if isinstance(outcome, BaseException):
                    future.set_exception(outcome)
                elif not outcome[1]:
                    future.set_exception(AssertionError(f"icontract was off in the worker that ran {run.__name__}"))
                else:
                    future.set_result(outcome[0])

            loop.call_soon_threadsafe(set_it)

        work = (run, args, self._end, self._noop_cycles)
        self._pool.apply_async(_on_virtual_time, work, callback=settle, error_callback=settle)
        self._futures.append(future)
        return future

    async def in_order(
        self, run: Callable[[int], Coroutine[Any, Any, T]], seeds: Iterable[int], *, stop: Callable[[], bool]
    ) -> AsyncIterator[tuple[int, T]]:
        """``(seed, run(seed))`` in seed order, ``WORKERS`` seeds in flight, until ``stop()`` holds after one
        (checked before the next seed is started and before the next result is read) or the seeds run out."""
        order = iter(seeds)
        running = deque((seed, self.submit(run, seed)) for seed in islice(order, self._workers))
        while running and not stop():
            seed, result = running.popleft()
            yield seed, await result
            if not stop() and (following := next(order, None)) is not None:
                running.append((following, self.submit(run, following)))

    def settle(self) -> None:
        """Cancel what was not read, and read what failed unread (no "exception was never retrieved")."""
        for future in self._futures:
            if not future.cancel() and not future.cancelled():
                future.exception()


@contextmanager
def seed_pool(*, end: float, noop_cycles: int = 42, workers: int = WORKERS) -> Iterator[SeedPool[Any]]:
    """A :class:`SeedPool` of ``workers`` spawned processes (no fork of a pytest process that may hold
    threads), each job on ``looptime.new_event_loop(end=end, noop_cycles=noop_cycles)``, as the row's
    ``looptime`` mark set them when it ran on the test's loop."""
    with multiprocessing.get_context("spawn").Pool(workers) as pool:
        seeds: SeedPool[Any] = SeedPool(pool, workers=workers, end=end, noop_cycles=noop_cycles)
        try:
            yield seeds
        finally:
            seeds.settle()
