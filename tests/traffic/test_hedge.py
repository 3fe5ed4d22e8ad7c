"""The hedge race in the shell (routeproof.hedging), on virtual time: the first answer wins, the loser
is cancelled, recorded and billed; the ratio, the deadline and the money budget bound it."""

from __future__ import annotations

import asyncio
import random

import pytest

from routeproof.core.balance import Member
from routeproof.core.hedge import HedgePolicy
from routeproof.core.ledger import BudgetLimits
from routeproof.core.pricing import cost_pico_usd, load_pricing, worst_case_cost_pico_usd
from routeproof.core.types import AttemptFailure, AttemptFailureKind, AttemptStatus, ProviderKind, Usage
from routeproof.router import Router
from routeproof.router_options import BudgetOptions
from routeproof.testing import Failure, Reply, ScriptedProvider
from routeproof.traffic import TrafficConfig
from tests.traffic.support import ALIAS, policy, request, resolved

pytestmark = [pytest.mark.asyncio, pytest.mark.looptime(end=600)]

PRICING = load_pricing('[openai."m"]\ninput_per_mtok = 1.00\noutput_per_mtok = 2.00\n')
GROUP = {"a": Member(priority=0), "b": Member(priority=0)}
USAGE = Usage(prompt_tokens=10, completion_tokens=5)


def hedged(ratio_milli: int = 1000, delay_ms: int = 300) -> TrafficConfig:
    """a and b in one group, the alias hedged after ``delay_ms``."""
    return TrafficConfig(
        members=GROUP, hedges={ALIAS: HedgePolicy(delay_ms=delay_ms, max_extra_ratio_milli=ratio_milli)}
    )


def pair(a: ScriptedProvider, b: ScriptedProvider, traffic: TrafficConfig, **kwargs: object) -> Router:
    """A router over a (first) and b."""
    return Router([a, b], traffic=traffic, rng=random.Random(1), **kwargs)  # type: ignore[arg-type]  # budgets=


async def test_a_slow_primary_loses_to_the_hedge() -> None:
    """a takes 5 s, b 100 ms: after 300 ms b is hedged and wins; a is recorded HEDGE_CANCELLED."""
    a = ScriptedProvider(name="a", default=Reply(delay_s=5.0))
    b = ScriptedProvider(name="b", default=Reply(delay_s=0.1, text="from b"))
    tenant = policy(["a", "b"])
    async with pair(a, b, hedged()) as router:
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        resp = await router.call_provider(request(), resolved(tenant), t0 + 20, tenant)
        took = loop.time() - t0
    assert resp.provider is not None
    assert resp.provider.value == "b"
    assert resp.choices[0].content == "from b"
    assert [(r.provider.value, r.status) for r in resp.attempts] == [
        ("a", AttemptStatus.HEDGE_CANCELLED),
        ("b", AttemptStatus.SUCCEEDED),
    ]
    assert (len(a.calls), len(b.calls)) == (1, 1)
    assert took == pytest.approx(0.4, abs=0.01)


async def test_a_fast_primary_sends_no_hedge() -> None:
    """a answers in 100 ms, before the 300 ms delay: b is never called."""
    a = ScriptedProvider(name="a", default=Reply(delay_s=0.1))
    b = ScriptedProvider(name="b")
    tenant = policy(["a", "b"])
    async with pair(a, b, hedged()) as router:
        resp = await router.call_provider(request(), resolved(tenant), asyncio.get_running_loop().time() + 20, tenant)
    assert [r.status for r in resp.attempts] == [AttemptStatus.SUCCEEDED]
    assert len(b.calls) == 0


async def test_hedges_stay_within_the_ratio() -> None:
    """100 calls, every primary slow, ratio 0.1: at most 10 hedges are sent (exactly 10 here)."""
    a = ScriptedProvider(name="a", default=Reply(delay_s=1.0))
    b = ScriptedProvider(name="b", default=Reply(delay_s=0.01))
    tenant = policy(["a", "b"])
    async with pair(a, b, hedged(ratio_milli=100)) as router:
        for _ in range(100):
            await router.call_provider(request(), resolved(tenant), asyncio.get_running_loop().time() + 20, tenant)
    assert len(b.calls) == 10


