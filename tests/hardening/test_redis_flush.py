"""The Redis ledger's queue of settlements written while Redis was down: flushed by one flusher, so
concurrent operations after Redis comes back neither lose a queued commit nor raise IndexError."""

from __future__ import annotations

import asyncio
import time

import pytest

from routeproof.core.ledger import BudgetLimits, Reservation
from routeproof.core.types import ProviderKind
from routeproof.ledger_store import Settled
from routeproof.ledger_store.redis_store import RedisLedgerStore
from tests.ledger_store.conftest import new_namespace
from tools.redis_server import RedisServer

pytestmark = [pytest.mark.asyncio, pytest.mark.redis]
COST = 1_000_000
QUEUED = 5


def _now_ms() -> int:
    return int(time.time() * 1000)


@pytest.mark.parametrize("queued", [1, QUEUED])
async def test_concurrent_flushes_after_a_restart_lose_no_commit(own_redis: RedisServer, queued: int) -> None:
    """Commits queued while Redis was down, then 8 operations at once after it is back: every queued
    commit is booked exactly once, nothing is left reserved, no IndexError (was: a lost commit or a 500)."""
    store = RedisLedgerStore(own_redis.url, BudgetLimits(), namespace=new_namespace())
    try:
        held: list[Reservation] = []
        for _ in range(queued):
            outcome = await store.try_reserve(
                session_id="s", provider=ProviderKind.OPENAI, amount_pico_usd=2 * COST, now_ms=_now_ms()
            )
            assert isinstance(outcome, Reservation)
            held.append(outcome)
        await asyncio.to_thread(own_redis.stop)
        settled = [await store.commit(r, COST, now_ms=_now_ms()) for r in held]
        assert settled == [Settled.QUEUED] * queued
        await asyncio.to_thread(own_redis.start)
        await asyncio.gather(*(store.totals(now_ms=_now_ms()) for _ in range(8)))
        totals = await store.totals(now_ms=_now_ms())
    finally:
        await store.aclose()
    assert totals.monthly.spent_pico_usd == queued * COST
    assert totals.monthly.reserved_pico_usd == 0
    assert totals.open_reservations == ()
