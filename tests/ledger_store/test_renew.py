"""Lease renewal: a reservation whose lease is renewed stays open past its first lease (a stream longer
than ``lease_s`` is booked at its real cost, not its worst case); without renewal it expires; a
renewal after expiry says so. Run against every store (Redis: a real server)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from routeproof.core.ledger import BudgetLimits, Reservation
from routeproof.core.types import ProviderKind
from routeproof.ledger_store import LedgerStore, MemoryLedgerStore, Settled, SqliteLedgerStore
from tests.ledger_store.conftest import new_namespace
from tools.redis_server import RedisServer

pytestmark = [pytest.mark.asyncio, pytest.mark.looptime(False)]

LEASE_MS = 1_000
T0_MS = 1_790_000_000_000  # a Unix instant (periods follow it); the stores read no clock
WORST, ACTUAL = 9_000, 1_234
LIMITS = BudgetLimits(session_limit_pico_usd=100_000)


@pytest_asyncio.fixture(params=["memory", "sqlite", pytest.param("redis", marks=pytest.mark.redis)])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[LedgerStore]:
    """A fresh store of each backend with a 1 s lease."""
    made: LedgerStore
    if request.param == "memory":
        made = MemoryLedgerStore(LIMITS, lease_ms=LEASE_MS)
    elif request.param == "sqlite":
        made = SqliteLedgerStore(tmp_path / "ledger.sqlite3", LIMITS, lease_ms=LEASE_MS)
    else:
        from routeproof.ledger_store.redis_store import RedisLedgerStore

        server: RedisServer = request.getfixturevalue("redis_server")
        made = RedisLedgerStore(server.url, LIMITS, namespace=new_namespace(), lease_ms=LEASE_MS)
    yield made
    await made.aclose()


async def _reserve(store: LedgerStore) -> Reservation:
    held = await store.try_reserve(session_id="s", provider=ProviderKind.OPENAI, amount_pico_usd=WORST, now_ms=T0_MS)
    assert isinstance(held, Reservation)
    return held


async def test_a_renewed_stream_outlives_its_first_lease_and_is_booked_at_its_real_cost(store: LedgerStore) -> None:
    """Renewed every 0.8 s, a 3 s stream keeps its reservation open and commits its real cost."""
    held = await _reserve(store)
    for tick_ms in range(800, 3_000, 800):
        assert await store.renew(held, now_ms=T0_MS + tick_ms)
    totals = await store.totals(now_ms=T0_MS + 3_000)
    assert [r.reservation_id for r in totals.open_reservations] == [held.reservation_id]
    assert await store.commit(held, ACTUAL, now_ms=T0_MS + 3_000) is Settled.BOOKED
    assert (await store.totals(now_ms=T0_MS + 3_000)).monthly.spent_pico_usd == ACTUAL


async def test_without_renewal_the_lease_ends_and_renewing_then_is_refused(store: LedgerStore) -> None:
    """Not renewed, the reservation expires at its lease (worst case booked); a late renewal returns
    False and changes nothing."""
    held = await _reserve(store)
    assert not await store.renew(held, now_ms=T0_MS + LEASE_MS)
    totals = await store.totals(now_ms=T0_MS + LEASE_MS)
    assert totals.open_reservations == ()
    assert totals.monthly.spent_pico_usd == WORST
    assert await store.commit(held, ACTUAL, now_ms=T0_MS + LEASE_MS + 1) is Settled.EXPIRED
