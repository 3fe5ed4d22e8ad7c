"""The health-store port without a shared server: the memory store is today's behaviour through the
pure model, the Router's default; a Redis store that can never reach its server routes on local
health and never blocks a call."""

from __future__ import annotations

import pytest

from routeproof import HealthOptions
from routeproof.core.classify import HealthEffect
from routeproof.core.health import HealthConfig, is_available, new_health, record_failure
from routeproof.core.types import ProviderKind
from routeproof.errors import ConfigError
from routeproof.health_store import HealthStore, MemoryHealthStore, apply_effect
from routeproof.health_store.redis_store import RedisHealthStore
from tests.health_store.replica import FALLBACK, HEALTH, PRIMARY, Replica

P = ProviderKind.OPENAI


def test_apply_effect_is_the_pure_model() -> None:
    """A failure is record_failure, a success resets, a neutral effect changes nothing."""
    state = new_health(HealthConfig(failure_threshold=1, cooldown_ms=100))
    failed = apply_effect(state, P, HealthEffect.FAILURE, 5)
    assert failed == record_failure(state, P, 5)
    assert not is_available(failed, P, 104)
    assert apply_effect(failed, P, HealthEffect.NEUTRAL, 50) == failed
    assert is_available(apply_effect(failed, P, HealthEffect.SUCCESS, 50), P, 50)


def test_the_router_keeps_health_in_memory_by_default() -> None:
    """Without a store the Router's health lives in a MemoryHealthStore with the given config."""
    store = MemoryHealthStore(HEALTH)
    assert isinstance(store, HealthStore)
    replica = Replica(store=store)
    assert replica.router.health_store is store
    assert replica.router.health.config == HEALTH


def test_health_config_and_store_together_are_refused() -> None:
    """The thresholds belong to the store: giving both to the Router is a ConfigError."""
    from routeproof.router import Router

    with pytest.raises(ConfigError, match="health store"):
        Router([], health=HealthOptions(config=HEALTH, health_store=MemoryHealthStore(HEALTH)))


@pytest.mark.asyncio
@pytest.mark.looptime(False)  # a real (refused) socket: real time
async def test_an_unreachable_redis_never_blocks_calls() -> None:
    """Redis never reachable: start() returns (bounded), calls fail over and cool the primary on local
    health alone, and the changes wait in the queue."""
    store = RedisHealthStore("redis://127.0.0.1:9/0", HEALTH, timeout_s=0.5)  # port 9 (discard): refused
    replica = Replica(store=store)
    try:
        await store.start()
        assert not store.connected
        replica.failing = True
        assert await replica.call() == FALLBACK.value
        assert await replica.call() == FALLBACK.value
        assert replica.primary_cooling()
        assert await replica.call() == FALLBACK.value
        assert replica.calls[PRIMARY] == 2
        assert store.queued_effects == 2
    finally:
        await replica.aclose()
