"""The port provider health lives behind, and the one pure step every backend applies.

The pure health model (:mod:`routeproof.core.health`) stays the specification: every backend changes
a :class:`~routeproof.core.health.HealthState` only through ``record_failure`` and
``record_success`` (:func:`apply_effect`). What a backend adds is *where else* an effect is applied:
the memory store keeps it in this process; the Redis store also publishes it so the other replicas
apply it too (:mod:`routeproof.health_store.redis_store`).

Both methods the Router calls are synchronous and do no I/O: the call path never waits on a shared
store for health. Health is advisory, unlike the budget ledger: a replica that cannot reach Redis
keeps routing on what it saw itself (as a single process does today) and catches up when Redis
returns. Nothing is lost by that but a little of other replicas' knowledge — at worst a replica
calls a provider another replica knew was failing, and learns it from its own failures, exactly as
without sharing. A budget instead fails closed, because a missed booking is money spent past a limit.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from routeproof.core.classify import HealthEffect
from routeproof.core.health import HealthState, record_failure, record_success
from routeproof.core.types import ProviderId

__all__ = ["HealthStore", "apply_effect"]


def apply_effect(state: HealthState, provider: ProviderId, effect: HealthEffect, now_ms: int) -> HealthState:
    """``state`` after one attempt's ``effect`` on ``provider`` at ``now_ms`` (neutral: unchanged)."""
    if effect is HealthEffect.SUCCESS:
        return record_success(state, provider)
    if effect is HealthEffect.FAILURE:
        return record_failure(state, provider, now_ms)
    return state


@runtime_checkable
class HealthStore(Protocol):
    """Apply a health effect and read the health snapshot (both local, never blocking); start and
    close whatever the store runs in the background.

    ``now_ms`` is the caller's loop clock in milliseconds (the Router's ``loop_ms``), the clock the
    snapshot's cooldown ends are on.
    """

    @property
    def description(self) -> str:
        """Which store this is, for messages (``redis://host:port/0``; never a password)."""
        ...

    def apply(self, provider: ProviderId, effect: HealthEffect, *, now_ms: int) -> None:
        """Apply one attempt's effect on its provider now (and share it, if the store shares)."""
        ...

    def snapshot(self) -> HealthState:
        """Provider health as it stands in this process (a frozen value)."""
        ...

    async def start(self) -> None:
        """Load the shared state and start sharing (idempotent; bounded: never waits long)."""
        ...

    async def aclose(self) -> None:
        """Stop sharing and close connections."""
        ...
