"""The memory health store: provider health in this process only (today's behaviour)."""

from __future__ import annotations

from routeproof.core.classify import HealthEffect
from routeproof.core.health import HealthConfig, HealthState, new_health
from routeproof.core.types import ProviderId
from routeproof.health_store.protocol import apply_effect

__all__ = ["MemoryHealthStore"]


class MemoryHealthStore:
    """The pure health model held in one process."""

    def __init__(self, config: HealthConfig | None = None) -> None:
        self._state = new_health(config or HealthConfig())

    @property
    def description(self) -> str:
        """``memory``."""
        return "memory"

    def apply(self, provider: ProviderId, effect: HealthEffect, *, now_ms: int) -> None:
        """Apply one attempt's effect on its provider."""
        self._state = apply_effect(self._state, provider, effect, now_ms)

    def snapshot(self) -> HealthState:
        """Provider health as it stands."""
        return self._state

    async def start(self) -> None:
        """Nothing to start."""

    async def aclose(self) -> None:
        """Nothing to close."""
