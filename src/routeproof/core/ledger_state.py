"""The ledger's values and its invariant: what a budget state is, and what makes one well formed.

:class:`LedgerState` (scopes' :class:`Account` counters, open :class:`Reservation` s, limits), the
invariant :func:`well_formed` every transition in :mod:`routeproof.core.ledger` keeps, the period
arithmetic (:func:`periods_at`), and the per-account helpers the transitions are made of. Money is
integer pico-USD. No transition lives here; ``routeproof.core.ledger`` re-exports every public name.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TypeVar

import icontract

from routeproof.core.errors import BudgetExhausted
from routeproof.core.pricing import format_usd
from routeproof.core.types import ProviderId

__all__ = [
    "MS_PER_DAY",
    "Account",
    "BudgetLimits",
    "BudgetRefusal",
    "BudgetScope",
    "LedgerState",
    "Reservation",
    "account_of",
    "fits",
    "limits_ok",
    "new_ledger",
    "periods_at",
    "rolled",
    "shifted",
    "well_formed",
    "with_account",
]

MS_PER_DAY = 86_400_000


class BudgetScope(enum.Enum):
    """The budget scopes of seed 003; the value is the ``scope`` a BudgetExhausted carries."""

    TURN = "turn"  # warning only
    SESSION = "session"
    PROVIDER_DAILY = "provider_daily"
    MONTHLY = "monthly"


@dataclass(frozen=True, slots=True, kw_only=True)
class BudgetLimits:
    """Limits in pico-USD; None means unlimited. ``provider_daily`` lists (provider, daily limit)."""

    turn_warning_pico_usd: int | None = None
    session_limit_pico_usd: int | None = None
    monthly_limit_pico_usd: int | None = None
    provider_daily_pico_usd: tuple[tuple[ProviderId, int], ...] = ()

    def provider_limit(self, provider: ProviderId) -> int | None:
        """The daily limit of ``provider``, or None when it has none."""
        for kind, limit in self.provider_daily_pico_usd:
            if kind == provider:
                return limit
        return None


@dataclass(frozen=True, slots=True, kw_only=True)
class Account:
    """One scope's counters in pico-USD: booked spend and the worst cases of calls in flight."""

    spent_pico_usd: int = 0
    reserved_pico_usd: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class Reservation:
    """A call's booked worst case; hand it back to :func:`commit` or :func:`release` exactly once."""

    reservation_id: int
    session_id: str
    provider: ProviderId
    amount_pico_usd: int
    turn_warning: bool = False  # the worst case exceeds the per-turn warning threshold


