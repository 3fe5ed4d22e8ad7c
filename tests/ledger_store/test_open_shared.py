"""Processes that open one fresh SQLite file at the same instant all get a connection.

CI saw a router's first reservation fail with "database is locked" when two processes opened a new
ledger file together (tests/money/kill9.py): SQLite answers the WAL switch of a file another
connection is creating with SQLITE_BUSY at once, without its busy handler. Threads with their own
connections race the same way, so the check runs them (fast) in many fresh files. Without the
retry (teeth row HARDEN-SQLITE-OPEN), 29 of 200 such rounds failed here.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import pytest

from benchmarks.sqlite_open_race import failed_rounds
from routeproof._sqlite import open_shared
from routeproof.ledger_store.sqlite import SqliteLedgerStore
from routeproof.traffic_store.sqlite import SqliteTrafficStore

SCHEMA = "BEGIN IMMEDIATE; CREATE TABLE IF NOT EXISTS t (a INTEGER); INSERT INTO t VALUES (1); COMMIT;"
ROUNDS = 150
OPENERS = 4


def _failed_rounds(tmp_path: Path, open_one: Callable[[Path], sqlite3.Connection]) -> list[str]:
    return failed_rounds(tmp_path, open_one, ROUNDS, OPENERS)


def test_openers_racing_on_a_fresh_file_all_connect(tmp_path: Path) -> None:
    """150 rounds of 4 simultaneous openers of a new file: no 'database is locked'; the schema ran once per file."""
    assert _failed_rounds(tmp_path, lambda p: open_shared(p, busy_timeout_ms=5_000, schema=SCHEMA)) == []
    with closing(sqlite3.connect(tmp_path / "fresh-0.sqlite3")) as conn:  # a bare `with` would not close it
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert conn.execute("SELECT count(*) FROM t").fetchone() == (OPENERS,)


def test_a_writer_holding_a_rollback_file_is_waited_for(tmp_path: Path) -> None:
    """The race made deterministic: while another connection holds a write transaction on a file still
    in rollback-journal mode, SQLite answers ``journal_mode=WAL`` with SQLITE_BUSY at once (no busy
    handler). The opener retries until the writer commits (200 ms here), within its busy timeout."""
    path = tmp_path / "rollback.sqlite3"
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("CREATE TABLE x (a INTEGER)")
    holder.execute("BEGIN IMMEDIATE")
    plain = sqlite3.connect(path, timeout=5, isolation_level=None)
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        plain.execute("PRAGMA journal_mode=WAL")  # the premise: at once, although the timeout is 5 s
    plain.close()
    release = threading.Timer(0.2, lambda: holder.execute("COMMIT"))
    release.start()
    try:
        conn = open_shared(path, busy_timeout_ms=10_000, schema=SCHEMA)
    finally:
        release.join()
        holder.close()
    assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    conn.close()


def test_a_lock_held_past_the_busy_timeout_still_fails(tmp_path: Path) -> None:
    """The retry is bounded: a writer that never lets go fails the opener after busy_timeout_ms."""
    path = tmp_path / "held.sqlite3"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE x (a INTEGER)")
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            open_shared(path, busy_timeout_ms=50, schema=SCHEMA)
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_both_stores_open_through_it() -> None:
    """The ledger and traffic stores both open their files this way (one home for the rule)."""
    import inspect

    for store in (SqliteLedgerStore, SqliteTrafficStore):
        assert "open_shared(" in inspect.getsource(store._connection)
