"""The memory store: the pure ledger held in one process (today's behaviour, for tests and single runs).

Every method runs without an ``await`` inside, so each is atomic on the event loop, exactly as the
Router's ledger was before stores existed. Nothing survives the process, so by default there are no
leases (a reservation can only leak with the process, and then the whole ledger goes with it); give
``lease_ms`` to get the durable stores' crash rule (the differential tests do).
"""

from __future__ import annotations

from routeproof.core.ledger import (
    BudgetLimits,
    BudgetRefusal,
    LedgerState,
    Reservation,
    commit,
    new_ledger,
    periods_at,
    release,
    roll_over,
    try_reserve,
)
from routeproof.core.types import ProviderId
from routeproof.ledger_store.protocol import LedgerTotals, Settled

__all__ = ["MemoryLedgerStore", "totals_of"]


def totals_of(state: LedgerState) -> LedgerTotals:
    """The snapshot of a pure ledger state (zero accounts left out, everything sorted)."""

    def nonzero(spent: int, reserved: int) -> bool:
        return spent != 0 or reserved != 0

    return LedgerTotals(
        limits=state.limits,
        day_index=state.day_index,
        month_index=state.month_index,
        monthly=state.monthly,
        sessions=tuple(sorted((s, a) for s, a in state.sessions if nonzero(a.spent_pico_usd, a.reserved_pico_usd))),
        provider_daily=tuple(
            sorted(
                ((p, a) for p, a in state.provider_daily if nonzero(a.spent_pico_usd, a.reserved_pico_usd)),
                key=lambda pair: pair[0].value,
            )
        ),
        open_reservations=tuple(sorted(state.open_reservations, key=lambda r: r.reservation_id)),
        overrun_pico_usd=state.overrun_pico_usd,
    )


class MemoryLedgerStore:
    """The pure ledger in process memory behind the LedgerStore port."""

    def __init__(self, limits: BudgetLimits, *, lease_ms: int | None = None) -> None:
        if lease_ms is not None and lease_ms <= 0:
            raise ValueError(f"lease_ms must be > 0 or None, got {lease_ms!r}")
        self._state = new_ledger(limits)
        self._lease_ms = lease_ms
        self._lease_until_ms: dict[int, int] = {}

    @property
    def state(self) -> LedgerState:
        """The pure ledger as it stands (a frozen value)."""
        return self._state

    @property
    def limits(self) -> BudgetLimits:
        """The limits this store enforces."""
        return self._state.limits

    def replace_state(self, state: LedgerState) -> None:
        """Replace the ledger with ``state`` (the Router's logged budget override; ``with_limits`` made it)."""
        self._state = state

    @property
    def description(self) -> str:
        """``memory``."""
        return "memory"

    def _prepare(self, now_ms: int) -> None:
        day, month = periods_at(max(0, now_ms))
        self._state = roll_over(self._state, day_index=day, month_index=month)
        lapsed = sorted(rid for rid, until in self._lease_until_ms.items() if until <= now_ms)
        for rid in lapsed:  # the crash rule: a lapsed lease books its worst case
            del self._lease_until_ms[rid]
            held = next(r for r in self._state.open_reservations if r.reservation_id == rid)
            self._state = commit(self._state, held, held.amount_pico_usd)

    async def try_reserve(
        self, *, session_id: str, provider: ProviderId, amount_pico_usd: int, now_ms: int
    ) -> Reservation | BudgetRefusal:
        """Book ``amount_pico_usd`` in every scope, or say which scope refuses."""
        self._prepare(now_ms)
        day, month = periods_at(max(0, now_ms))
        self._state, outcome = try_reserve(
            self._state,
            session_id=session_id,
            provider=provider,
            amount_pico_usd=amount_pico_usd,
            day_index=day,
            month_index=month,
        )
        if isinstance(outcome, Reservation) and self._lease_ms is not None:
            self._lease_until_ms[outcome.reservation_id] = now_ms + self._lease_ms
        return outcome

    def _settle(self, reservation: Reservation, booked_pico_usd: int, *, succeeded: bool, now_ms: int) -> Settled:
        self._prepare(now_ms)
        if reservation not in self._state.open_reservations:
            return Settled.EXPIRED
        self._lease_until_ms.pop(reservation.reservation_id, None)
        settle = commit if succeeded else release
        self._state = settle(self._state, reservation, booked_pico_usd)
        return Settled.BOOKED

    async def commit(self, reservation: Reservation, actual_pico_usd: int, *, now_ms: int) -> Settled:
        """Book a finished call's real cost and free the rest of its reservation."""
        return self._settle(reservation, actual_pico_usd, succeeded=True, now_ms=now_ms)

    async def release(self, reservation: Reservation, billed_pico_usd: int = 0, *, now_ms: int) -> Settled:
        """End a failed attempt: free its reservation and book what was billed for it."""
        return self._settle(reservation, billed_pico_usd, succeeded=False, now_ms=now_ms)

    async def renew(self, reservation: Reservation, *, now_ms: int) -> bool:
        """Extend an open reservation's lease (a no-op without leases); False when it is not open."""
        self._prepare(now_ms)
        if reservation not in self._state.open_reservations:
            return False
        if self._lease_ms is not None:
            self._lease_until_ms[reservation.reservation_id] = now_ms + self._lease_ms
        return True

    async def roll_over(self, *, now_ms: int) -> None:
        """Roll the periods and expire lapsed leases."""
        self._prepare(now_ms)

    async def totals(self, *, now_ms: int) -> LedgerTotals:
        """Roll, expire, and return the counters."""
        self._prepare(now_ms)
        return totals_of(self._state)

    async def aclose(self) -> None:
        """Nothing to close."""
