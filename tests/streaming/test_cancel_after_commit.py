"""A stream cancelled in the last await of the driver: after the attempt committed, while an unused
admission place goes back to the traffic store (a Redis round trip in production). Nobody will relay
that stream, so the driver ends it: its reservation is booked (the reserved worst case, as any stream
cut before its usage) and its response closed; nothing stays open until a lease runs out."""

from __future__ import annotations

import asyncio

import pytest

from routeproof.call import Call
from routeproof.core.ledger import BudgetLimits, session_account
from routeproof.core.pricing import parse_usd
from routeproof.core.types import ProviderKind
from routeproof.mock import Scripted
from tests.streaming.harness import deadline, fleet, open_stream, policy

pytestmark = pytest.mark.asyncio

LIMIT_S = 20  # wall bound (real sockets)


async def test_a_cancel_while_the_preset_goes_back_ends_the_committed_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    """The call is cancelled inside ``release_preset`` after its stream committed: the cancellation
    reaches the caller and the stream's reservation is booked at once (none left open)."""
    entered = asyncio.Event()

    async def slow_release(self: Call) -> None:  # the store's round trip, long enough to be cancelled in
        entered.set()
        await asyncio.sleep(3600)

    monkeypatch.setattr(Call, "release_preset", slow_release)
    budget = BudgetLimits(session_limit_pico_usd=parse_usd("1.00"))
    async with asyncio.timeout(LIMIT_S), fleet(budget=budget) as f:
        f.anthropic.script(Scripted(delay_between_chunks_s=0.2))
        stream = open_stream(f, policy(ProviderKind.ANTHROPIC), deadline(10.0))
        first = asyncio.ensure_future(anext(stream))
        await entered.wait()  # the attempt committed; the driver is giving the preset back
        assert f.router.ledger is not None
        assert len(f.router.ledger.open_reservations) == 1  # the committed stream's
        first.cancel()
        with pytest.raises(asyncio.CancelledError):
            await first
        assert not f.router.ledger.open_reservations  # booked now, not left to a lease
        assert session_account(f.router.ledger, "default").spent_pico_usd > 0  # the reserved worst case
