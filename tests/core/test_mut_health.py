"""The health helpers record_failure's postcondition reads: a provider's own cooldown end."""

from __future__ import annotations

from routeproof.core.health import HealthConfig, HealthState, ProviderHealth, _cooldown_end
from routeproof.core.types import ProviderKind

A, B = ProviderKind.ANTHROPIC, ProviderKind.OPENAI


def test_cooldown_end_reads_the_named_providers_record() -> None:
    """The cooldown end is the named provider's; a provider without a record has none."""
    cooling = ProviderHealth(consecutive_failures=3, cooldown_until_ms=5_000)
    state = HealthState(config=HealthConfig(failure_threshold=3), providers=((A, cooling),))
    assert _cooldown_end(state, A) == 5_000
    assert _cooldown_end(state, B) is None
