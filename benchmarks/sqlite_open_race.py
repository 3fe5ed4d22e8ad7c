"""How often a fresh shared SQLite file fails to open when several openers race (``_sqlite.open_shared``).

    python benchmarks/sqlite_open_race.py [--rounds 200] [--openers 4]

Each round makes a new file and starts ``--openers`` threads together (a barrier); each opens the file
the way the stores do: WAL mode, then the schema in one script. ``once``: a single try, as the stores
opened their files before ``open_shared``; ``open_shared``: the retrying helper. A round fails when any
opener raised. Prints the failed rounds per way; the figure moves with the machine's load.
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

from routeproof._sqlite import open_shared

SCHEMA = "CREATE TABLE IF NOT EXISTS t (k TEXT PRIMARY KEY, v INTEGER NOT NULL);"
BUSY_TIMEOUT_MS = 5_000


def once(path: Path) -> sqlite3.Connection:
    """One try, no retry: connect, switch to WAL, apply the schema."""
    conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.executescript(SCHEMA)
    except BaseException:
        conn.close()
        raise
    return conn


def shared(path: Path) -> sqlite3.Connection:
    """The stores' way now."""
    return open_shared(path, busy_timeout_ms=BUSY_TIMEOUT_MS, schema=SCHEMA)


def failed_rounds(folder: Path, opener: Callable[[Path], sqlite3.Connection], rounds: int, openers: int) -> list[str]:
    """What failed, round by round, when ``openers`` threads race to open a fresh file in ``folder``
    (``tests/ledger_store/test_open_shared.py`` asserts none does with ``open_shared``)."""
    failures: list[str] = []
    for n in range(rounds):
        path = folder / f"fresh-{n}.sqlite3"
        barrier = threading.Barrier(openers)
        errors: list[BaseException] = []

        def one(path: Path = path, barrier: threading.Barrier = barrier, errors: list[BaseException] = errors) -> None:
            barrier.wait()
            try:
                opener(path).close()
            except sqlite3.Error as exc:
                errors.append(exc)

        threads = [threading.Thread(target=one) for _ in range(openers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        failures += [f"round {n}: {e}" for e in errors]
    return failures


def main() -> None:
    """Race each way ``--rounds`` times and print the failed rounds."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--openers", type=int, default=4)
    args = parser.parse_args()
    for name, opener in (("once", once), ("open_shared", shared)):
        with tempfile.TemporaryDirectory() as folder:
            failures = failed_rounds(Path(folder), opener, args.rounds, args.openers)
        failed = len({f.split(":", 1)[0] for f in failures})
        print(f"{name:12} {failed} of {args.rounds} rounds failed")


if __name__ == "__main__":
    main()
