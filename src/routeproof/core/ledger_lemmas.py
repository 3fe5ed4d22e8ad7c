"""Proof-only lemmas of the budget ledger: per-account arithmetic stated on plain ints for CrossHair.

No production code calls these functions. Every ledger transition (reserve, commit/release, period
roll-over) is made of one per-account step: :func:`~routeproof.core.ledger_state.shifted` or
:func:`~routeproof.core.ledger_state.rolled`. The state-level contracts in ``ledger.py`` hold
tuples CrossHair cannot reach through, so each step is restated here as a function whose
icontract conditions CrossHair proves (``tools/run_crosshair.py`` checks this module):

* :func:`account_after_reserve` proves that reserving an amount that fits keeps
  ``spent + reserved <= limit``, adds exactly the amount to ``reserved`` and leaves ``spent`` alone;
* :func:`account_after_settle` proves that a commit or release booking no more than was reserved
  keeps ``spent + reserved <= limit``, removes the reservation and adds exactly what was booked;
* :func:`account_after_roll` proves that a new period zeroes spend, carries reservations over, and
  never takes a scope that was within its limit outside it.

Tests that exercise them: ``tests/core/test_ledger.py``. ``routeproof.core.ledger`` re-exports them.
"""

from __future__ import annotations

import icontract

from routeproof.core.ledger_state import Account, fits, rolled, shifted

__all__ = ["account_after_reserve", "account_after_roll", "account_after_settle"]


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
    return shifted(account, amount_pico_usd, 0)


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
    return shifted(account, -amount_pico_usd, booked_pico_usd)


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
    return rolled(account)
