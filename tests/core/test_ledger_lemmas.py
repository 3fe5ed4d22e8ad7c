"""The ledger's proof lemmas (core/ledger_lemmas.py) hold at run time too, not only under CrossHair."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from routeproof.core.ledger_lemmas import account_after_reserve, account_after_roll, account_after_settle
from routeproof.core.ledger_state import Account, fits

money = st.integers(min_value=0, max_value=10**15)
limits = st.none() | money


@given(spent=money, reserved=money, amount=money, limit=limits)
def test_reserve_keeps_the_scope_within_its_limit(spent: int, reserved: int, amount: int, limit: int | None) -> None:
    """Reserving an amount that fits adds it to reserved, leaves spent, and stays within the limit."""
    if not fits(spent, reserved, amount, limit):
        return
    after = account_after_reserve(Account(spent_pico_usd=spent, reserved_pico_usd=reserved), amount, limit)
    assert (after.spent_pico_usd, after.reserved_pico_usd) == (spent, reserved + amount)
    assert fits(after.spent_pico_usd, after.reserved_pico_usd, 0, limit)


@given(spent=money, reserved=money, data=st.data(), limit=limits)
def test_settle_books_no_more_than_reserved_and_stays_within(
    spent: int, reserved: int, data: st.DataObject, limit: int | None
) -> None:
    """Settling part of what was reserved frees it, books what was billed, and stays within the limit."""
    if not fits(spent, reserved, 0, limit):
        return
    amount = data.draw(st.integers(min_value=0, max_value=reserved))
    booked = data.draw(st.integers(min_value=0, max_value=amount))
    after = account_after_settle(Account(spent_pico_usd=spent, reserved_pico_usd=reserved), amount, booked, limit)
    assert (after.spent_pico_usd, after.reserved_pico_usd) == (spent + booked, reserved - amount)
    assert fits(after.spent_pico_usd, after.reserved_pico_usd, 0, limit)


@given(spent=money, reserved=money, limit=limits)
def test_roll_zeroes_spend_and_carries_reservations(spent: int, reserved: int, limit: int | None) -> None:
    """A new period starts spend at 0 and keeps what is reserved for calls in flight."""
    after = account_after_roll(Account(spent_pico_usd=spent, reserved_pico_usd=reserved), limit)
    assert (after.spent_pico_usd, after.reserved_pico_usd) == (0, reserved)
