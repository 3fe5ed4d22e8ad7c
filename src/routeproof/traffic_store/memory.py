"""The in-process traffic store: one router's windows and buckets in memory.

Each operation runs without an ``await`` between core's decision and the write, so under one event
loop it is atomic: concurrent calls cannot pass a limit.
"""

from __future__ import annotations

import itertools

from routeproof.core.rate_limit import DeploymentLimits, LogEntry, RateVerdict, admit, live_entries
from routeproof.core.retry_budget import RetryBudgetConfig, after_failure, after_success, retry_allowed
from routeproof.traffic_store.protocol import RateTicket

__all__ = ["MemoryTrafficStore"]


class MemoryTrafficStore:
    """Rate-limit logs and retry buckets in this process's memory."""

    def __init__(self) -> None:
        self._logs: dict[str, dict[str, LogEntry]] = {}
        self._buckets: dict[str, int] = {}
        self._ids = itertools.count(1)

    def _live(self, deployment: str, limits: DeploymentLimits, now_ms: int) -> dict[str, LogEntry]:
        log = self._logs.setdefault(deployment, {})
        live = set(map(id, live_entries(limits, tuple(log.values()), now_ms)))
        for key in [k for k, e in log.items() if id(e) not in live]:
            del log[key]
        return log

    async def try_reserve(
        self, deployment: str, limits: DeploymentLimits, *, tokens: int, now_ms: int
    ) -> RateTicket | RateVerdict:
        """Reserve one request of ``tokens`` if core's ``admit`` says it fits."""
        log = self._live(deployment, limits, now_ms)
        verdict = admit(limits, tuple(log.values()), now_ms, tokens)
        if not verdict.ok:
            return verdict
        ticket_id = str(next(self._ids))
        log[ticket_id] = LogEntry(at_ms=now_ms, tokens=tokens)
        return RateTicket(deployment=deployment, ticket_id=ticket_id, at_ms=now_ms, tokens=tokens)

    async def peek(self, deployment: str, limits: DeploymentLimits, *, tokens: int, now_ms: int) -> RateVerdict:
        """Core's verdict on such a reservation now, without making it."""
        return admit(limits, tuple(self._live(deployment, limits, now_ms).values()), now_ms, tokens)

    async def settle(self, ticket: RateTicket, *, tokens: int, now_ms: int) -> None:
        """The ticket now holds ``tokens`` from ``now_ms`` on (a ticket already out of the window is gone)."""
        log = self._logs.get(ticket.deployment, {})
        if ticket.ticket_id in log:
            log[ticket.ticket_id] = LogEntry(at_ms=max(ticket.at_ms, now_ms), tokens=max(0, tokens))

    async def release(self, ticket: RateTicket) -> None:
        """Remove the ticket."""
        self._logs.get(ticket.deployment, {}).pop(ticket.ticket_id, None)

    async def retry_failure(self, provider: str, config: RetryBudgetConfig) -> bool:
        """One token less; whether a retry is still allowed."""
        tokens = after_failure(config, self._level(provider, config))
        self._buckets[provider] = tokens
        return retry_allowed(config, tokens)

    async def retry_success(self, provider: str, config: RetryBudgetConfig) -> None:
        """The ratio back."""
        self._buckets[provider] = after_success(config, self._level(provider, config))

    async def retry_tokens_milli(self, provider: str, config: RetryBudgetConfig) -> int:
        """The bucket's level."""
        return self._level(provider, config)

    def _level(self, provider: str, config: RetryBudgetConfig) -> int:
        return min(config.capacity_milli, self._buckets.get(provider, config.capacity_milli))

    async def aclose(self) -> None:
        """Nothing to release."""
