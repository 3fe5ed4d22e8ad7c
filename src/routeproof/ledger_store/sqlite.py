"""The SQLite store: the embedded, durable default. One file, many processes.

Each operation is one ``BEGIN IMMEDIATE`` transaction (the write lock is taken before anything is
read, so no other process can act between this one's check and its booking) in WAL mode (readers do
not block the writer; a committed transaction survives a crash of the process, ``synchronous=FULL``
also a power loss). The arithmetic is the pure ledger's: the transaction loads the accounts the
operation touches, applies :mod:`routeproof.core.ledger`'s own transitions, and writes them back.

A file locked past ``busy_timeout_ms`` (or unwritable) fails a reservation closed
(:class:`~routeproof.ledger_store.protocol.LedgerUnavailable`); a commit or release it refuses is
queued and written first by the next operation (or, if the process dies first, its lease books it).

The blocking sqlite3 calls run in a worker thread; an operation whose caller is cancelled still runs
to its end (see :func:`~routeproof.ledger_store.protocol.finish_even_if_cancelled`).
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path

from routeproof._sqlite import open_shared
from routeproof.core.identity import parse_provider
from routeproof.core.ledger import (
    Account,
    BudgetLimits,
    BudgetRefusal,
    LedgerState,
    Reservation,
    commit,
    periods_at,
    release,
    roll_over,
    try_reserve,
)
from routeproof.core.types import ProviderId
from routeproof.ledger_store.protocol import (
    DEFAULT_LEASE_MS,
    LedgerTotals,
    LedgerUnavailable,
    Settled,
    finish_even_if_cancelled,
)

__all__ = ["SqliteLedgerStore"]

_SCHEMA = """
BEGIN IMMEDIATE;
CREATE TABLE IF NOT EXISTS ledger_meta (
    id INTEGER PRIMARY KEY CHECK (id = 0),
    day_index INTEGER NOT NULL, month_index INTEGER NOT NULL,
    monthly_spent INTEGER NOT NULL, monthly_reserved INTEGER NOT NULL, overrun INTEGER NOT NULL
);
INSERT OR IGNORE INTO ledger_meta VALUES (0, 0, 0, 0, 0, 0);
CREATE TABLE IF NOT EXISTS ledger_sessions (
    session_id TEXT PRIMARY KEY, spent INTEGER NOT NULL, reserved INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS ledger_provider_daily (
    provider TEXT PRIMARY KEY, spent INTEGER NOT NULL, reserved INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS ledger_reservations (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL, provider TEXT NOT NULL, amount INTEGER NOT NULL,
    turn_warning INTEGER NOT NULL, lease_until_ms INTEGER NOT NULL
);
COMMIT;
"""


def _account(row: tuple[int, int] | None) -> Account:
    return Account() if row is None else Account(spent_pico_usd=row[0], reserved_pico_usd=row[1])


class SqliteLedgerStore:
    """The ledger in one SQLite file (WAL, ``BEGIN IMMEDIATE``), durable across restarts."""

    def __init__(
        self,
        path: str | Path,
        limits: BudgetLimits,
        *,
        lease_ms: int = DEFAULT_LEASE_MS,
        busy_timeout_ms: int = 5_000,
    ) -> None:
        if lease_ms <= 0:
            raise ValueError(f"lease_ms must be > 0, got {lease_ms!r}")
        self._path = Path(path)
        self._limits = limits
        self._lease_ms = lease_ms
        self._busy_timeout_ms = busy_timeout_ms
        self._lock = threading.Lock()  # one transaction at a time on the shared connection
        self._conn: sqlite3.Connection | None = None
        self._background: set[asyncio.Task[object]] = set()
        self._pending: list[_Act] = []  # settlements the file did not take yet (locked past the timeout)

    @property
    def limits(self) -> BudgetLimits:
        """The limits this store enforces."""
        return self._limits

    @property
    def description(self) -> str:
        """``sqlite:<path>``."""
        return f"sqlite:{self._path}"

    # --- the connection and the transaction -----------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            # one schema transaction: processes opening the file together agree
            self._conn = open_shared(
                self._path, busy_timeout_ms=self._busy_timeout_ms, schema=_SCHEMA, synchronous_full=True
            )
        return self._conn

    def _transaction(self, now_ms: int, act: _Act) -> object:
        with self._lock:
            while self._pending:  # settlements that failed earlier go first, in order
                self._one_transaction(now_ms, self._pending[0])
                self._pending.pop(0)
            return self._one_transaction(now_ms, act)

    def _one_transaction(self, now_ms: int, act: _Act) -> object:
        try:
            conn = self._connection()
            conn.execute("BEGIN IMMEDIATE")
            try:
                result = _Tx(conn, self._limits, now_ms).run(act)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
            return result
        except sqlite3.Error as exc:
            raise LedgerUnavailable(f"ledger store {self.description} failed: {exc}") from exc

    async def _run(self, now_ms: int, act: _Act) -> object:
        return await finish_even_if_cancelled(
            lambda: asyncio.to_thread(self._transaction, now_ms, act), self._background
        )

    # --- the port --------------------------------------------------------------------------------

    async def try_reserve(
        self, *, session_id: str, provider: ProviderId, amount_pico_usd: int, now_ms: int
    ) -> Reservation | BudgetRefusal:
        """Book ``amount_pico_usd`` in every scope, or say which scope refuses."""
        act = _Act(kind="reserve", session_id=session_id, provider=provider, amount_pico_usd=amount_pico_usd)
        act.lease_until_ms = now_ms + self._lease_ms

        async def undo(outcome: object) -> object:
            if isinstance(outcome, Reservation):
                return await self.release(outcome, 0, now_ms=now_ms)
            return None

        outcome = await finish_even_if_cancelled(
            lambda: asyncio.to_thread(self._transaction, now_ms, act), self._background, on_cancelled=undo
        )
        assert isinstance(outcome, Reservation | BudgetRefusal)
        return outcome

    async def _settle(self, act: _Act, now_ms: int) -> Settled:
        def settle() -> object:
            try:
                return self._transaction(now_ms, act)
            except LedgerUnavailable:
                with self._lock:
                    self._pending.append(act)  # written before the next operation (or the lease books it)
                return Settled.QUEUED

        outcome = await finish_even_if_cancelled(lambda: asyncio.to_thread(settle), self._background)
        assert isinstance(outcome, Settled)
        return outcome

    async def commit(self, reservation: Reservation, actual_pico_usd: int, *, now_ms: int) -> Settled:
        """Book a finished call's real cost and free the rest of its reservation."""
        return await self._settle(_Act(kind="commit", reservation=reservation, amount_pico_usd=actual_pico_usd), now_ms)

    async def release(self, reservation: Reservation, billed_pico_usd: int = 0, *, now_ms: int) -> Settled:
        """End a failed attempt: free its reservation and book what was billed for it."""
        return await self._settle(
            _Act(kind="release", reservation=reservation, amount_pico_usd=billed_pico_usd), now_ms
        )

    async def renew(self, reservation: Reservation, *, now_ms: int) -> bool:
        """Extend an open reservation's lease, in one transaction; False when it is not open."""
        act = _Act(kind="renew", reservation=reservation)
        act.lease_until_ms = now_ms + self._lease_ms
        outcome = await self._run(now_ms, act)
        assert isinstance(outcome, bool)
        return outcome

    async def roll_over(self, *, now_ms: int) -> None:
        """Roll the periods and expire lapsed leases."""
        await self._run(now_ms, _Act(kind="roll"))

    async def totals(self, *, now_ms: int) -> LedgerTotals:
        """Roll, expire, and return the counters."""
        outcome = await self._run(now_ms, _Act(kind="totals"))
        assert isinstance(outcome, LedgerTotals)
        return outcome

    async def aclose(self) -> None:
        """Wait for settlements still running, then close the file."""
        while self._background:
            await asyncio.gather(*list(self._background), return_exceptions=True)
        if self._conn is not None:
            conn, self._conn = self._conn, None
            conn.close()


class _Act:
    """One operation for the transaction: what to do and with what."""

    def __init__(
        self,
        *,
        kind: str,
        session_id: str = "",
        provider: ProviderId | None = None,
        amount_pico_usd: int = 0,
        reservation: Reservation | None = None,
    ) -> None:
        self.kind = kind
        self.session_id = session_id
        self.provider = provider
        self.amount_pico_usd = amount_pico_usd
        self.reservation = reservation
        self.lease_until_ms = 0


class _Tx:
    """Inside one BEGIN IMMEDIATE transaction: load the touched accounts as a pure LedgerState,
    apply the pure transitions, write the accounts back."""

    def __init__(self, conn: sqlite3.Connection, limits: BudgetLimits, now_ms: int) -> None:
        self.conn = conn
        self.limits = limits
        self.now_ms = now_ms

    def _load(self, sessions: set[str], providers: set[ProviderId]) -> LedgerState:
        c = self.conn
        day, month, m_spent, m_reserved, overrun = c.execute(
            "SELECT day_index, month_index, monthly_spent, monthly_reserved, overrun FROM ledger_meta"
        ).fetchone()
        rows = c.execute(
            "SELECT id, session_id, provider, amount, turn_warning FROM ledger_reservations ORDER BY id"
        ).fetchall()
        opened = tuple(
            Reservation(
                reservation_id=rid,
                session_id=sid,
                provider=parse_provider(p),
                amount_pico_usd=amount,
                turn_warning=bool(warn),
            )
            for rid, sid, p, amount, warn in rows
        )
        sessions |= {r.session_id for r in opened}
        providers |= {r.provider for r in opened}
        session_rows = tuple(
            (
                sid,
                _account(
                    c.execute("SELECT spent, reserved FROM ledger_sessions WHERE session_id = ?", (sid,)).fetchone()
                ),
            )
            for sid in sorted(sessions)
        )
        provider_rows = tuple(
            (
                p,
                _account(
                    c.execute(
                        "SELECT spent, reserved FROM ledger_provider_daily WHERE provider = ?", (p.value,)
                    ).fetchone()
                ),
            )
            for p in sorted(providers, key=lambda k: k.value)
        )
        seq = c.execute("SELECT seq FROM sqlite_sequence WHERE name = 'ledger_reservations'").fetchone()
        return LedgerState(
            limits=self.limits,
            day_index=day,
            month_index=month,
            monthly=Account(spent_pico_usd=m_spent, reserved_pico_usd=m_reserved),
            sessions=session_rows,
            provider_daily=provider_rows,
            open_reservations=opened,
            next_reservation_id=(0 if seq is None else seq[0]) + 1,
            overrun_pico_usd=overrun,
        )

    def _store(self, state: LedgerState) -> None:
        c = self.conn
        c.execute(
            "UPDATE ledger_meta SET day_index = ?, month_index = ?,"
            " monthly_spent = ?, monthly_reserved = ?, overrun = ?",
            (
                state.day_index,
                state.month_index,
                state.monthly.spent_pico_usd,
                state.monthly.reserved_pico_usd,
                state.overrun_pico_usd,
            ),
        )
        for sid, account in state.sessions:
            c.execute(
                "INSERT INTO ledger_sessions VALUES (?, ?, ?) ON CONFLICT (session_id) "
                "DO UPDATE SET spent = excluded.spent, reserved = excluded.reserved",
                (sid, account.spent_pico_usd, account.reserved_pico_usd),
            )
        for provider, account in state.provider_daily:
            c.execute(
                "INSERT INTO ledger_provider_daily VALUES (?, ?, ?) ON CONFLICT (provider) "
                "DO UPDATE SET spent = excluded.spent, reserved = excluded.reserved",
                (provider.value, account.spent_pico_usd, account.reserved_pico_usd),
            )

    def _prepare(self, state: LedgerState) -> LedgerState:
        day, month = periods_at(max(0, self.now_ms))
        before_day = state.day_index
        state = roll_over(state, day_index=day, month_index=month)
        if state.day_index != before_day:  # accounts not loaded roll too: a new day empties every daily spend
            self.conn.execute("UPDATE ledger_provider_daily SET spent = 0")
        lapsed = self.conn.execute(
            "SELECT id FROM ledger_reservations WHERE lease_until_ms <= ? ORDER BY id", (self.now_ms,)
        ).fetchall()
        for (rid,) in lapsed:  # the crash rule: a lapsed lease books its worst case
            held = next(r for r in state.open_reservations if r.reservation_id == rid)
            state = commit(state, held, held.amount_pico_usd)
            self.conn.execute("DELETE FROM ledger_reservations WHERE id = ?", (rid,))
        return state

    def run(self, act: _Act) -> object:
        sessions: set[str] = set()
        providers: set[ProviderId] = set()
        if act.kind == "reserve":
            assert act.provider is not None
            sessions.add(act.session_id)
            providers.add(act.provider)
        if act.kind == "totals":
            sessions |= {sid for (sid,) in self.conn.execute("SELECT session_id FROM ledger_sessions")}
            providers |= {parse_provider(p) for (p,) in self.conn.execute("SELECT provider FROM ledger_provider_daily")}
        state = self._prepare(self._load(sessions, providers))
        result: object = None
        if act.kind == "reserve":
            assert act.provider is not None
            state, outcome = try_reserve(
                state,
                session_id=act.session_id,
                provider=act.provider,
                amount_pico_usd=act.amount_pico_usd,
                day_index=state.day_index,
                month_index=state.month_index,
            )
            if isinstance(outcome, Reservation):
                self.conn.execute(
                    "INSERT INTO ledger_reservations VALUES (?, ?, ?, ?, ?, ?)",
                    (
                        outcome.reservation_id,
                        outcome.session_id,
                        outcome.provider.value,
                        outcome.amount_pico_usd,
                        int(outcome.turn_warning),
                        act.lease_until_ms,
                    ),
                )
            result = outcome
        elif act.kind in {"commit", "release"}:
            held = act.reservation
            assert held is not None
            if held in state.open_reservations:
                settle = commit if act.kind == "commit" else release
                state = settle(state, held, act.amount_pico_usd)
                self.conn.execute("DELETE FROM ledger_reservations WHERE id = ?", (held.reservation_id,))
                result = Settled.BOOKED
            else:
                result = Settled.EXPIRED
        elif act.kind == "renew":
            held = act.reservation
            assert held is not None
            result = held in state.open_reservations
            if result:
                self.conn.execute(
                    "UPDATE ledger_reservations SET lease_until_ms = ? WHERE id = ?",
                    (act.lease_until_ms, held.reservation_id),
                )
        self._store(state)
        if act.kind == "totals":
            from routeproof.ledger_store.memory import totals_of

            result = totals_of(state)
        return result
