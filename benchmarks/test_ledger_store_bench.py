"""The cost of a reservation round trip (try_reserve + commit) per ledger store, in real time.

memory: the pure ledger in process memory; sqlite: two ``BEGIN IMMEDIATE`` transactions in WAL mode
with ``synchronous=FULL`` on a file under the temp directory; redis: two ``EVALSHA`` round trips to a
real redis-server on loopback (append-only file, ``appendfsync always``). Also one contended figure:
20 round trips in flight at once on one store instance. Percentiles are printed; nothing is gated.

Run: ``tox -e bench`` (or ``pytest benchmarks/test_ledger_store_bench.py -p no:looptime -s``).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from routeproof.core.ledger import BudgetLimits, Reservation
from routeproof.core.types import ProviderKind
from routeproof.ledger_store import LedgerStore, MemoryLedgerStore, SqliteLedgerStore
from tools.redis_server import RedisServer, redis_server_binary

# looptime's plugin (loaded even under ``-p no:looptime``: its name is looptime_plugin) gives each sync
# test a policy loop that asyncio.run then unsets; benchmarks/ has no conftest to close it, so it is
# garbage-collected as an unraisable ResourceWarning that is not what these measure.
pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")

ROUND_TRIPS = int(os.environ.get("ROUTEPROOF_BENCH_ROUND_TRIPS", "2000"))
IN_FLIGHT = 20
LIMITS = BudgetLimits(session_limit_pico_usd=10**18, monthly_limit_pico_usd=10**18)


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real redis-server on a free loopback port (skipped, saying why, when there is none)."""
    binary = redis_server_binary()
    if binary is None:
        pytest.skip("redis-server is not installed (run `python tools/redis_server.py --install`)")
    with RedisServer(binary, tmp_path_factory.mktemp("redis-bench")) as server:
        yield server.url


def _percentiles(samples_s: list[float]) -> str:
    ordered = sorted(samples_s)
    p50 = statistics.median(ordered) * 1e6
    p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))] * 1e6
    return f"p50 {p50:.0f} us, p99 {p99:.0f} us over {len(ordered)} round trips"


async def _round_trip(store: LedgerStore, session: str) -> float:
    t0 = time.perf_counter()
    now_ms = int(time.time() * 1000)
    held = await store.try_reserve(
        session_id=session, provider=ProviderKind.OPENAI, amount_pico_usd=1_000, now_ms=now_ms
    )
    assert isinstance(held, Reservation), held
    await store.commit(held, 500, now_ms=now_ms)
    return time.perf_counter() - t0


def _measure(make: Callable[[], LedgerStore]) -> tuple[list[float], list[float]]:
    async def main() -> tuple[list[float], list[float]]:
        store = make()
        serial = [await _round_trip(store, "serial") for _ in range(ROUND_TRIPS)]
        contended: list[float] = []
        for _ in range(ROUND_TRIPS // IN_FLIGHT):
            contended += await asyncio.gather(*(_round_trip(store, f"s{i}") for i in range(IN_FLIGHT)))
        await store.aclose()
        return serial, contended

    return asyncio.run(main())


def _report(benchmark: BenchmarkFixture, name: str, samples: tuple[list[float], list[float]]) -> None:
    serial, contended = samples
    benchmark.extra_info["serial"] = _percentiles(serial)
    benchmark.extra_info["contended"] = _percentiles(contended)
    print(f"\n{name} reserve+commit: {_percentiles(serial)}; {IN_FLIGHT} in flight: {_percentiles(contended)}")


def test_memory_round_trip(benchmark: BenchmarkFixture) -> None:
    """Reserve + commit on the memory store (the pure ledger with its icontract checks)."""
    samples = benchmark.pedantic(lambda: _measure(lambda: MemoryLedgerStore(LIMITS)), rounds=1, iterations=1)  # type: ignore[no-untyped-call]  # pytest-benchmark leaves pedantic unannotated
    _report(benchmark, "memory", samples)


def test_sqlite_round_trip(benchmark: BenchmarkFixture, tmp_path: Path) -> None:
    """Reserve + commit on one SQLite file: two durable transactions."""
    path = tmp_path / "ledger.sqlite3"
    samples = benchmark.pedantic(lambda: _measure(lambda: SqliteLedgerStore(path, LIMITS)), rounds=1, iterations=1)  # type: ignore[no-untyped-call]  # pytest-benchmark leaves pedantic unannotated
    _report(benchmark, "sqlite", samples)


def test_redis_round_trip(benchmark: BenchmarkFixture, redis_url: str) -> None:
    """Reserve + commit on a real Redis over loopback: two Lua script round trips."""
    from routeproof.ledger_store.redis_store import RedisLedgerStore

    samples = benchmark.pedantic(lambda: _measure(lambda: RedisLedgerStore(redis_url, LIMITS)), rounds=1, iterations=1)  # type: ignore[no-untyped-call]  # pytest-benchmark leaves pedantic unannotated
    _report(benchmark, "redis", samples)
