"""FALSIFY-MPA-003 over each ledger store: one $0.01 session budget shared by many callers.

One row per backend. ``memory``: 80 callers in one process on the memory store. ``sqlite``: 4
gateway processes x 20 calls in flight on one SQLite file. ``redis``: the same on one real
redis-server started here on a free loopback port. The store is sampled in a loop with a 1 ms pause;
the row survives when no sample shows spend (or spend + reserved) past $0.01, every caller ends
refused, and the next call gets BudgetExhausted(scope='session'). Without redis-server the redis row
is skipped with the reason (reported "not run"), never passed.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from falsification.report import record_verdict
from routeproof.core.ledger import format_usd
from tests.ledger_store.shared_budget import Measured, run_shared_budget, session_account
from tests.ledger_store.worker import BUDGET_PICO_USD, COST_PICO_USD
from tools.redis_server import RedisServer, redis_server_binary

pytestmark = [pytest.mark.falsify, pytest.mark.asyncio]

PROCESSES = 4
IN_FLIGHT = 20


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real redis-server on a free 127.0.0.1 port (skipped, saying why, when there is none)."""
    binary = redis_server_binary()
    if binary is None:
        pytest.skip("redis-server is not installed (run `python tools/redis_server.py --install`, as tox does)")
    server = RedisServer(binary, tmp_path_factory.mktemp("redis-falsify"))
    try:
        server.start()
    except RuntimeError as exc:
        pytest.skip(f"redis-server could not be started: {exc}")
    yield server.url
    server.stop()


def _verdict(backend: str, callers: str, seen: Measured) -> bool:
    final = session_account(seen.final)
    survived = (
        seen.peak_spent_pico_usd <= BUDGET_PICO_USD
        and seen.peak_held_pico_usd <= BUDGET_PICO_USD
        and final.spent_pico_usd == seen.granted * COST_PICO_USD
        and final.reserved_pico_usd == 0
        and seen.next_call is not None
        and seen.next_call.scope == "session"
    )
    record_verdict(
        f"FALSIFY-MPA-003[{backend}]",
        evidence=(
            f"{callers} on one {format_usd(BUDGET_PICO_USD)} session budget: {seen.granted} calls granted, "
            f"{seen.refused} callers refused, {seen.samples} samples of the store in {seen.elapsed_s:.1f} s, "
            f"peak spent {format_usd(seen.peak_spent_pico_usd)}, peak spent+reserved "
            f"{format_usd(seen.peak_held_pico_usd)}, final {format_usd(final.spent_pico_usd)}; next call: "
            f"{'BudgetExhausted(scope=' + repr(seen.next_call.scope) + ')' if seen.next_call else 'NOT refused'}"
        ),
        survived=survived,
        procedure="concurrent callers on one store until refused, the store sampled throughout: a sample past the "
        "budget, a wrong final balance or an unrefused next call falsifies",
        seeds="none: every call costs the same fixed amount (the interleaving is the OS scheduler's)",
    )
    return survived


async def test_mpa_003_memory_store() -> None:
    """FALSIFY-MPA-003[memory]: 80 callers in one process on the memory store never pass $0.01."""
    seen = await run_shared_budget(None, processes=0, in_flight=PROCESSES * IN_FLIGHT)
    assert _verdict("memory", f"{PROCESSES * IN_FLIGHT} callers in one process", seen)


async def test_mpa_003_sqlite_store(tmp_path: Path) -> None:
    """FALSIFY-MPA-003[sqlite]: 4 processes x 20 in flight on one SQLite file never pass $0.01."""
    seen = await run_shared_budget(
        f"sqlite:{tmp_path / 'ledger.sqlite3'}:300000", processes=PROCESSES, in_flight=IN_FLIGHT
    )
    assert _verdict("sqlite", f"{PROCESSES} processes x {IN_FLIGHT} calls in flight", seen)


async def test_mpa_003_redis_store(redis_url: str) -> None:
    """FALSIFY-MPA-003[redis]: 4 processes x 20 in flight on one Redis never pass $0.01."""
    seen = await run_shared_budget(f"redis:300000:mpa003:{redis_url}", processes=PROCESSES, in_flight=IN_FLIGHT)
    assert _verdict("redis", f"{PROCESSES} processes x {IN_FLIGHT} calls in flight", seen)
