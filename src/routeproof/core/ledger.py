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

from dataclasses import replace

import icontract

from routeproof.core.errors import BudgetExhausted  # noqa: F401  # named by reserve's ``:raises:`` line, which CrossHair resolves here
from routeproof.core.ledger_lemmas import account_after_reserve, account_after_roll, account_after_settle
from routeproof.core.ledger_state import (
    MS_PER_DAY,
    Account,
    BudgetLimits,
    BudgetRefusal,
    BudgetScope,
    LedgerState,
    Reservation,
    account_of,
    fits,
    limits_ok,
    new_ledger,
    periods_at,
    rolled,
    shifted,
    well_formed,
    with_account,
)
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

__all__ = [
    "MS_PER_DAY",
    "PICO_USD_PER_USD",
    "Account",
    "BudgetLimits",
    "BudgetRefusal",
    "BudgetScope",
    "LedgerState",
    "Price",
    "PricingTable",
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


# --- transitions ---------------------------------------------------------------------------------


def _roll(state: LedgerState, day_index: int, month_index: int) -> LedgerState:
    # A new day empties the daily spend, a new month the monthly spend. Calls in flight keep their
    # reservations, which then count against the new period (conservative, and settle subtracts
    # exactly what was added). Periods never go back: a clock stepping backwards changes nothing.
    if day_index > state.day_index:
        state = replace(
            state,
            day_index=day_index,
            provider_daily=tuple((p, rolled(a)) for p, a in state.provider_daily),
        )
    if month_index > state.month_index:
        state = replace(state, month_index=month_index, monthly=rolled(state.monthly))
    return state


def _try_reserve(
    state: LedgerState,
    *,
    session_id: str,
    provider: ProviderId,
    amount_pico_usd: int,
    day_index: int,
    month_index: int,
) -> tuple[LedgerState, Reservation | BudgetRefusal]:
    state = _roll(state, day_index, month_index)
    limits = state.limits
    session = account_of(state.sessions, session_id)
    daily = account_of(state.provider_daily, provider)
    checks = (  # hard stops first: skipping to another provider cannot help them
        (BudgetScope.SESSION, session, limits.session_limit_pico_usd),
        (BudgetScope.MONTHLY, state.monthly, limits.monthly_limit_pico_usd),
        (BudgetScope.PROVIDER_DAILY, daily, limits.provider_limit(provider)),
    )
    for scope, account, limit in checks:
        if limit is not None and not fits(account.spent_pico_usd, account.reserved_pico_usd, amount_pico_usd, limit):
            return state, BudgetRefusal(
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


def _book(
    state: LedgerState, reservation: Reservation, reserved_delta: int, spent_delta: int, *, opening: bool
) -> LedgerState:
    sessions = with_account(
        state.sessions,
        reservation.session_id,
        shifted(account_of(state.sessions, reservation.session_id), reserved_delta, spent_delta),
    )
    daily = with_account(
        state.provider_daily,
        reservation.provider,
        shifted(account_of(state.provider_daily, reservation.provider), reserved_delta, spent_delta),
    )
    return replace(
        state,
        monthly=shifted(state.monthly, reserved_delta, spent_delta),
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
    lambda state, result: isinstance(result[1], BudgetRefusal) or result[0].open_reservations[-1] == result[1],
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
) -> tuple[LedgerState, Reservation | BudgetRefusal]:
    """Reserve ``amount_pico_usd`` in every scope, or say which scope refuses (session, then monthly,
    then provider_daily). The state returned with a BudgetRefusal has only rolled its periods over."""
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
    if isinstance(outcome, BudgetRefusal):
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
@icontract.require(limits_ok, "limits must be >= 0")
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
    return account_of(state.sessions, session_id)


@icontract.require(well_formed)
@icontract.ensure(lambda result: result.spent_pico_usd >= 0 and result.reserved_pico_usd >= 0)
def provider_daily_account(state: LedgerState, provider: ProviderId) -> Account:
    """The provider's counters for the current day (zero when never used)."""
    return account_of(state.provider_daily, provider)


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
