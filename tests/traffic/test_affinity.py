"""Cache affinity (core/affinity.py, opt-in): calls sharing a cacheable prefix go to one deployment
while the pin lives, even when they run at once; the pin expires with the cache's TTL."""

from __future__ import annotations

import asyncio
from collections import defaultdict

import pytest

from routeproof.core.affinity import pin_first, pin_live
from routeproof.core.balance import Member, Strategy
from routeproof.core.types import ChainEntry, ChatRequest, Message, ProviderName
from routeproof.testing import Reply, ScriptedProvider
from routeproof.traffic import TrafficConfig
from tests.traffic.support import ALIAS, policy, resolved, router


def test_the_pinned_deployment_opens_its_group() -> None:
    """The pinned entry moves to the front of its group; other groups keep their places."""
    members = {"a": Member(priority=0), "b": Member(priority=0), "z": Member(priority=1)}
    chain = tuple(ChainEntry(provider=ProviderName(n), model="m", fallback_position=i) for i, n in enumerate("abz"))
    assert [e.provider.value for e in pin_first(chain, members, "b")] == ["b", "a", "z"]
    assert [e.provider.value for e in pin_first(chain, members, None)] == ["a", "b", "z"]


def test_a_pin_lives_for_its_ttl() -> None:
    """A 5-minute pin holds at 299 999 ms and is gone at 300 000 ms."""
    assert pin_live(0, 300_000, 299_999)
    assert not pin_live(0, 300_000, 300_000)


@pytest.mark.asyncio
@pytest.mark.looptime(end=600)
async def test_concurrent_calls_of_one_prefix_share_a_deployment() -> None:
    """Five prefixes, 20 calls each, 5 in flight, weighted over three deployments: every prefix's
    calls reach one deployment (LiteLLM's background pin lets concurrent calls scatter)."""
    deployments = [ScriptedProvider(name=n, default=Reply(delay_s=0.05)) for n in ("a", "b", "c")]
    members = {n: Member(priority=0) for n in ("a", "b", "c")}
    traffic = TrafficConfig(strategy=Strategy.WEIGHTED, members=members, affinity_ttl_ms=300_000)
    async with router(deployments, traffic) as r:
        tenant = policy(["a", "b", "c"])
        gate = asyncio.Semaphore(5)
        loop = asyncio.get_running_loop()

        async def one(prefix: int, turn: int) -> None:
            req = ChatRequest(
                messages=(Message.user(f"shared context {prefix}"), Message.user(f"question {turn}")),
                system=f"tenant {prefix}",
                max_tokens=16,
                alias=ALIAS,
            )
            async with gate:
                await r.call_provider(req, resolved(tenant), loop.time() + 20, tenant)

        await asyncio.gather(*(one(p, t) for t in range(20) for p in range(5)))
    reached: dict[str, set[str]] = defaultdict(set)
    for provider in deployments:
        for req, _ in provider.calls:
            reached[req.system or ""].add(provider.name)
    assert len(reached) == 5
    assert all(len(names) == 1 for names in reached.values()), reached
