"""The classic failures of shared budgets, against real processes, one real SQLite file and a real Redis.

* 4 processes x 20 calls in flight against one $0.01 budget: the store, sampled every millisecond,
  never shows spend (or spend + reserved) past the budget, and the next call is refused;
* ``kill -9`` of a process holding reservations: they stay held until the lease ends, then the
  crash rule books their worst case; the committed spend is intact;
* a restart (Redis stopped and started, or a new process on the SQLite file) keeps the totals;
* Redis stopped mid-call: the call in flight keeps its answer (its commit is queued), the next call
  fails closed with a clear LedgerUnavailable and reaches no provider, and calls work again once Redis
  is back, with the queued commit booked.

Real processes and sockets, so real time: every wait here is bounded.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from routeproof.core.ledger import Account, BudgetLimits, BudgetRefusal, Reservation
from routeproof.core.types import ProviderKind
from routeproof.ledger_store import LedgerStore, LedgerTotals, LedgerUnavailable, Settled, SqliteLedgerStore
from tests.ledger_store.conftest import new_namespace
from tests.ledger_store.shared_budget import run_shared_budget
from tests.ledger_store.worker import (
    ANSWER,
    BUDGET_PICO_USD,
    COST_PICO_USD,
    SESSION,
    WORST_PICO_USD,
    call,
    open_store,
    router_on,
)
from tools.redis_server import RedisServer

pytestmark = pytest.mark.asyncio

ROOT = Path(__file__).resolve().parents[2]
PROCESSES = 4
IN_FLIGHT = 20
RUN_TIMEOUT_S = 180


def _now_ms() -> int:
    return int(time.time() * 1000)


def _spec(backend: str, tmp_path: Path, request: pytest.FixtureRequest, lease_ms: int) -> str:
    if backend == "sqlite":
        return f"sqlite:{tmp_path / 'ledger.sqlite3'}:{lease_ms}"
    server: RedisServer = request.getfixturevalue("redis_server")
    return f"redis:{lease_ms}:{new_namespace()}:{server.url}"


def _worker(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.ledger_store.worker", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen[str]]]:
    """Worker processes started by a test; any still running at its end are killed."""
    started: list[subprocess.Popen[str]] = []
    yield started
    for process in started:
        if process.poll() is None:
            process.kill()
        process.communicate(timeout=30)


def _session(totals: LedgerTotals) -> Account:
    return dict(totals.sessions).get(SESSION, Account())


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("redis", marks=pytest.mark.redis)])
async def test_four_processes_with_twenty_calls_in_flight_never_pass_one_budget(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """4 processes x 20 calls in flight on one $0.01 budget: no 1 ms sample passes it; the next call is refused."""
    spec = _spec(backend, tmp_path, request, lease_ms=300_000)
    seen = await run_shared_budget(spec, processes=PROCESSES, in_flight=IN_FLIGHT)
    print(f"{backend}: {seen}")
    assert seen.samples > 10
    assert seen.peak_spent_pico_usd <= BUDGET_PICO_USD
    assert seen.peak_held_pico_usd <= BUDGET_PICO_USD
    assert seen.refused == PROCESSES * IN_FLIGHT  # every caller ended refused, none failed
    assert _session(seen.final) == Account(spent_pico_usd=seen.granted * COST_PICO_USD, reserved_pico_usd=0)
    assert BUDGET_PICO_USD - seen.final.monthly.spent_pico_usd < WORST_PICO_USD  # stopped only when full
    assert seen.next_call is not None
    assert seen.next_call.scope == "session"


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("redis", marks=pytest.mark.redis)])
async def test_kill_9_with_reservations_held_books_them_when_the_lease_ends(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest, processes: list[subprocess.Popen[str]]
) -> None:
    """kill -9 of a process holding 5 reservations: held until the lease ends, then booked at their worst case."""
    lease_ms = 60_000
    spec = _spec(backend, tmp_path, request, lease_ms=lease_ms)
    committed, held = 3, 5

    async def run() -> None:
        store = open_store(spec)
        await store.totals(now_ms=_now_ms())
        processes.append(_worker("hold", spec, str(committed), str(held)))
        deadline = time.monotonic() + 60
        while len((await store.totals(now_ms=_now_ms())).open_reservations) < held:
            assert processes[0].poll() is None, processes[0].communicate()[1]
            assert time.monotonic() < deadline, "the worker never held its reservations"
            await asyncio.sleep(0.01)
        os.kill(processes[0].pid, signal.SIGKILL)
        processes[0].wait(timeout=30)
        killed_at_ms = _now_ms()
        before = await store.totals(now_ms=killed_at_ms)
        assert _session(before) == Account(
            spent_pico_usd=committed * COST_PICO_USD, reserved_pico_usd=held * WORST_PICO_USD
        )
        # the lease has not ended: nothing moves (the clock is passed in, so no one waits a minute)
        still = await store.totals(now_ms=killed_at_ms + 1_000)
        assert len(still.open_reservations) == held
        after = await store.totals(now_ms=killed_at_ms + lease_ms + 1)
        assert after.open_reservations == ()
        assert _session(after) == Account(
            spent_pico_usd=committed * COST_PICO_USD + held * WORST_PICO_USD, reserved_pico_usd=0
        )
        await store.aclose()

    await run()


async def _spend_some(store: LedgerStore, calls: int) -> LedgerTotals:
    router = router_on(store, httpx.MockTransport(lambda _: httpx.Response(200, json=ANSWER)))
    for _ in range(calls):
        await call(router)
    totals = await store.totals(now_ms=_now_ms())
    await router.aclose()
    return totals


async def test_sqlite_totals_survive_a_restart(tmp_path: Path) -> None:
    """Spend booked by one process is there, to the pico-USD, when a new store opens the file."""
    spec = f"sqlite:{tmp_path / 'ledger.sqlite3'}:300000"
    first = await _spend_some(open_store(spec), 7)

    async def reopen() -> LedgerTotals:
        store = open_store(spec)
        try:
            return await store.totals(now_ms=_now_ms())
        finally:
            await store.aclose()

    again = await reopen()
    assert again == first
    assert _session(again).spent_pico_usd == 7 * COST_PICO_USD


@pytest.mark.redis
async def test_redis_totals_survive_a_redis_restart(own_redis: RedisServer) -> None:
    """Spend booked in Redis is there after redis-server is stopped and started (append-only file on)."""
    spec = f"redis:300000:{new_namespace()}:{own_redis.url}"
    first = await _spend_some(open_store(spec), 7)
    own_redis.stop()
    own_redis.start()

    async def reopen() -> LedgerTotals:
        store = open_store(spec)
        try:
            return await store.totals(now_ms=_now_ms())
        finally:
            await store.aclose()

    assert await reopen() == first


@pytest.mark.redis
async def test_redis_down_mid_call_fails_closed_and_recovers(own_redis: RedisServer) -> None:
    """Redis stopped mid-call: that call keeps its answer, the next is refused with LedgerUnavailable
    before any provider is called, and once Redis is back calls work and the queued commit is booked."""
    spec = f"redis:300000:{new_namespace()}:{own_redis.url}"
    sent: list[str] = []
    stop_redis_in_call = [True]

    async def answer(request: httpx.Request) -> httpx.Response:
        sent.append(str(request.url))
        if stop_redis_in_call[0]:
            stop_redis_in_call[0] = False
            await asyncio.to_thread(own_redis.stop)
        return httpx.Response(200, json=ANSWER)

    async def run() -> None:
        store = open_store(spec)
        router = router_on(store, httpx.MockTransport(answer))
        async with router:
            await call(router)  # Redis dies while the provider answers: the answer still comes back
            assert len(sent) == 1
            with pytest.raises(LedgerUnavailable) as refused:
                await call(router)
            assert len(sent) == 1  # fail closed: no provider call without a reservation
            message = str(refused.value)
            assert own_redis.url in message
            assert "unreachable" in message
            await asyncio.to_thread(own_redis.start)
            await call(router)
            assert len(sent) == 2
            totals = await store.totals(now_ms=_now_ms())
            assert _session(totals) == Account(spent_pico_usd=2 * COST_PICO_USD, reserved_pico_usd=0)

    await run()


async def test_a_cancelled_reservation_is_released_not_leaked(tmp_path: Path) -> None:
    """A caller cancelled while its SQLite reservation is being written leaves nothing reserved."""

    async def run() -> None:
        store = open_store(f"sqlite:{tmp_path / 'ledger.sqlite3'}:300000")
        await store.totals(now_ms=_now_ms())
        task = asyncio.create_task(
            store.try_reserve(session_id=SESSION, provider=ProviderKind.OPENAI, amount_pico_usd=5, now_ms=_now_ms())
        )
        await asyncio.sleep(0)  # the transaction is now running in its thread
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await store.aclose()  # waits for the transaction and the release it triggers
        reopened = open_store(f"sqlite:{tmp_path / 'ledger.sqlite3'}:300000")
        totals = await reopened.totals(now_ms=_now_ms())
        await reopened.aclose()
        assert totals.open_reservations == ()
        assert totals.monthly == Account()

    await run()


@pytest.mark.asyncio
async def test_sqlite_locked_fails_closed_and_queues_the_settlement(tmp_path: Path) -> None:
    """A file locked past the busy timeout: a reservation fails closed (LedgerUnavailable), a commit is
    queued, and the next operation once the lock is gone writes it first."""
    path = tmp_path / "ledger.sqlite3"
    store = SqliteLedgerStore(path, BudgetLimits(session_limit_pico_usd=1_000), busy_timeout_ms=50)
    now_ms = _now_ms()
    held = await store.try_reserve(session_id="s", provider=ProviderKind.OPENAI, amount_pico_usd=600, now_ms=now_ms)
    assert isinstance(held, Reservation)
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # another process holding the write lock
    try:
        with pytest.raises(LedgerUnavailable, match="database is locked"):
            await store.try_reserve(session_id="s", provider=ProviderKind.OPENAI, amount_pico_usd=1, now_ms=now_ms)
        assert await store.commit(held, 250, now_ms=now_ms) is Settled.QUEUED
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    refused = await store.try_reserve(session_id="s", provider=ProviderKind.OPENAI, amount_pico_usd=751, now_ms=now_ms)
    assert isinstance(refused, BudgetRefusal)  # the queued commit (250 spent) was written before this check
    assert refused.spent_pico_usd == 250
    assert refused.reserved_pico_usd == 0
    await store.aclose()
