"""health_well_formed rejects each malformed state on its own (mutation survivors, health shard)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from routeproof.core.health import (
    HealthConfig,
    HealthState,
    ProviderHealth,
    _health_of,
    health_well_formed,
    new_health,
    record_failure,
    record_success,
)
from routeproof.core.types import ProviderId, ProviderKind

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


def _with_by_definition(state: HealthState, provider: ProviderId, health: ProviderHealth) -> HealthState:
    """The provider's record replaced and listed last, every other provider kept in order."""
    return HealthState(
        config=state.config, providers=(*((k, h) for k, h in state.providers if k != provider), (provider, health))
    )


@given(st.lists(st.tuples(st.sampled_from((A, B)), st.booleans(), st.integers(0, 100)), max_size=30))
def test_recording_keeps_the_definitions_state(feed: list[tuple[ProviderKind, bool, int]]) -> None:
    """_with returns the state unchanged when the provider is already last with that record (a
    repeated success; issue 25): every feed of successes and failures gives the definition's state,
    field for field and in order."""
    state, now = new_health(HealthConfig(failure_threshold=2, cooldown_ms=10)), 0
    for provider, succeeded, step in feed:
        now += step
        if succeeded:
            expected = _with_by_definition(state, provider, ProviderHealth())
            state = record_success(state, provider)
        else:
            before = state
            state = record_failure(state, provider, now)
            expected = _with_by_definition(before, provider, _health_of(state, provider))
        assert state == expected
        assert state.providers == expected.providers
