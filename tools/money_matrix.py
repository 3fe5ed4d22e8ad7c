"""Print the exact-money path x store matrix: ledger minus the provider's bill, in pico-USD (issue 26).

    PYTHONPATH=src python tools/money_matrix.py [--no-kill9]

Runs every path (plain, streamed, cut before / after the usage event, retried, failed over,
cancelled, past the deadline) once on each store — memory, SQLite, a throwaway redis-server — and
with two routers on each shared store, then two OS processes on one SQLite file and one Redis
namespace with one of them killed by SIGKILL mid-call (tests/money/kill9.py). Each cell is the
largest difference over the cell's scopes (session, provider day, month); 0 means every scope is
exact and nothing is left reserved. Exit status 1 when any cell is not 0. Real loopback sockets;
about a minute, plus the kill -9 runs' lease.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "src")]

from tests.money.exact_money import matrix, render_matrix  # noqa: E402
from tests.money.kill9 import run_kill9  # noqa: E402
from tools.redis_server import RedisServer, redis_server_binary  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-kill9", action="store_true", help="leave out the two-process kill -9 row")
    args = parser.parse_args(argv)
    binary = redis_server_binary()
    with tempfile.TemporaryDirectory(prefix="money-matrix-") as tmp_name:
        tmp = Path(tmp_name)
        server = RedisServer(binary, tmp / "redis").start() if binary is not None else None
        try:
            url = None if server is None else server.url
            rows = asyncio.run(matrix(tmp / "matrix", url))
            extra: dict[str, dict[str, int]] = {}
            exact = all(row.exact for row in rows)
            if not args.no_kill9:
                backends = ["sqlite"] + (["redis"] if url is not None else [])
                kills = {b: asyncio.run(run_kill9(b, tmp / f"kill9-{b}", url)) for b in backends}
                extra["two processes, one killed -9 mid-call (lease ran out)"] = {
                    f"{b} x2 routers": max(k.differences.values(), key=abs, default=0) for b, k in kills.items()
                }
                exact = exact and all(k.exact for k in kills.values())
        finally:
            if server is not None:
                server.stop()
    print(render_matrix(rows, extra), end="")
    if binary is None:
        print("redis-server missing: the redis columns were not run (python tools/redis_server.py --install)")
    return 0 if exact else 1


if __name__ == "__main__":
    sys.exit(main())
