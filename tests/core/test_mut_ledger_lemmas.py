"""The ledger lemmas refuse an account with a negative counter (their non-negativity precondition)."""

from __future__ import annotations

import icontract
import pytest

from routeproof.core.ledger_lemmas import account_after_reserve, account_after_settle
from routeproof.core.ledger_state import Account


@pytest.mark.parametrize(
    "account", [Account(spent_pico_usd=-1, reserved_pico_usd=5), Account(spent_pico_usd=5, reserved_pico_usd=-1)]
)
def test_reserve_refuses_an_account_with_one_negative_counter(account: Account) -> None:
    """Either counter below zero alone breaks reserve's precondition, even with no limit."""
    with pytest.raises(icontract.ViolationError):
        account_after_reserve(account, 0, None)


def test_settle_refuses_a_negative_spend() -> None:
    """A negative spend alone breaks settle's precondition, even with no limit."""
    with pytest.raises(icontract.ViolationError):
        account_after_settle(Account(spent_pico_usd=-1, reserved_pico_usd=5), 0, 0, None)
