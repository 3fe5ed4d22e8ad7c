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
Two OS processes sharing one SQLite file and one Redis namespace, one killed with SIGKILL while its
call holds a reservation: that reservation stays open until its lease runs out and is then booked at
its worst case (the crash rule, ``ledger_store/protocol.py``), and the books end exact. The same
claims hold after every step of a Hypothesis state machine over random sequences of those paths,
killed processes and lapsed leases, on every store column (tests/money/money_machine.py).
**Falsified by** any non-zero difference in any cell or step, an open reservation that should not
be, or a lease ending early. The harnesses are tests/money/exact_money.py, kill9.py, money_machine.py.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test

from falsification.report import record_verdict
from routeproof.core.pricing import format_usd
from tests.money.exact_money import PATHS, matrix, render_matrix
from tests.money.kill9 import LEASE_S, Kill9Result, run_kill9
from tests.money.money_machine import MoneyMachine
from tools.redis_server import RedisServer, redis_server_binary

pytestmark = [pytest.mark.falsify]


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


MACHINE = settings(
    max_examples=4,
    stateful_step_count=10,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)
"""The state machine's bound over real sockets: 4 sequences of up to 10 steps per store column."""


def _machine(backend: str, tmp: Path, redis_url: str | None, replicas: int) -> tuple[bool, str]:
    """Run the state machine on one store column; (exact after every step, what it exercised)."""
    machine = MoneyMachine.configure(backend, tmp, redis_url, replicas)
    try:
        run_state_machine_as_test(machine, settings=MACHINE)
    except AssertionError as exc:
        return False, f"{backend} x{replicas}: {str(exc)[:400]}"
    return True, f"{backend} x{replicas}: " + ", ".join(f"{k} {v}" for k, v in sorted(machine.seen.items()))


async def _kill9_each(backends: list[str], tmp: Path, redis_url: str | None) -> dict[str, Kill9Result]:
    """The kill -9 scenario on each shared store at once: each waits out its own lease in real time
    (most of its run), so together they take one wait instead of one per store."""
    results = await asyncio.gather(*(run_kill9(b, tmp / f"kill9-{b}", redis_url) for b in backends))
    return dict(zip(backends, results, strict=True))


def test_exact_money_on_every_path_and_store(tmp_path: Path, redis_url: str | None) -> None:
    """EXACT-MONEY: 8 paths x 3 stores (and 2 routers per shared store), two processes with one killed -9,
    and the state machine over every column: the ledger per scope against the bills, 0 pico-USD apart."""
    rows = asyncio.run(matrix(tmp_path / "matrix", redis_url))
    backends = ["sqlite"] + (["redis"] if redis_url is not None else [])
    kills = asyncio.run(_kill9_each(backends, tmp_path, redis_url))
    columns = [("memory", 1)] + [(b, n) for b in backends for n in (1, 2)]
    machines = [_machine(b, tmp_path / f"machine-{b}-{n}", redis_url, n) for b, n in columns]
    survived = (
        all(row.exact for row in rows)
        and all(k.exact for k in kills.values())
        and all(ok for ok, _ in machines)
        and redis_url is not None
    )
    kill_row = {f"{b} x2 routers": max(k.differences.values(), key=abs, default=0) for b, k in kills.items()}
    table = render_matrix(rows, {"two processes, one killed -9 mid-call (lease ran out)": kill_row})
    cells = "; ".join(
        f"{row.path.value}/{row.store}: expected {format_usd(row.expected_pico_usd)}, "
        + ", ".join(f"{scope} {diff:+d}" for scope, diff in row.differences)
        for row in rows
    )
    kill_text = "; ".join(
        f"kill -9 on {b}: open after the kill {k.open_after_kill}, at the end {k.open_at_end}, "
        + ", ".join(f"{scope} {diff:+d}" for scope, diff in k.differences.items())
        for b, k in kills.items()
    )
    record_verdict(
        "EXACT-MONEY",
        evidence=(
            f"{len(rows)} scripted runs ({len(PATHS)} paths x memory, {', '.join(backends)}, and x 2 routers on each "
            f"shared store) through real routers and loopback mock servers; pico-USD differences ledger - bill per "
            f"scope: {cells}. {kill_text}. State machine (steps per path): {' | '.join(m for _, m in machines)}"
            + ("" if redis_url is not None else "; redis-server missing: the redis column was not run")
        ),
        survived=survived,
        procedure="exhaustive over the pre-registered paths x stores, one call each on a fresh store; two OS "
        "processes on one SQLite file / Redis namespace, one killed with SIGKILL holding a reservation, read after "
        f"its {LEASE_S} s lease; then a Hypothesis RuleBasedStateMachine (calls along random paths, killed "
        "processes, lapsed leases on the stores' clock) checked after every step: the ledger's totals against the "
        "mocks' journaled usage x price",
        seeds="scripted runs: none (deterministic, the mocks' usage is fixed); state machine: derandomize=True "
        f"({MACHINE.max_examples} examples x up to {MACHINE.stateful_step_count} steps per column)",
        data={f"{row.path.value}/{row.store}": dict(row.differences) for row in rows}
        | {f"kill -9/{b}": k.differences for b, k in kills.items()},
    )
    print(table)  # the path x store matrix (pytest -s shows it)
    assert survived, f"{table}\n{kill_text}\n{machines}"