async def test_a_call_started_on_an_empty_bucket_hedges_with_the_tokens_earned_during_its_delay() -> None:
    """The first call of a ratio-0.1 alias starts with an empty bucket; 10 fast calls start during its
    300 ms delay and earn one token: the slow first call is hedged (judged at its start, never)."""
    a = ScriptedProvider([Reply(delay_s=5.0)], name="a", default=Reply(delay_s=0.01))
    b = ScriptedProvider(name="b", default=Reply(delay_s=0.01, text="from b"))
    tenant = policy(["a", "b"])
    async with pair(a, b, hedged(ratio_milli=100)) as router:
        loop = asyncio.get_running_loop()
        slow = asyncio.create_task(router.call_provider(request(), resolved(tenant), loop.time() + 20, tenant))
        await asyncio.sleep(0.001)  # the slow call's attempt is out, on an empty bucket
        for _ in range(10):
            await router.call_provider(request(), resolved(tenant), loop.time() + 20, tenant)
        resp = await slow
    assert [(r.provider.value, r.status) for r in resp.attempts] == [
        ("a", AttemptStatus.HEDGE_CANCELLED),
        ("b", AttemptStatus.SUCCEEDED),
    ]
    assert len(b.calls) == 1


async def test_the_cancelled_loser_is_billed_its_reservation() -> None:
    """The ledger books the winner's exact cost plus the cancelled loser's reserved worst case, and
    nothing stays reserved."""
    a = ScriptedProvider(name="a", kind=ProviderKind.OPENAI, default=Reply(delay_s=5.0, usage=USAGE))
    b = ScriptedProvider(name="b", kind=ProviderKind.OPENAI, default=Reply(delay_s=0.1, usage=USAGE))
    tenant = policy(["a", "b"])
    budget = BudgetLimits(monthly_limit_pico_usd=10**12)
    async with pair(a, b, hedged(), budgets=BudgetOptions(pricing=PRICING, limits=budget)) as router:
        req = request()
        resp = await router.call_provider(req, resolved(tenant), asyncio.get_running_loop().time() + 20, tenant)
        ledger = router.ledger
    assert [r.status for r in resp.attempts] == [AttemptStatus.HEDGE_CANCELLED, AttemptStatus.SUCCEEDED]
    price = PRICING.price_of_call(ProviderKind.OPENAI, "m")
    assert ledger is not None
    assert ledger.monthly.reserved_pico_usd == 0
    assert ledger.monthly.spent_pico_usd == cost_pico_usd(price, USAGE) + worst_case_cost_pico_usd(price, req)
    assert resp.cost_pico_usd == cost_pico_usd(price, USAGE)


