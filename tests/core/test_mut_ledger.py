"""The ledger's invariant clause by clause, its calendar against the standard library, and overrun at its edge."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, date, datetime

from routeproof.core.ledger import (
    MS_PER_DAY,
    Account,
    BudgetLimits,
    LedgerState,
    commit,
    new_ledger,
    periods_at,
    reserve,
    well_formed,
)
from routeproof.core.types import ProviderKind

A, B = ProviderKind.ANTHROPIC, ProviderKind.OPENAI


def _two_open() -> LedgerState:
    """A ledger with two open reservations of 5 (ids 0 and 1) in session 's' on A."""
    state = new_ledger(BudgetLimits())
    state, _ = reserve(state, session_id="s", provider=A, amount_pico_usd=5, day_index=0, month_index=0)
    state, _ = reserve(state, session_id="s", provider=A, amount_pico_usd=5, day_index=0, month_index=0)
    return state


def _calendar_days() -> list[int]:
    """Every 29th day from 1970 to 2517, and two days either side of each year's 1 January and 1 March."""
    epoch = date(1970, 1, 1)
    edges = [
        (date(year, month, 1) - epoch).days + delta
        for year in range(1970, 2518)
        for month in (1, 3)
        for delta in (-2, -1, 0, 1)
    ]
    return sorted({*range(0, 200_000, 29), *(d for d in edges if d >= 0)})


def test_periods_at_agrees_with_the_standard_library_calendar() -> None:
    """Day and month indexes are ints matching datetime's UTC calendar, century and 400-year leap rules included."""
    for day in _calendar_days():
        epoch_ms = day * MS_PER_DAY + 43_200_000
        when = datetime.fromtimestamp(epoch_ms / 1000, tz=UTC)
        result = periods_at(epoch_ms)
        assert result == (day, when.year * 12 + when.month - 1), when
        assert all(type(index) is int for index in result)


def test_a_fresh_and_a_used_ledger_are_well_formed() -> None:
    """An empty ledger and one with two open reservations satisfy the invariant."""
    assert well_formed(LedgerState())
    assert well_formed(_two_open())


def test_negative_counters_break_the_invariant_each_alone() -> None:
    """A negative next id, or a negative overrun, alone makes the ledger ill formed."""
    assert not well_formed(LedgerState(next_reservation_id=-1))
    assert not well_formed(LedgerState(overrun_pico_usd=-1))


def test_open_reservation_ids_must_be_unique_and_already_issued() -> None:
    """Two open reservations with one id, or an id not below next_reservation_id, break the invariant."""
    state = _two_open()
    first, second = state.open_reservations
    assert not well_formed(replace(state, open_reservations=(first, replace(second, reservation_id=0))))
    assert not well_formed(replace(state, next_reservation_id=1))


def test_a_negative_reservation_breaks_the_invariant_even_when_the_sums_agree() -> None:
    """An open reservation of a negative amount is ill formed, even with every account summing to it."""
    state = _two_open()
    first, second = state.open_reservations
    minus = Account(reserved_pico_usd=0)
    bad = replace(
        state,
        open_reservations=(first, replace(second, amount_pico_usd=-5)),
        monthly=minus,
        sessions=(("s", minus),),
        provider_daily=((A, minus),),
    )
    assert not well_formed(bad)


def test_a_session_or_provider_over_its_limit_breaks_the_invariant() -> None:
    """A session account past the session limit, or a provider's past its daily limit, is ill formed."""
    over = Account(spent_pico_usd=20)
    session = LedgerState(limits=BudgetLimits(session_limit_pico_usd=10), monthly=over, sessions=(("s", over),))
    assert not well_formed(session)
    assert well_formed(replace(session, limits=BudgetLimits()))
    daily = LedgerState(
        limits=BudgetLimits(provider_daily_pico_usd=((A, 10),)), monthly=over, provider_daily=((A, over),)
    )
    assert not well_formed(daily)
    assert well_formed(replace(daily, provider_daily=((B, over),)))


def test_a_session_or_provider_listed_twice_breaks_the_invariant() -> None:
    """Each session and each provider has one account."""
    empty = Account()
    assert not well_formed(LedgerState(sessions=(("s", empty), ("s", empty))))
    assert not well_formed(LedgerState(provider_daily=((A, empty), (A, empty))))


def test_a_cost_one_above_the_reservation_is_one_of_overrun() -> None:
    """Committing one pico-USD more than reserved books it and counts one of overrun; the exact amount counts none."""
    state = new_ledger(BudgetLimits())
    state, reservation = reserve(state, session_id="s", provider=A, amount_pico_usd=5, day_index=0, month_index=0)
    assert commit(state, reservation, 6).overrun_pico_usd == 1
    assert commit(state, reservation, 5).overrun_pico_usd == 0
    assert commit(state, reservation, 6).monthly == Account(spent_pico_usd=6, reserved_pico_usd=0)


def test_a_new_day_and_month_roll_once_and_are_remembered() -> None:
    """After rolling into day 1 and month 1, a second call in the same period keeps the spend booked there."""
    state = new_ledger(BudgetLimits())
    state, first = reserve(state, session_id="s", provider=A, amount_pico_usd=5, day_index=1, month_index=1)
    state = commit(state, first, 5)
    assert (state.day_index, state.month_index) == (1, 1)
    state, _ = reserve(state, session_id="s", provider=A, amount_pico_usd=5, day_index=1, month_index=1)
    assert state.provider_daily == ((A, Account(spent_pico_usd=5, reserved_pico_usd=5)),)
    assert state.monthly == Account(spent_pico_usd=5, reserved_pico_usd=5)


def test_reservation_ids_count_up_by_one_and_settling_issues_none() -> None:
    """Reservations get ids 0, 1, 2; commit issues no id."""
    state = new_ledger(BudgetLimits())
    ids = []
    for _ in range(3):
        state, reservation = reserve(state, session_id="s", provider=A, amount_pico_usd=1, day_index=0, month_index=0)
        ids.append(reservation.reservation_id)
    assert ids == [0, 1, 2]
    assert state.next_reservation_id == 3
    assert commit(state, reservation, 1).next_reservation_id == 3
