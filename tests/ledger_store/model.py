"""The reference model for the differential tests: the pure ledger plus the leases' crash rule.

Every store operation is "roll, expire, act" (see routeproof.ledger_store.protocol); this is that
sentence written with :mod:`routeproof.core.ledger`'s own functions and nothing else.
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
from routeproof.core.types import ProviderKind
from routeproof.ledger_store import LedgerTotals, Settled, totals_of

__all__ = ["Model", "comparable", "same_outcome"]


class Model:
    """The pure ledger, its leases, and the operations a store performs."""

    def __init__(self, limits: BudgetLimits, lease_ms: int) -> None:
        self.limits = limits
        self.lease_ms = lease_ms
        self.state: LedgerState = new_ledger(limits)
        self.lease_until_ms: dict[int, int] = {}

    def copy(self) -> Model:
        """An independent copy (the state is frozen; the leases are copied)."""
        twin = Model(self.limits, self.lease_ms)
        twin.state = self.state
        twin.lease_until_ms = dict(self.lease_until_ms)
        return twin

    def prepare(self, now_ms: int) -> None:
        """Roll the periods, then book every lapsed lease at its worst case."""
        day, month = periods_at(now_ms)
        self.state = roll_over(self.state, day_index=day, month_index=month)
        for rid in sorted(r for r, until in self.lease_until_ms.items() if until <= now_ms):
            del self.lease_until_ms[rid]
            held = next(r for r in self.state.open_reservations if r.reservation_id == rid)
            self.state = commit(self.state, held, held.amount_pico_usd)

    def try_reserve(
        self, *, session_id: str, provider: ProviderKind, amount_pico_usd: int, now_ms: int
    ) -> Reservation | BudgetRefusal:
        """Roll, expire, reserve."""
        self.prepare(now_ms)
        day, month = periods_at(now_ms)
        self.state, outcome = try_reserve(
            self.state,
            session_id=session_id,
            provider=provider,
            amount_pico_usd=amount_pico_usd,
            day_index=day,
            month_index=month,
        )
        if isinstance(outcome, Reservation):
            self.lease_until_ms[outcome.reservation_id] = now_ms + self.lease_ms
        return outcome

    def settle(self, reservation: Reservation, booked_pico_usd: int, *, succeeded: bool, now_ms: int) -> Settled:
        """Roll, expire, commit or release (EXPIRED when the lease already booked it)."""
        self.prepare(now_ms)
        if reservation not in self.state.open_reservations:
            return Settled.EXPIRED
        del self.lease_until_ms[reservation.reservation_id]
        self.state = (commit if succeeded else release)(self.state, reservation, booked_pico_usd)
        return Settled.BOOKED

    def totals(self, now_ms: int) -> LedgerTotals:
        """Roll, expire, snapshot."""
        self.prepare(now_ms)
        return totals_of(self.state)


def comparable(totals: LedgerTotals) -> tuple[object, ...]:
    """A snapshot with reservation ids left out (each store numbers its own)."""
    return (
        totals.day_index,
        totals.month_index,
        totals.monthly,
        totals.sessions,
        totals.provider_daily,
        sorted((r.session_id, r.provider.value, r.amount_pico_usd, r.turn_warning) for r in totals.open_reservations),
        totals.overrun_pico_usd,
    )


def same_outcome(a: Reservation | BudgetRefusal, b: Reservation | BudgetRefusal) -> bool:
    """Equal refusals, or reservations equal in everything but their id."""
    if isinstance(a, BudgetRefusal) or isinstance(b, BudgetRefusal):
        return a == b
    return (a.session_id, a.provider, a.amount_pico_usd, a.turn_warning) == (
        b.session_id,
        b.provider,
        b.amount_pico_usd,
        b.turn_warning,
    )
