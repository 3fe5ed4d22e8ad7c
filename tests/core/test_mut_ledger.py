"""The ledger's invariant clause by clause, its calendar against the standard library, and overrun at its edge."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

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


def test_periods_at_agrees_with_the_standard_library_calendar() -> None:
    """Day and month indexes match datetime's UTC calendar across 1970-2517, leap and century years included."""
    for day in [*range(0, 200_000, 29), *range(10_950, 11_020), *range(47_430, 47_500), *range(157_000, 157_100)]:
        epoch_ms = day * MS_PER_DAY + 43_200_000
        date = datetime.fromtimestamp(epoch_ms / 1000, tz=UTC)
        assert periods_at(epoch_ms) == (day, date.year * 12 + date.month - 1), date


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
