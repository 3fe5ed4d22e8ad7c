"""Two processes call on one Redis ledger while Redis is stopped and restarted: no call fails with
anything but LedgerUnavailable (no 500), no commit is lost, and the totals are exact."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from routeproof.core.ledger import BudgetLimits
from routeproof.ledger_store.redis_store import RedisLedgerStore
from tests.hardening.restart_worker import LEASE_MS
from tests.ledger_store.conftest import new_namespace
from tests.ledger_store.worker import COST_PICO_USD, WORST_PICO_USD
from tools.redis_server import RedisServer

pytestmark = [pytest.mark.asyncio, pytest.mark.redis]
ROOT = Path(__file__).resolve().parents[2]
RUN_S = 6.0


async def test_two_processes_through_a_redis_restart_lose_no_commit(own_redis: RedisServer) -> None:
    """Redis stops 1.5 s into a 6 s run of two 20-caller processes and is back 1 s later: every answered
    call is booked exactly once; the only extra spend is whole worst cases of reservations whose reply
    was lost (held until their lease, as the crash rule says); nothing stays reserved."""
    namespace = new_namespace()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    args = [sys.executable, "-m", "tests.hardening.restart_worker", own_redis.url, namespace, str(RUN_S)]
    workers = [await asyncio.create_subprocess_exec(*args, cwd=ROOT, env=env, stdout=subprocess.PIPE) for _ in range(2)]
    async with asyncio.timeout(120):
        for worker in workers:  # both are calling from here on
            assert worker.stdout is not None
            assert (await worker.stdout.readline()).strip() == b"ready"
        await asyncio.sleep(1.5)
        await asyncio.to_thread(own_redis.stop)
        await asyncio.sleep(1.0)
        await asyncio.to_thread(own_redis.start)
        outputs = [(await worker.communicate())[0] for worker in workers]
    counts = [json.loads(out) for out in outputs]
    await asyncio.sleep(LEASE_MS / 1000 + 0.5)  # leases of lost replies end: the crash rule books them
    store = RedisLedgerStore(own_redis.url, BudgetLimits(), namespace=namespace)
    try:
        totals = await store.totals(now_ms=int(time.time() * 1000))
    finally:
        await store.aclose()
    answered = sum(int(c["ok"]) for c in counts)
    refused = sum(int(c["unavailable"]) for c in counts)
    extra = totals.monthly.spent_pico_usd - answered * COST_PICO_USD
    print(f"\nredis restart: answered={answered} refused_503={refused} other={[c['other'] for c in counts]} "
          f"spent={totals.monthly.spent_pico_usd} expected={answered * COST_PICO_USD} "
          f"lost_reply_worst_cases={extra / WORST_PICO_USD:.2f} "
          f"reserved={totals.monthly.reserved_pico_usd}")  # fmt: skip
    assert all(c["other"] == [] for c in counts)
    assert answered > 0
    assert refused > 0  # Redis really was down during the run
    assert extra >= 0  # no commit lost
    assert extra % WORST_PICO_USD == 0  # only whole worst cases of lost-reply reservations on top
    assert totals.monthly.reserved_pico_usd == 0
    assert totals.open_reservations == ()
