"""Provider health shared through a real Redis: a provider one replica saw failing is demoted by all.

* two Routers (and a Router and a second process) on one Redis: one sees the primary fail until it
  cools; the other's next call goes to the fallback without ever calling the primary;
* a replica started later adopts the current cooling state before its first call;
* Redis down: calls go on with each replica's own health (advisory, never fail closed); when Redis
  returns the queued effects are sent and the other replica demotes the provider.

Real sockets, so real time: every wait is bounded.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from routeproof.core.classify import HealthEffect
from routeproof.health_store.redis_store import RedisHealthStore
from tests.health_store.conftest import new_namespace
from tests.health_store.replica import FALLBACK, HEALTH, PRIMARY, Replica, until
from tools.redis_server import RedisServer

pytestmark = [pytest.mark.asyncio, pytest.mark.redis, pytest.mark.looptime(False)]  # real sockets: real time

ROOT = Path(__file__).resolve().parents[2]


def _replica(url: str, namespace: str) -> Replica:
    return Replica(store=RedisHealthStore(url, HEALTH, namespace=namespace, block_ms=200))


async def _fail_primary(replica: Replica) -> None:
    """Two calls on ``replica`` while the primary answers 503: it reaches the threshold and cools."""
    replica.failing = True
    assert await replica.call() == FALLBACK.value
    assert await replica.call() == FALLBACK.value
    assert replica.calls[PRIMARY] == 2
    assert replica.primary_cooling()


async def test_a_provider_one_replica_saw_failing_is_skipped_by_the_other(redis_server: RedisServer) -> None:
    """Replica A sees the primary fail twice (cooling); replica B's next call goes to the fallback
    without calling the primary, though B never saw it fail."""
    namespace = new_namespace()
    a, b = _replica(redis_server.url, namespace), _replica(redis_server.url, namespace)
    try:
        await a.store.start()
        await b.store.start()
        assert await b.call() == PRIMARY.value  # healthy everywhere at first
        await _fail_primary(a)
        assert await until(b.primary_cooling), "replica B never learned that the primary is cooling"
        b.calls.clear()
        assert await b.call() == FALLBACK.value
        assert b.calls[PRIMARY] == 0
    finally:
        await a.aclose()
        await b.aclose()


async def test_a_success_seen_by_one_replica_ends_the_cooldown_for_all(redis_server: RedisServer) -> None:
    """A success reported by one replica (a call already in flight) resets the provider for every replica."""
    namespace = new_namespace()
    a, b = _replica(redis_server.url, namespace), _replica(redis_server.url, namespace)
    try:
        await a.store.start()
        await b.store.start()
        await _fail_primary(a)
        assert await until(b.primary_cooling)
        a.router.health_store.apply(PRIMARY, HealthEffect.SUCCESS, now_ms=0)
        assert await until(lambda: not b.primary_cooling()), "replica B never learned of the success"
    finally:
        await a.aclose()
        await b.aclose()


async def test_a_replica_started_later_adopts_the_current_cooling_state(redis_server: RedisServer) -> None:
    """A replica (re)started after the primary began cooling skips it on its first call."""
    namespace = new_namespace()
    a = _replica(redis_server.url, namespace)
    try:
        await a.store.start()
        await _fail_primary(a)
        assert await until(lambda: a.store.queued_effects == 0)  # type: ignore[attr-defined]
    finally:
        await a.aclose()
    restarted = _replica(redis_server.url, namespace)
    try:
        await restarted.store.start()
        assert restarted.primary_cooling()
        assert await restarted.call() == FALLBACK.value
        assert restarted.calls[PRIMARY] == 0
    finally:
        await restarted.aclose()


async def test_a_second_process_skips_the_provider_without_calling_it(redis_server: RedisServer) -> None:
    """A replica in its own process learns from Redis alone that the primary is cooling, and its call
    goes to the fallback without calling the primary."""
    namespace = new_namespace()
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.health_store.replica",
        redis_server.url,
        namespace,
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
    )
    a = _replica(redis_server.url, namespace)
    try:
        assert process.stdout is not None
        assert (await asyncio.wait_for(process.stdout.readline(), timeout=60)).strip() == b"ready"
        await a.store.start()
        await _fail_primary(a)
        line = await asyncio.wait_for(process.stdout.readline(), timeout=60)
        seen = json.loads(line)
        assert seen["learned"], seen
        assert seen["answer"] == FALLBACK.value
        assert seen.get(PRIMARY.value, 0) == 0, seen
        assert await asyncio.wait_for(process.wait(), timeout=30) == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
        await a.aclose()


async def test_redis_down_calls_go_on_with_local_health_and_sharing_recovers(own_redis: RedisServer) -> None:
    """Redis stopped: both replicas keep answering, A on its own knowledge (the primary cooling);
    Redis back: A's queued effects reach B, which then skips the primary without calling it."""
    namespace = new_namespace()
    a, b = _replica(own_redis.url, namespace), _replica(own_redis.url, namespace)
    try:
        await a.store.start()
        await b.store.start()
        await asyncio.to_thread(own_redis.stop)
        await _fail_primary(a)  # no Redis: A still fails over, and cools the primary locally
        assert a.store.queued_effects == 2  # type: ignore[attr-defined]
        assert await a.call() == FALLBACK.value
        assert a.calls[PRIMARY] == 2  # the third call skipped the cooling primary
        assert await b.call() == PRIMARY.value  # B knows nothing yet, and still works
        assert not b.primary_cooling()
        await asyncio.to_thread(own_redis.start)
        assert await until(b.primary_cooling, within_s=20), "sharing did not recover when Redis returned"
        b.calls.clear()
        assert await b.call() == FALLBACK.value
        assert b.calls[PRIMARY] == 0
    finally:
        await a.aclose()
        await b.aclose()
