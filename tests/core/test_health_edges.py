"""health_well_formed rejects each malformed state on its own (mutation survivors, health shard)."""

from __future__ import annotations

from routeproof.core.health import HealthConfig, HealthState, ProviderHealth, health_well_formed
from routeproof.core.types import ProviderKind

A, B = ProviderKind.ANTHROPIC, ProviderKind.OPENAI


def test_well_formed_accepts_a_cooling_provider_at_the_threshold() -> None:
    """A provider at the threshold with a cooldown, another healthy: well formed."""
    state = HealthState(
        config=HealthConfig(failure_threshold=2),
        providers=((A, ProviderHealth(consecutive_failures=2, cooldown_until_ms=5)), (B, ProviderHealth())),
    )
    assert health_well_formed(state)


def test_well_formed_rejects_a_provider_listed_twice() -> None:
    """The same provider twice (both healthy) is malformed."""
    assert not health_well_formed(HealthState(providers=((A, ProviderHealth()), (A, ProviderHealth()))))


def test_well_formed_rejects_a_cooldown_below_the_threshold() -> None:
    """A cooldown with fewer failures than the threshold is malformed (counts non-negative)."""
    below = ProviderHealth(consecutive_failures=1, cooldown_until_ms=5)
    assert not health_well_formed(HealthState(config=HealthConfig(failure_threshold=2), providers=((A, below),)))


def test_well_formed_rejects_a_negative_count() -> None:
    """A negative failure count is malformed even without a cooldown."""
    assert not health_well_formed(HealthState(providers=((A, ProviderHealth(consecutive_failures=-1)),)))
