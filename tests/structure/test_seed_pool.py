"""falsification.seed_pool: a row's seeds in worker processes, read in seed order, each on a virtual
clock of its own that starts at 0, stopping where the row's test decides, contracts checked there."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time

import pytest

import falsification.conftest
import falsification.seed_pool as seed_pool_module
from falsification.seed_pool import seed_pool

STEP_S = 1000.0  # virtual seconds per seed number: a real sleep of this would time the test out


async def _clock(seed: int) -> tuple[float, float]:
    """Where this seed's loop started, and where it stood after a virtual sleep of ``seed * STEP_S``."""
    loop = asyncio.get_running_loop()
    start = loop.time()
    await asyncio.sleep(seed * STEP_S)
    return start, loop.time()


async def _fails(seed: int) -> int:
    raise ValueError(f"seed {seed} failed")


async def _contracts_off(seed: int) -> int:
    """What the CrossHair backend does to a process, by hand: icontract no longer enforces in this worker."""
    falsification.conftest._needs_positive = lambda x: x  # the check's own probe
    return seed


@pytest.mark.asyncio
async def test_seeds_come_back_in_order_each_from_virtual_time_zero_and_stop_where_asked() -> None:
    read: list[int] = []
    with seed_pool(end=100_000, workers=2) as pool:
        async for seed, (start, end) in pool.in_order(_clock, range(5, 0, -1), stop=lambda: len(read) == 3):
            read.append(seed)
            assert start == 0.0, f"seed {seed} started at virtual {start} s, not 0: it depends on other seeds"
            assert end == pytest.approx(seed * STEP_S)
    assert read == [5, 4, 3]  # the larger seeds took longer, and still came first; none past the stop


async def _slow(seed: int) -> int:
    time.sleep(seed)  # noqa: ASYNC251  # real seconds, blocking this worker: still running when the row fails
    return seed


@pytest.mark.asyncio
async def test_a_failing_seed_fails_the_row_and_leaves_no_job_pending() -> None:
    with pytest.raises(ValueError, match="seed 1 failed"), seed_pool(end=100, workers=2) as pool:  # noqa: PT012  # the block is the row
        running = pool.submit(_slow, 30)
        async for _ in pool.in_order(_fails, [1], stop=lambda: False):
            pass
    assert running.cancelled()  # not left pending, and the pool did not wait 30 s for it


@pytest.mark.asyncio
async def test_a_worker_where_icontract_is_off_fails_the_row() -> None:
    with (
        seed_pool(end=100, workers=2) as pool,
        pytest.raises(AssertionError, match="icontract was off in the worker that ran _contracts_off"),
    ):
        await pool.submit(_contracts_off, 1)


def test_the_number_of_workers_comes_from_the_environment() -> None:
    """teeth runs falsify's rows two at once and asks each for one worker (ROUTEPROOF_SEED_WORKERS=1)."""
    probe = "import falsification.seed_pool as pool; print(pool.WORKERS)"
    for value, expected in (("1", "1"), (None, "2")):
        env = {k: v for k, v in os.environ.items() if k != "ROUTEPROOF_SEED_WORKERS"}
        if value is not None:
            env["ROUTEPROOF_SEED_WORKERS"] = value
        done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
        assert done.stdout.strip() == expected


@pytest.mark.parametrize("value", ["0", "two", "-1", ""])
def test_a_bad_number_of_workers_is_refused_naming_the_variable(value: str) -> None:
    with pytest.raises(ValueError, match=f"ROUTEPROOF_SEED_WORKERS must be a whole number >= 1, got {value!r}"):
        seed_pool_module._workers(value)
