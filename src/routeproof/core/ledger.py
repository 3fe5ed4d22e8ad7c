"""The budget ledger: reservation before a call, commit or release after it (seed 003 ``cost_budget``).

Money is integer pico-USD (1e-12 USD); prices, ``cost`` and the worst case of a request live in
:mod:`routeproof.core.pricing` and are re-exported here.

The ledger is a frozen :class:`LedgerState` and pure transitions:

* ``reserve(state, ...) -> (state, Reservation)`` books a call's worst-case cost against every scope
  before it is sent, or raises :class:`BudgetExhausted` naming the scope, the limit and what was asked;
* ``commit(state, reservation, actual_pico_usd)`` books the real cost and frees the rest;
* ``release(state, reservation, billed_pico_usd=0)`` ends a failed attempt (books what was billed).

Scopes (seed 003's table): per-turn is a *warning* (``Reservation.turn_warning``), per-session and
global monthly are hard limits, per-provider daily is a refusal with scope ``"provider_daily"`` so
the router skips that provider and goes on. Days and months are indices passed in
(:func:`periods_at` turns epoch milliseconds into them); they never move backwards.

The invariant (:func:`well_formed`): for every limited scope ``spent + reserved <= limit``, and each
scope's ``reserved`` is exactly the sum of its open reservations. The router applies each
transition with no ``await`` in between, so check-and-reserve is atomic by construction; concurrent
calls cannot push spend past a limit because each one must first fit its worst case in the headroom.
The one way past a limit is a provider billing more than the reserved worst case (a wrong price
or bound): that excess is booked anyway, never hidden, and counted in ``overrun_pico_usd``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace
from typing import TypeVar

import icontract

from routeproof.core.pricing import (
    PICO_USD_PER_USD,
    Price,
    PricingTable,
    cost,
    cost_pico_usd,
    format_usd,
    load_pricing,
    parse_usd,
    price_well_formed,
    worst_case_cost_pico_usd,
    worst_case_prompt_tokens,
)
from routeproof.core.types import ProviderId
from routeproof.errors import BudgetExhausted

__all__ = [
    "PICO_USD_PER_USD",
    "Account",
    "BudgetLimits",
    "BudgetScope",
    "LedgerState",
    "Price",
    "PricingTable",
    "Refusal",
    "Reservation",
    "account_after_reserve",
    "account_after_roll",
    "account_after_settle",
    "commit",
    "cost",
    "cost_pico_usd",
    "fits",
    "format_usd",
    "limits_ok",
    "load_pricing",
    "new_ledger",
    "parse_usd",
    "periods_at",
    "price_well_formed",
    "provider_daily_account",
    "release",
    "reserve",
    "roll_over",
    "session_account",
    "try_reserve",
    "well_formed",
    "with_limits",
    "worst_case_cost_pico_usd",
    "worst_case_prompt_tokens",
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
class Refusal:
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
            spent=f"{format_usd(self.spent_pico_usd)} (+{format_usd(self.reserved_pico_usd)} reserved)",
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
    return _limits_ok(limits)


def _limits_ok(limits: BudgetLimits) -> bool:
    values = [limits.turn_warning_pico_usd, limits.session_limit_pico_usd, limits.monthly_limit_pico_usd]
    values += [limit for _, limit in limits.provider_daily_pico_usd]
    return all(v is None or v >= 0 for v in values)


@icontract.require(_limits_ok, "limits must be >= 0")
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


# --- transitions ---------------------------------------------------------------------------------


_K = TypeVar("_K", str, ProviderId)


def _get(pairs: tuple[tuple[_K, Account], ...], key: _K) -> Account:
    for k, account in pairs:
        if k == key:
            return account
    return Account()


def _roll(state: LedgerState, day_index: int, month_index: int) -> LedgerState:
    # A new day empties the daily spend, a new month the monthly spend. Calls in flight keep their
    # reservations, which then count against the new period (conservative, and settle subtracts
    # exactly what was added). Periods never go back: a clock stepping backwards changes nothing.
    if day_index > state.day_index:
        state = replace(
            state,
            day_index=day_index,
            provider_daily=tuple((p, _roll_account(a)) for p, a in state.provider_daily),
        )
    if month_index > state.month_index:
        state = replace(state, month_index=month_index, monthly=_roll_account(state.monthly))
    return state


def _try_reserve(
    state: LedgerState,
    *,
    session_id: str,
    provider: ProviderId,
    amount_pico_usd: int,
    day_index: int,
    month_index: int,
) -> tuple[LedgerState, Reservation | Refusal]:
    state = _roll(state, day_index, month_index)
    limits = state.limits
    session = _get(state.sessions, session_id)
    daily = _get(state.provider_daily, provider)
    checks = (  # hard stops first: skipping to another provider cannot help them
        (BudgetScope.SESSION, session, limits.session_limit_pico_usd),
        (BudgetScope.MONTHLY, state.monthly, limits.monthly_limit_pico_usd),
        (BudgetScope.PROVIDER_DAILY, daily, limits.provider_limit(provider)),
    )
    for scope, account, limit in checks:
        if limit is not None and not fits(account.spent_pico_usd, account.reserved_pico_usd, amount_pico_usd, limit):
            return state, Refusal(
                scope=scope,
                limit_pico_usd=limit,
                requested_pico_usd=amount_pico_usd,
                spent_pico_usd=account.spent_pico_usd,
                reserved_pico_usd=account.reserved_pico_usd,
            )
    warn = limits.turn_warning_pico_usd is not None and amount_pico_usd > limits.turn_warning_pico_usd
    reservation = Reservation(
        reservation_id=state.next_reservation_id,
        session_id=session_id,
        provider=provider,
        amount_pico_usd=amount_pico_usd,
        turn_warning=warn,
    )
    return _book(state, reservation, +amount_pico_usd, 0, opening=True), reservation


def _put(pairs: tuple[tuple[_K, Account], ...], key: _K, account: Account) -> tuple[tuple[_K, Account], ...]:
    if any(k == key for k, _ in pairs):
        return tuple((k, account if k == key else a) for k, a in pairs)
    return pairs + ((key, account),)  # noqa: RUF005  # the unpacking form loses _K for mypy


def _shift(account: Account, reserved_delta: int, spent_delta: int) -> Account:
    return Account(
        spent_pico_usd=account.spent_pico_usd + spent_delta,
        reserved_pico_usd=account.reserved_pico_usd + reserved_delta,
    )


def _roll_account(account: Account) -> Account:
    return Account(spent_pico_usd=0, reserved_pico_usd=account.reserved_pico_usd)


# The per-account arithmetic every transition is made of, with its contracts stated on plain ints
# so that CrossHair can prove them (the state-level wrappers above hold tuples it cannot reach).


def _nonneg(account: Account) -> bool:
    return account.spent_pico_usd >= 0 and account.reserved_pico_usd >= 0


@icontract.require(_nonneg)
@icontract.require(lambda amount_pico_usd: amount_pico_usd >= 0)
@icontract.require(
    lambda account, amount_pico_usd, limit_pico_usd: fits(
        account.spent_pico_usd, account.reserved_pico_usd, amount_pico_usd, limit_pico_usd
    ),
    "reserve only what fits",
)
@icontract.ensure(lambda result: _nonneg(account=result))
@icontract.ensure(
    lambda limit_pico_usd, result: fits(result.spent_pico_usd, result.reserved_pico_usd, 0, limit_pico_usd)
)
@icontract.ensure(
    lambda account, amount_pico_usd, result: (
        result.reserved_pico_usd == account.reserved_pico_usd + amount_pico_usd
        and result.spent_pico_usd == account.spent_pico_usd
    )
)
def account_after_reserve(account: Account, amount_pico_usd: int, limit_pico_usd: int | None) -> Account:
    """One scope's counters after a reservation that fits: spent + reserved stays <= limit."""
    return _shift(account, amount_pico_usd, 0)