async def test_no_hedge_when_the_money_budget_cannot_cover_a_second_attempt() -> None:
    """The budget holds one worst case but not two: the hedge is refused by the ledger, never sent,
    and the primary's answer is the call's."""
    a = ScriptedProvider(name="a", kind=ProviderKind.OPENAI, default=Reply(delay_s=1.0, usage=USAGE))
    b = ScriptedProvider(name="b", kind=ProviderKind.OPENAI, default=Reply(delay_s=0.1, usage=USAGE))
    tenant = policy(["a", "b"])
    price = PRICING.price_of_call(ProviderKind.OPENAI, "m")
    one = worst_case_cost_pico_usd(price, request())
    async with pair(
        a,
        b,
        hedged(),
        budgets=BudgetOptions(pricing=PRICING, limits=BudgetLimits(monthly_limit_pico_usd=one + one // 2)),
    ) as r:
        resp = await r.call_provider(request(), resolved(tenant), asyncio.get_running_loop().time() + 20, tenant)
    assert resp.provider is not None
    assert resp.provider.value == "a"
    assert len(b.calls) == 0
    assert [r.status for r in resp.attempts] == [AttemptStatus.SUCCEEDED]


async def test_no_hedge_after_the_deadline_could_cover_it() -> None:
    """A 500 ms deadline: after the 300 ms delay only 200 ms are left, less than the delay: no hedge."""
    a = ScriptedProvider(name="a", default=Reply(delay_s=0.45))
    b = ScriptedProvider(name="b", default=Reply(delay_s=0.01))
    tenant = policy(["a", "b"])
    async with pair(a, b, hedged()) as router:
        resp = await router.call_provider(request(), resolved(tenant), asyncio.get_running_loop().time() + 0.5, tenant)
    assert len(b.calls) == 0
    assert [r.status for r in resp.attempts] == [AttemptStatus.SUCCEEDED]


async def test_a_primary_failing_during_the_race_leaves_the_hedge_to_answer() -> None:
    """a fails with a 503 at 400 ms while b (hedged at 300 ms) runs: b answers, a is recorded failed over."""
    busy = AttemptFailure(kind=AttemptFailureKind.HTTP_STATUS, http_status=503, message="busy")
    a = ScriptedProvider(name="a", default=Failure(failure=busy, delay_s=0.4))
    b = ScriptedProvider(name="b", default=Reply(delay_s=0.3))
    tenant = policy(["a", "b"])
    async with pair(a, b, hedged()) as router:
        resp = await router.call_provider(request(), resolved(tenant), asyncio.get_running_loop().time() + 20, tenant)
    assert [(r.provider.value, r.status, r.http_status) for r in resp.attempts] == [
        ("a", AttemptStatus.FAILED_OVER, 503),
        ("b", AttemptStatus.SUCCEEDED, 200),
    ]
    assert len(a.calls) == 1  # not retried: the hedge answered


async def test_a_stream_hedge_wins_and_the_loser_stream_is_closed() -> None:
    """Streaming: b's first event comes first; the caller sees only b's text, a's stream is closed."""
    a = ScriptedProvider(name="a", default=Reply(delay_s=5.0, text="slow a"))
    b = ScriptedProvider(name="b", default=Reply(delay_s=0.1, text="fast b"))
    tenant = policy(["a", "b"])
    async with pair(a, b, hedged()) as router:
        stream = router.call_provider_streaming(
            request(), resolved(tenant), asyncio.get_running_loop().time() + 20, tenant
        )
        texts = [getattr(e, "text", "") async for e in stream]
        attempts = stream.attempts
    assert "".join(texts) == "fast b"
    assert a.open_streams == 0
    assert [(r.provider.value, r.status) for r in attempts] == [
        ("a", AttemptStatus.HEDGE_CANCELLED),
        ("b", AttemptStatus.SUCCEEDED),
    ]


async def test_without_a_hedge_policy_nothing_changes() -> None:
    """The same slow primary, no policy for the alias: b is never called."""
    a = ScriptedProvider(name="a", default=Reply(delay_s=1.0))
    b = ScriptedProvider(name="b")
    tenant = policy(["a", "b"])
    async with pair(a, b, TrafficConfig(members=GROUP)) as router:
        await router.call_provider(request(), resolved(tenant), asyncio.get_running_loop().time() + 20, tenant)
    assert len(b.calls) == 0


async def test_a_hedge_policy_without_another_deployment_changes_nothing() -> None:
    """a alone in its group (b at another priority): no hedge, b is only a failover target."""
    a = ScriptedProvider(name="a", default=Reply(delay_s=1.0))
    b = ScriptedProvider(name="b")
    tenant = policy(["a", "b"])
    traffic = TrafficConfig(
        members={"a": Member(priority=0), "b": Member(priority=1)}, hedges={ALIAS: HedgePolicy(delay_ms=10)}
    )
    async with pair(a, b, traffic) as router:
        resp = await router.call_provider(request(), resolved(tenant), asyncio.get_running_loop().time() + 20, tenant)
    assert [r.status for r in resp.attempts] == [AttemptStatus.SUCCEEDED]
    assert len(b.calls) == 0


async def test_a_caller_cancelling_mid_race_ends_both_attempts_and_leaks_nothing() -> None:
    """The caller gives up while both attempts run: both are cancelled, no reservation stays open."""
    a = ScriptedProvider(name="a", kind=ProviderKind.OPENAI, default=Reply(delay_s=5.0, usage=USAGE))
    b = ScriptedProvider(name="b", kind=ProviderKind.OPENAI, default=Reply(delay_s=5.0, usage=USAGE))
    tenant = policy(["a", "b"])
    async with pair(
        a, b, hedged(), budgets=BudgetOptions(pricing=PRICING, limits=BudgetLimits(monthly_limit_pico_usd=10**12))
    ) as router:
        deadline = asyncio.get_running_loop().time() + 20
        task = asyncio.create_task(router.call_provider(request(), resolved(tenant), deadline, tenant))
        await asyncio.sleep(1.0)  # virtual: the hedge went out at 0.3 s
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        ledger = router.ledger
    assert (len(a.calls), len(b.calls)) == (1, 1)
    assert ledger is not None
    assert ledger.monthly.reserved_pico_usd == 0
