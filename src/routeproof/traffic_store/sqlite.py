"""The SQLite traffic store: processes on one machine share rate-limit windows and retry buckets.

Each operation is one ``BEGIN IMMEDIATE`` transaction (the write lock is taken before anything is
read), inside which core's pure functions decide: the window's live entries are loaded, expired
ones deleted, :func:`routeproof.core.rate_limit.admit` applied and the new entry inserted, so no
other process can act between one's check and its reservation. The blocking calls run in a thread.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from routeproof._sqlite import open_shared
from routeproof.core.rate_limit import DeploymentLimits, LogEntry, RateVerdict, admit
from routeproof.core.retry_budget import RetryBudgetConfig, after_failure, after_success, retry_allowed
from routeproof.traffic_store.protocol import RateTicket

__all__ = ["SqliteTrafficStore"]

_T = TypeVar("_T")

_SCHEMA = """
BEGIN IMMEDIATE;
CREATE TABLE IF NOT EXISTS traffic_log (
    id INTEGER PRIMARY KEY AUTOINCREMENT, deployment TEXT NOT NULL, at_ms INTEGER NOT NULL, tokens INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS traffic_log_by_deployment ON traffic_log (deployment, at_ms);
CREATE TABLE IF NOT EXISTS traffic_bucket (provider TEXT PRIMARY KEY, tokens_milli INTEGER NOT NULL);
COMMIT;
"""


class SqliteTrafficStore:
    """Windows and buckets in one SQLite file (WAL, ``BEGIN IMMEDIATE``)."""

    def __init__(self, path: str | Path, *, busy_timeout_ms: int = 5_000) -> None:
        self._path = Path(path)
        self._busy_timeout_ms = busy_timeout_ms
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            self._conn = open_shared(self._path, busy_timeout_ms=self._busy_timeout_ms, schema=_SCHEMA)
        return self._conn

    def _tx(self, body: Callable[[sqlite3.Connection], _T]) -> _T:
        with self._lock:
            conn = self._connection()
            conn.execute("BEGIN IMMEDIATE")
            try:
                result = body(conn)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
            return result

    async def _run(self, body: Callable[[sqlite3.Connection], _T]) -> _T:
        return await asyncio.to_thread(self._tx, body)

    @staticmethod
    def _live(conn: sqlite3.Connection, deployment: str, limits: DeploymentLimits, now_ms: int) -> list[LogEntry]:
        conn.execute(
            "DELETE FROM traffic_log WHERE deployment = ? AND at_ms <= ?", (deployment, now_ms - limits.window_ms)
        )
        rows = conn.execute("SELECT at_ms, tokens FROM traffic_log WHERE deployment = ?", (deployment,)).fetchall()
        return [LogEntry(at_ms=at, tokens=tokens) for at, tokens in rows]

    async def try_reserve(
        self, deployment: str, limits: DeploymentLimits, *, tokens: int, now_ms: int
    ) -> RateTicket | RateVerdict:
        """Reserve one request of ``tokens`` if core's ``admit`` says it fits, in one transaction."""

        def body(conn: sqlite3.Connection) -> RateTicket | RateVerdict:
            verdict = admit(limits, tuple(self._live(conn, deployment, limits, now_ms)), now_ms, tokens)
            if not verdict.ok:
                return verdict
            cursor = conn.execute(
                "INSERT INTO traffic_log (deployment, at_ms, tokens) VALUES (?, ?, ?)", (deployment, now_ms, tokens)
            )
            return RateTicket(deployment=deployment, ticket_id=str(cursor.lastrowid), at_ms=now_ms, tokens=tokens)

        return await self._run(body)

    async def peek(self, deployment: str, limits: DeploymentLimits, *, tokens: int, now_ms: int) -> RateVerdict:
        """Core's verdict on such a reservation now, without making it."""
        return await self._run(
            lambda conn: admit(limits, tuple(self._live(conn, deployment, limits, now_ms)), now_ms, tokens)
        )

    async def settle(self, ticket: RateTicket, *, tokens: int, now_ms: int) -> None:
        """The ticket holds ``tokens`` from ``now_ms`` on (gone if already out of the window)."""
        await self._run(
            lambda conn: conn.execute(
                "UPDATE traffic_log SET tokens = ?, at_ms = MAX(at_ms, ?) WHERE id = ?",
                (max(0, tokens), now_ms, int(ticket.ticket_id)),
            )
        )

    async def release(self, ticket: RateTicket) -> None:
        """Remove the ticket."""
        await self._run(lambda conn: conn.execute("DELETE FROM traffic_log WHERE id = ?", (int(ticket.ticket_id),)))

    @staticmethod
    def _level(conn: sqlite3.Connection, provider: str, config: RetryBudgetConfig) -> int:
        row = conn.execute("SELECT tokens_milli FROM traffic_bucket WHERE provider = ?", (provider,)).fetchone()
        return config.capacity_milli if row is None else min(config.capacity_milli, int(row[0]))

    @staticmethod
    def _store(conn: sqlite3.Connection, provider: str, tokens_milli: int) -> None:
        conn.execute(
            "INSERT INTO traffic_bucket (provider, tokens_milli) VALUES (?, ?) "
            "ON CONFLICT (provider) DO UPDATE SET tokens_milli = excluded.tokens_milli",
            (provider, tokens_milli),
        )

    async def retry_failure(self, provider: str, config: RetryBudgetConfig) -> bool:
        """One token less; whether a retry is still allowed (one transaction)."""

        def body(conn: sqlite3.Connection) -> bool:
            tokens = after_failure(config, self._level(conn, provider, config))
            self._store(conn, provider, tokens)
            return retry_allowed(config, tokens)

        return await self._run(body)

    async def retry_success(self, provider: str, config: RetryBudgetConfig) -> None:
        """The ratio back (one transaction)."""
        await self._run(
            lambda conn: self._store(conn, provider, after_success(config, self._level(conn, provider, config)))
        )

    async def retry_tokens_milli(self, provider: str, config: RetryBudgetConfig) -> int:
        """The bucket's level."""
        return await self._run(lambda conn: self._level(conn, provider, config))

    async def aclose(self) -> None:
        """Close the connection."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