@icontract.require(_nonneg)
@icontract.require(lambda account, amount_pico_usd: 0 <= amount_pico_usd <= account.reserved_pico_usd)
@icontract.require(lambda amount_pico_usd, booked_pico_usd: 0 <= booked_pico_usd <= amount_pico_usd)
@icontract.require(
    lambda account, limit_pico_usd: fits(account.spent_pico_usd, account.reserved_pico_usd, 0, limit_pico_usd)
)
@icontract.ensure(lambda result: _nonneg(account=result))
@icontract.ensure(
    lambda limit_pico_usd, result: fits(result.spent_pico_usd, result.reserved_pico_usd, 0, limit_pico_usd)
)
@icontract.ensure(
    lambda account, amount_pico_usd, booked_pico_usd, result: (
        result.reserved_pico_usd == account.reserved_pico_usd - amount_pico_usd
        and result.spent_pico_usd == account.spent_pico_usd + booked_pico_usd
    )
)
def account_after_settle(
    account: Account, amount_pico_usd: int, booked_pico_usd: int, limit_pico_usd: int | None
) -> Account:
    """One scope's counters after a commit or release booking no more than was reserved: still within the limit."""
    return _shift(account, -amount_pico_usd, booked_pico_usd)


@icontract.require(_nonneg)
@icontract.ensure(
    lambda account, result: result.spent_pico_usd == 0 and result.reserved_pico_usd == account.reserved_pico_usd
)
@icontract.ensure(
    lambda account, limit_pico_usd, result: (
        not fits(account.spent_pico_usd, account.reserved_pico_usd, 0, limit_pico_usd)
        or fits(result.spent_pico_usd, result.reserved_pico_usd, 0, limit_pico_usd)
    ),
    "a new period keeps a scope within its limit",
)
def account_after_roll(account: Account, limit_pico_usd: int | None) -> Account:
    """One scope's counters in a new period: spend starts at 0, reservations in flight carry over."""
    return _roll_account(account)


