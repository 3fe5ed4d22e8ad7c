"""The one port every ledger store implements, the snapshot it returns, and the crash rule.

A ledger store performs the pure ledger's transitions (:mod:`routeproof.core.ledger`) on state that
lives somewhere: process memory, one SQLite file, or one Redis shared by many processes. Every
operation is atomic in its store and runs the same three steps as one unit:

1. **roll** the periods to the day and month of ``now_ms`` (:func:`routeproof.core.ledger.roll_over`);
2. **expire** every reservation whose lease ended at or before ``now_ms``, by the crash rule below;
3. the operation itself (reserve, commit, release, or nothing for :meth:`LedgerStore.totals`).

**The crash rule.** A reservation carries a lease (``lease_ms`` after it was granted). A process
that dies holding one never settles it; when the lease has run out the store *commits the
reservation's worst case* as spent. Why commit and not release: the request may well have reached
the provider and been billed before the process died, and the reservation is an upper bound on that
bill (the same rule a stream cut before its usage arrived follows). Committing never books less
than was really spent, so a budget's hard stop keeps holding against the provider's invoice;
releasing could book $0 for a call that cost money and let spend pass the limit. The price is that
a crash over-counts by at most the worst cases that were in flight. A settlement that arrives after
its lease ran out finds the reservation gone and books nothing more (:attr:`Settled.EXPIRED`).
The lease must therefore outlast the longest call, streams included (default 300 s).
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol, TypeVar, runtime_checkable

from routeproof.core.ledger import Account, BudgetLimits, BudgetRefusal, Reservation
from routeproof.core.types import ProviderId
from routeproof.errors import RouterError

__all__ = [
    "DEFAULT_LEASE_MS",
    "LedgerStore",
    "LedgerTotals",
    "LedgerUnavailable",
    "Settled",
    "finish_even_if_cancelled",
]

DEFAULT_LEASE_MS = 300_000
"""How long a reservation outlives a crashed process before the crash rule books it (5 minutes)."""

_T = TypeVar("_T")


class LedgerUnavailable(RouterError):
    """The ledger store cannot be reached or written: the call is refused (fail closed), never sent
    unbooked. The message names the store (never its password) and what failed."""


class Settled(enum.Enum):
    """What became of a commit or release."""

    BOOKED = "booked"  # the reservation was open and is settled now
    EXPIRED = "expired"  # its lease had run out: the crash rule already booked its worst case
    QUEUED = "queued"  # the store was unreachable: retried before the store's next operation


@dataclass(frozen=True, slots=True, kw_only=True)
class LedgerTotals:
    """A store's counters at one instant (after its roll and expiry): what ``routeproof cost`` shows.

    ``sessions`` and ``provider_daily`` list every account with non-zero counters, sorted;
    ``open_reservations`` are the calls in flight, sorted by id.
    """

    limits: BudgetLimits
    day_index: int
    month_index: int
    monthly: Account
    sessions: tuple[tuple[str, Account], ...]
    provider_daily: tuple[tuple[ProviderId, Account], ...]
    open_reservations: tuple[Reservation, ...]
    overrun_pico_usd: int


@runtime_checkable
class LedgerStore(Protocol):
    """Reserve, commit, release, roll over and read totals, each atomic in the store.

    ``now_ms`` is Unix time in milliseconds (the Router's wall clock): it picks the day and month
    and times the leases. Processes sharing a store need synchronised clocks (NTP).
    """

    @property
    def limits(self) -> BudgetLimits:
        """The limits this store enforces."""
        ...

    @property
    def description(self) -> str:
        """Which store this is, for messages (``sqlite:/var/lib/ledger.db``; never a password)."""
        ...

    async def try_reserve(
        self, *, session_id: str, provider: ProviderId, amount_pico_usd: int, now_ms: int
    ) -> Reservation | BudgetRefusal:
        """Book ``amount_pico_usd`` in every scope, or say which scope refuses.

        :raises LedgerUnavailable: when the store cannot be reached (the call must not be sent).
        """
        ...

    async def commit(self, reservation: Reservation, actual_pico_usd: int, *, now_ms: int) -> Settled:
        """Book a finished call's real cost and free the rest of its reservation."""
        ...

    async def release(self, reservation: Reservation, billed_pico_usd: int = 0, *, now_ms: int) -> Settled:
        """End a failed attempt: free its reservation and book what was billed for it."""
        ...

    async def renew(self, reservation: Reservation, *, now_ms: int) -> bool:
        """Extend an open reservation's lease to ``now_ms`` + the store's lease (after the same roll and
        expiry as every operation); False when it is no longer open (its lease had already run out and
        the crash rule booked it). A long stream calls this while it runs, well within the lease.

        :raises LedgerUnavailable: when the store cannot be reached. The caller may carry on: the lease
            then ends as it would have, and the crash rule books the worst case (the safe side).
        """
        ...

    async def roll_over(self, *, now_ms: int) -> None:
        """Roll the periods and expire lapsed leases now, without any other change."""
        ...

    async def totals(self, *, now_ms: int) -> LedgerTotals:
        """Roll, expire, and return the counters."""
        ...

    async def aclose(self) -> None:
        """Finish background settlements and close connections."""
        ...


def finish_even_if_cancelled(
    make: Callable[[], Awaitable[_T]],
    background: set[asyncio.Task[object]],
    *,
    on_cancelled: Callable[[_T], Awaitable[object]] | None = None,
) -> Awaitable[_T]:
    """Run one store operation so that cancelling its caller cannot cut it in half.

    The operation runs in its own task behind :func:`asyncio.shield`; when the caller is cancelled
    the CancelledError propagates at once while the operation runs to its end in the background
    (kept in ``background`` so it is not garbage-collected, awaited by ``aclose``), and then
    ``on_cancelled`` undoes its result (a reservation granted to a caller that is gone is released).
    """

    async def run() -> _T:
        task: asyncio.Task[_T] = asyncio.ensure_future(make())
        background.add(task)
        task.add_done_callback(background.discard)
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            if on_cancelled is not None:
                undo = on_cancelled

                def then(done: asyncio.Task[_T]) -> None:
                    if not done.cancelled() and done.exception() is None:
                        follow_up = asyncio.ensure_future(undo(done.result()))
                        background.add(follow_up)
                        follow_up.add_done_callback(background.discard)

                task.add_done_callback(then)
            raise

    return run()
