"""EXACT-MONEY: the ledger matches the provider's bill on every path, on every store, over real sockets.

**Pre-registered claim.** For each path a call can take (plain, streamed, retried, failed over, a
stream cut before or after its usage event, cancelled, past the deadline) and each ledger store
(memory, SQLite, a real redis-server), the ledger's spent counters per scope (the session, each
provider's day, the month) equal the usage the mock providers journaled as reported
(``MockProviderServer.bills``) times ``config/pricing.toml``'s price, computed from the providers'
own field names — 0 pico-USD apart — with no reservation left open. A stream cut before its usage
event books its reserved worst case (the documented rule, ``core/stream_rules.py``): expected there
is that amount; a stream cut after its usage event and before its terminator books the usage the
provider reported (issue 26: it booked the worst case, +1,404,000,000 pico-USD, until the fix).
**Falsified by** any non-zero difference in any cell, or an open reservation. The harness is
tests/money/exact_money.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from falsification.report import record_verdict
from routeproof.core.pricing import format_usd
from tests.money.exact_money import PATHS, Row, run_path
from tools.redis_server import RedisServer, redis_server_binary

pytestmark = [pytest.mark.falsify, pytest.mark.asyncio]


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str | None]:
    """A real redis-server on a free 127.0.0.1 port, or None (the row then says redis was not run)."""
    binary = redis_server_binary()
    if binary is None:
        yield None
        return
    server = RedisServer(binary, tmp_path_factory.mktemp("redis-exact-money"))
    try:
        server.start()
    except RuntimeError:
        yield None
        return
    yield server.url
    server.stop()


def _ok(row: Row) -> bool:
    return row.exact


async def test_exact_money_on_every_path_and_store(tmp_path: Path, redis_url: str | None) -> None:
    """EXACT-MONEY: 8 paths x 3 stores (and 2 routers per shared store), the ledger per scope against the bills."""
    stores = ["memory", "sqlite"] + (["redis"] if redis_url is not None else [])
    rows = [
        await run_path(path, store, tmp_path / f"{store}-{path.name.lower()}", redis_url)
        for store in stores
        for path in PATHS
    ]
    rows += [  # two routers sharing one store, each with its own connection (two replicas in this process)
        await run_path(path, store, tmp_path / f"{store}-x2-{path.name.lower()}", redis_url, replicas=2)
        for store in stores
        if store != "memory"
        for path in PATHS
    ]
    survived = all(_ok(row) for row in rows) and redis_url is not None
    matrix = "; ".join(
        f"{row.path.value}/{row.store}: expected {format_usd(row.expected_pico_usd)}, "
        + ", ".join(f"{scope} {diff:+d}" for scope, diff in row.differences)
        for row in rows
    )
    record_verdict(
        "EXACT-MONEY",
        evidence=(
            f"{len(rows)} runs ({len(PATHS)} paths x {', '.join(stores)}, and x 2 routers on each shared store) "
            f"through real routers and loopback mock servers; pico-USD differences ledger - bill per scope: {matrix}"
            + ("" if redis_url is not None else "; redis-server missing: the redis column was not run")
        ),
        survived=survived,
        procedure="exhaustive over the pre-registered paths x stores, one call each on a fresh store: the ledger's "
        "totals against the mocks' journaled usage x price",
        seeds="none: every path is scripted (deterministic); the mocks' usage is fixed",
        data={f"{row.path.value}/{row.store}": dict(row.differences) for row in rows},
    )
    assert survived, matrix