@dataclass(frozen=True, slots=True, kw_only=True)
class BudgetRefusal:
    """Why a reservation was refused: the scope, its limit, what was asked, what was already used."""

    scope: BudgetScope
    limit_pico_usd: int
    requested_pico_usd: int
    spent_pico_usd: int
    reserved_pico_usd: int

    def to_error(self) -> BudgetExhausted:
        """The BudgetExhausted to raise, with human amounts (``$0.01``)."""
        return BudgetExhausted(
            self.scope.value,
            format_usd(self.limit_pico_usd),
            format_usd(self.requested_pico_usd),
            spent=(
                f"{format_usd(self.spent_pico_usd)} spent + {format_usd(self.reserved_pico_usd)} reserved by calls in "
                f"flight + {format_usd(self.requested_pico_usd)} requested > {format_usd(self.limit_pico_usd)} limit"
            ),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class LedgerState:
    """All budget counters. Sessions and providers get an account on first use."""

    limits: BudgetLimits = BudgetLimits()
    day_index: int = 0
    month_index: int = 0
    monthly: Account = Account()
    sessions: tuple[tuple[str, Account], ...] = ()
    provider_daily: tuple[tuple[ProviderId, Account], ...] = ()
    open_reservations: tuple[Reservation, ...] = ()
    next_reservation_id: int = 0
    overrun_pico_usd: int = 0


# --- the invariant -------------------------------------------------------------------------------


def fits(spent_pico_usd: int, reserved_pico_usd: int, amount_pico_usd: int, limit_pico_usd: int | None) -> bool:
    """Whether ``amount`` fits under ``limit`` on top of what is spent and reserved."""
    return limit_pico_usd is None or spent_pico_usd + reserved_pico_usd + amount_pico_usd <= limit_pico_usd


def _account_ok(account: Account, limit: int | None, slack: int, open_sum: int) -> bool:
    return (
        account.spent_pico_usd >= 0
        and account.reserved_pico_usd == open_sum
        and fits(account.spent_pico_usd, account.reserved_pico_usd, 0, None if limit is None else limit + slack)
    )


def well_formed(state: LedgerState) -> bool:
    """The ledger invariant: counters non-negative, every scope's ``reserved`` equal to the sum of
    its open reservations, and ``spent + reserved <= limit (+ overrun)`` for every limited scope."""
    opened = state.open_reservations
    ids = [r.reservation_id for r in opened]
    if (
        state.next_reservation_id < 0
        or state.overrun_pico_usd < 0
        or len(set(ids)) != len(ids)
        or any(not 0 <= i < state.next_reservation_id for i in ids)
    ):
        return False
    if any(r.amount_pico_usd < 0 for r in opened):
        return False
    slack = state.overrun_pico_usd
    if not _account_ok(
        state.monthly, state.limits.monthly_limit_pico_usd, slack, sum(r.amount_pico_usd for r in opened)
    ):
        return False
    for session_id, account in state.sessions:
        open_sum = sum(r.amount_pico_usd for r in opened if r.session_id == session_id)
        if not _account_ok(account, state.limits.session_limit_pico_usd, slack, open_sum):
            return False
    for provider, account in state.provider_daily:
        open_sum = sum(r.amount_pico_usd for r in opened if r.provider == provider)
        if not _account_ok(account, state.limits.provider_limit(provider), slack, open_sum):
            return False
    return len({s for s, _ in state.sessions}) == len(state.sessions) and len(
        {p for p, _ in state.provider_daily}
    ) == len(state.provider_daily)


def limits_ok(limits: BudgetLimits) -> bool:
    """Every limit is None or a non-negative int (what :func:`with_limits` requires)."""
    values = [limits.turn_warning_pico_usd, limits.session_limit_pico_usd, limits.monthly_limit_pico_usd]
    values += [limit for _, limit in limits.provider_daily_pico_usd]
    return all(v is None or v >= 0 for v in values)


@icontract.require(limits_ok, "limits must be >= 0")
@icontract.ensure(lambda result: well_formed(state=result))
def new_ledger(limits: BudgetLimits, *, day_index: int = 0, month_index: int = 0) -> LedgerState:
    """An empty ledger with ``limits``, starting in the given day and month."""
    return LedgerState(limits=limits, day_index=day_index, month_index=month_index)


# --- periods -------------------------------------------------------------------------------------


def _periods_at(epoch_ms: int) -> tuple[int, int]:
    day = epoch_ms // MS_PER_DAY
    # civil_from_days (H. Hinnant), integers only: the proleptic Gregorian UTC date of ``day``.
    z = day + 719_468
    era = z // 146_097
    doe = z - era * 146_097
    yoe = (doe - doe // 1460 + doe // 36_524 - doe // 146_096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    month = mp + 3 if mp < 10 else mp - 9
    year = yoe + era * 400 + (1 if month <= 2 else 0)
    return day, year * 12 + month - 1


@icontract.require(lambda epoch_ms: epoch_ms >= 0)
@icontract.ensure(lambda epoch_ms, result: result[0] == epoch_ms // MS_PER_DAY)
@icontract.ensure(lambda result: result[1] >= 1970 * 12, "on or after January 1970")
@icontract.ensure(
    lambda epoch_ms, result: _periods_at(epoch_ms + MS_PER_DAY)[1] in (result[1], result[1] + 1),
    "a day later is the same month or the next",
)
def periods_at(epoch_ms: int) -> tuple[int, int]:
    """(UTC day index since 1970-01-01, month index ``year * 12 + month - 1``) of a Unix time in ms."""
    return _periods_at(epoch_ms)


# --- per-account helpers -------------------------------------------------------------------------


_K = TypeVar("_K", str, ProviderId)


def account_of(pairs: tuple[tuple[_K, Account], ...], key: _K) -> Account:
    """The account kept under ``key`` (a fresh, empty one when there is none)."""
    for k, account in pairs:
        if k == key:
            return account
    return Account()


def with_account(pairs: tuple[tuple[_K, Account], ...], key: _K, account: Account) -> tuple[tuple[_K, Account], ...]:
    """``pairs`` with ``key``'s account replaced (or appended when new), order kept."""
    if any(k == key for k, _ in pairs):
        return tuple((k, account if k == key else a) for k, a in pairs)
    return pairs + ((key, account),)  # noqa: RUF005  # the unpacking form loses _K for mypy


def shifted(account: Account, reserved_delta: int, spent_delta: int) -> Account:
    """The account with both counters moved by the given deltas."""
    return Account(
        spent_pico_usd=account.spent_pico_usd + spent_delta,
        reserved_pico_usd=account.reserved_pico_usd + reserved_delta,
    )


def rolled(account: Account) -> Account:
    """The account in a new period: spend starts at 0, reservations in flight carry over."""
    return Account(spent_pico_usd=0, reserved_pico_usd=account.reserved_pico_usd)