def _book(
    state: LedgerState, reservation: Reservation, reserved_delta: int, spent_delta: int, *, opening: bool
) -> LedgerState:
    sessions = _put(
        state.sessions,
        reservation.session_id,
        _shift(_get(state.sessions, reservation.session_id), reserved_delta, spent_delta),
    )
    daily = _put(
        state.provider_daily,
        reservation.provider,
        _shift(_get(state.provider_daily, reservation.provider), reserved_delta, spent_delta),
    )
    return replace(
        state,
        monthly=_shift(state.monthly, reserved_delta, spent_delta),
        sessions=sessions,
        provider_daily=daily,
        open_reservations=(
            (*state.open_reservations, reservation)
            if opening
            else tuple(r for r in state.open_reservations if r.reservation_id != reservation.reservation_id)
        ),
        next_reservation_id=state.next_reservation_id + 1 if opening else state.next_reservation_id,
    )


def _settle(state: LedgerState, reservation: Reservation, booked_pico_usd: int) -> LedgerState:
    state = _book(state, reservation, -reservation.amount_pico_usd, booked_pico_usd, opening=False)
    excess = booked_pico_usd - reservation.amount_pico_usd
    return replace(state, overrun_pico_usd=state.overrun_pico_usd + excess) if excess > 0 else state


@icontract.require(well_formed)
@icontract.require(lambda amount_pico_usd: amount_pico_usd >= 0)
@icontract.ensure(lambda result: well_formed(result[0]))
@icontract.ensure(
    lambda state, result: isinstance(result[1], Refusal) or result[0].open_reservations[-1] == result[1],
    "a granted reservation is open",
)
@icontract.ensure(
    lambda state, amount_pico_usd, result: (
        isinstance(result[1], Reservation)
        or result[1].spent_pico_usd + result[1].reserved_pico_usd + amount_pico_usd > result[1].limit_pico_usd
    ),
    "a refusal is only given when the amount does not fit",
)
def try_reserve(
    state: LedgerState,
    *,
    session_id: str,
    provider: ProviderId,
    amount_pico_usd: int,
    day_index: int,
    month_index: int,
) -> tuple[LedgerState, Reservation | Refusal]:
    """Reserve ``amount_pico_usd`` in every scope, or say which scope refuses (session, then monthly,
    then provider_daily). The state returned with a Refusal has only rolled its periods over."""
    return _try_reserve(
        state,
        session_id=session_id,
        provider=provider,
        amount_pico_usd=amount_pico_usd,
        day_index=day_index,
        month_index=month_index,
    )


