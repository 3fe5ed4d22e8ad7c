"""The traffic stores (memory, SQLite, Redis) apply core's rules identically, and a shared store
makes two routers behave as one: a limit holds across them."""

from __future__ import annotations

import asyncio
import itertools
import random
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from routeproof.core.rate_limit import DeploymentLimits, LogEntry, RateVerdict, admit
from routeproof.core.retry_budget import RetryBudgetConfig, after_failure, after_success, retry_allowed
from routeproof.errors import NoEligibleProvider
from routeproof.router import Router
from routeproof.testing import Reply, ScriptedProvider
from routeproof.traffic import TrafficConfig, TrafficStore
from routeproof.traffic_store import MemoryTrafficStore, RateTicket
from routeproof.traffic_store.redis_store import RedisTrafficStore
from routeproof.traffic_store.sqlite import SqliteTrafficStore
from tests.traffic.support import policy, request, resolved, router
from tools.redis_server import RedisServer

pytestmark = [pytest.mark.asyncio, pytest.mark.looptime(False)]

_NAMESPACES = itertools.count()


@pytest_asyncio.fixture(params=["memory", "sqlite", "redis"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[TrafficStore]:
    """Each traffic store in turn (Redis on the session's loopback server)."""
    made: TrafficStore
    if request.param == "memory":
        made = MemoryTrafficStore()
    elif request.param == "sqlite":
        made = SqliteTrafficStore(tmp_path / "traffic.db")
    else:
        server: RedisServer = request.getfixturevalue("redis_server")
        made = RedisTrafficStore(server.url, namespace=f"t{next(_NAMESPACES)}-{random.random()}")
    yield made
    await made.aclose()


async def test_a_store_matches_core_on_a_random_schedule(store: TrafficStore) -> None:
    """200 seeded reserve/settle/release steps: every verdict is core's ``admit`` on the same log."""
    rng = random.Random(7)
    limits = DeploymentLimits(rpm=5, tpm=60, window_ms=1000)
    model: dict[str, LogEntry] = {}
    tickets: list[RateTicket] = []
    now = 10_000
    for _ in range(200):
        now += rng.randrange(0, 120)
        model = {k: e for k, e in model.items() if e.at_ms > now - limits.window_ms}
        action = rng.random()
        if action < 0.6 or not tickets:
            tokens = rng.randrange(1, 30)
            expected = admit(limits, tuple(model.values()), now, tokens)
            got = await store.try_reserve("dep", limits, tokens=tokens, now_ms=now)
            if expected.ok:
                assert not isinstance(got, RateVerdict), got
                model[got.ticket_id] = LogEntry(at_ms=now, tokens=tokens)
                tickets.append(got)
            else:
                assert got == expected
        elif action < 0.8:
            ticket = tickets.pop(rng.randrange(len(tickets)))
            tokens = rng.randrange(0, 30)
            await store.settle(ticket, tokens=tokens, now_ms=now)
            if ticket.ticket_id in model:
                model[ticket.ticket_id] = LogEntry(at_ms=max(ticket.at_ms, now), tokens=tokens)
        else:
            ticket = tickets.pop(rng.randrange(len(tickets)))
            await store.release(ticket)
            model.pop(ticket.ticket_id, None)


async def test_a_store_keeps_the_retry_bucket_as_core_does(store: TrafficStore) -> None:
    """A seeded run of failures and successes: the store's level and verdicts are core's."""
    rng = random.Random(3)
    config = RetryBudgetConfig(max_tokens=4, token_ratio_milli=250)
    level = config.capacity_milli
    for _ in range(60):
        if rng.random() < 0.5:
            level = after_failure(config, level)
            assert await store.retry_failure("p", config) == retry_allowed(config, level)
        else:
            level = after_success(config, level)
            await store.retry_success("p", config)
        assert await store.retry_tokens_milli("p", config) == level


async def test_two_routers_on_one_redis_share_a_limit(redis_server: RedisServer) -> None:
    """Two routers (two replicas) on one Redis namespace, 12 calls each at once, rpm 10: the
    deployment receives 10 in all, the rest are refused naming the limit."""
    namespace = f"shared-{random.random()}"
    limits = {"a": DeploymentLimits(rpm=10)}
    replicas = []
    for seed in (1, 2):
        provider = ScriptedProvider(name="a", default=Reply(delay_s=0.01))
        store = RedisTrafficStore(redis_server.url, namespace=namespace)
        replicas.append((provider, router([provider], TrafficConfig(limits=limits), seed=seed, store=store)))
    tenant = policy(["a"])
    loop = asyncio.get_running_loop()

    async def one(r: Router) -> bool:
        try:
            await r.call_provider(request(), resolved(tenant), loop.time() + 15, tenant)
        except NoEligibleProvider as exc:
            refusals.append(str(exc))
            return False
        return True

    refusals: list[str] = []
    results = await asyncio.gather(*(one(r) for _, r in replicas for _ in range(12)))
    assert all("declared rate limit" in text for text in refusals)
    for _, r in replicas:
        await r.aclose()
    assert sum(results) == 10
    assert sum(len(p.calls) for p, _ in replicas) == 10
