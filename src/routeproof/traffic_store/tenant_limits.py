"""Per-tenant rate limits at the gateway (issue 32): each tenant's ``rpm``/``tpm`` as a window in the
traffic store, so gateway replicas sharing a store (SQLite, Redis) count one tenant's calls as one.

The rule is :func:`routeproof.core.rate_limit.admit`, applied by the store atomically with the
reservation, in a window of its own per tenant (``tenant:NAME``; deployments' windows are keyed by
provider name). A call is counted when it is admitted, at its worst-case token estimate (prompt
upper bound + output cap, the router's own reservation): the estimate is not settled to the real
usage, so ``tpm`` errs on the tenant's side of the limit, never past it. A refusal says when the
call would fit (``Retry-After``, whole seconds, at least 1) and which limit refused it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping

from routeproof.clock import s_of_ms, wall_ms
from routeproof.core.rate_limit import WINDOW_MS, DeploymentLimits
from routeproof.traffic_store.protocol import RateTicket, TrafficStore

__all__ = ["TENANT_KEY_PREFIX", "StoreTenantRateLimit", "tenant_rate_limit"]

TENANT_KEY_PREFIX = "tenant:"
"""A tenant's window in the store is ``tenant:NAME``."""

NEVER_FITS_RETRY_S = 60
"""``Retry-After`` for a call whose estimate alone is over the tenant's ``tpm`` (it never fits)."""


def _wall_ms() -> int:
    return wall_ms(time.time())


class StoreTenantRateLimit:
    """``admission.TenantRateLimit`` over a traffic store: each limited tenant's window."""

    def __init__(
        self, store: TrafficStore, limits: Mapping[str, DeploymentLimits], *, wall_ms: Callable[[], int] = _wall_ms
    ) -> None:
        self._store = store
        self._limits = {name: lim for name, lim in limits.items() if lim.limited}
        self._wall_ms = wall_ms

    async def try_take(self, tenant: str, tokens: int) -> tuple[int, str] | None:
        """Reserve the call in ``tenant``'s window; None when it fits (or the tenant is unlimited),
        else ``(Retry-After seconds, "rpm" | "tpm")``."""
        limits = self._limits.get(tenant)
        if limits is None:
            return None
        now_ms = self._wall_ms()
        counted = max(0, tokens) if limits.tpm is not None else 0
        outcome = await self._store.try_reserve(TENANT_KEY_PREFIX + tenant, limits, tokens=counted, now_ms=now_ms)
        if isinstance(outcome, RateTicket):
            return None
        assert outcome.limit is not None
        if outcome.retry_at_ms is None:
            return NEVER_FITS_RETRY_S, outcome.limit.value
        return max(1, math.ceil(s_of_ms(outcome.retry_at_ms - now_ms))), outcome.limit.value


def tenant_rate_limit(
    tenants: Mapping[str, tuple[int | None, int | None]], store: TrafficStore
) -> StoreTenantRateLimit | None:
    """The hook for tenants' ``(rpm, tpm)`` over ``store``; None when no tenant is limited."""
    limits = {name: DeploymentLimits(rpm=rpm, tpm=tpm, window_ms=WINDOW_MS) for name, (rpm, tpm) in tenants.items()}
    if not any(lim.limited for lim in limits.values()):
        return None
    return StoreTenantRateLimit(store, limits)