@icontract.require(well_formed)
@icontract.require(lambda amount_pico_usd: amount_pico_usd >= 0)
@icontract.ensure(lambda result: well_formed(result[0]))
@icontract.ensure(lambda amount_pico_usd, result: result[1].amount_pico_usd == amount_pico_usd)
def reserve(
    state: LedgerState,
    *,
    session_id: str,
    provider: ProviderId,
    amount_pico_usd: int,
    day_index: int,
    month_index: int,
) -> tuple[LedgerState, Reservation]:
    """Reserve a call's worst case before sending it; raise BudgetExhausted (scope ``"session"``,
    ``"monthly"`` or ``"provider_daily"``, with the limit and the amount asked) when it does not fit.
    ``result[1].turn_warning`` says the per-turn warning threshold applies.

    :raises BudgetExhausted: when a session, monthly or provider-daily limit would be passed.
    """
    new_state, outcome = _try_reserve(
        state,
        session_id=session_id,
        provider=provider,
        amount_pico_usd=amount_pico_usd,
        day_index=day_index,
        month_index=month_index,
    )
    if isinstance(outcome, Refusal):
        raise outcome.to_error()
    return new_state, outcome


@icontract.require(well_formed)
@icontract.require(lambda state, reservation: reservation in state.open_reservations, "reservation must be open")
@icontract.require(lambda actual_pico_usd: actual_pico_usd >= 0)
@icontract.ensure(lambda result: well_formed(state=result))
@icontract.ensure(lambda reservation, result: reservation not in result.open_reservations)
@icontract.ensure(
    lambda state, actual_pico_usd, result: (
        result.monthly.spent_pico_usd == state.monthly.spent_pico_usd + actual_pico_usd
    )
)
def commit(state: LedgerState, reservation: Reservation, actual_pico_usd: int) -> LedgerState:
    """Book a finished call's real cost and free the rest of its reservation. A cost above the
    reservation is booked too (money spent is never hidden) and added to ``overrun_pico_usd``."""
    return _settle(state, reservation, actual_pico_usd)


@icontract.require(well_formed)
@icontract.require(lambda state, reservation: reservation in state.open_reservations, "reservation must be open")
@icontract.require(lambda billed_pico_usd: billed_pico_usd >= 0)
@icontract.ensure(lambda result: well_formed(state=result))
@icontract.ensure(lambda reservation, result: reservation not in result.open_reservations)
@icontract.ensure(
    lambda state, reservation, result: (
        result.monthly.reserved_pico_usd == state.monthly.reserved_pico_usd - reservation.amount_pico_usd
    )
)
def release(state: LedgerState, reservation: Reservation, billed_pico_usd: int = 0) -> LedgerState:
    """End a failed attempt: free its reservation and book what the provider billed for it (often 0)."""
    return _settle(state, reservation, billed_pico_usd)


@icontract.require(well_formed)
@icontract.require(_limits_ok, "limits must be >= 0")
@icontract.require(
    lambda state, limits: well_formed(replace(state, limits=limits)),
    "new limits must hold what is already spent and reserved",
)
@icontract.ensure(lambda result: well_formed(state=result))
@icontract.ensure(lambda limits, result: result.limits == limits)
def with_limits(state: LedgerState, limits: BudgetLimits) -> LedgerState:
    """Replace the limits: the explicit user override a monthly (or any) hard stop needs. Raising a
    limit is always allowed; lowering one below what is already spent plus reserved is refused."""
    return replace(state, limits=limits)


@icontract.require(well_formed)
@icontract.ensure(lambda result: result.spent_pico_usd >= 0 and result.reserved_pico_usd >= 0)
def session_account(state: LedgerState, session_id: str) -> Account:
    """The session's counters (zero for a session never seen)."""
    return _get(state.sessions, session_id)


@icontract.require(well_formed)
@icontract.ensure(lambda result: result.spent_pico_usd >= 0 and result.reserved_pico_usd >= 0)
def provider_daily_account(state: LedgerState, provider: ProviderId) -> Account:
    """The provider's counters for the current day (zero when never used)."""
    return _get(state.provider_daily, provider)


@icontract.require(well_formed)
@icontract.ensure(lambda result: well_formed(state=result))
@icontract.ensure(
    lambda state, day_index, month_index, result: (
        result.day_index == max(state.day_index, day_index)
        and result.month_index == max(state.month_index, month_index)
    )
)
@icontract.ensure(lambda state, result: result.open_reservations == state.open_reservations)
def roll_over(state: LedgerState, *, day_index: int, month_index: int) -> LedgerState:
    """Move the ledger into the given day and month (the roll ``reserve`` does first): a new day
    empties the daily spend, a new month the monthly spend, reservations in flight carry over, and
    a period earlier than the current one changes nothing. Ledger stores roll before every operation."""
    return _roll(state, day_index, month_index)
