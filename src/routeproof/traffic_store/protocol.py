"""The one port every traffic store implements: shared rate-limit windows and retry buckets.

A traffic store holds the state that replicas must share to behave as one router: each
deployment's rate-limit log (:mod:`routeproof.core.rate_limit`) and each provider's retry-budget
bucket (:mod:`routeproof.core.retry_budget`). Every operation applies core's pure function and its
write as one atomic unit in its store (memory: no await between them; SQLite: ``BEGIN IMMEDIATE``;
Redis: one Lua script), so concurrent calls and replicas cannot pass a limit or overspend a bucket.
Time is Unix milliseconds (``now_ms``), the one clock that replicas share.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from routeproof.core.rate_limit import DeploymentLimits, RateVerdict
from routeproof.core.retry_budget import RetryBudgetConfig

__all__ = ["RateTicket", "TrafficStore"]


@dataclass(frozen=True, slots=True, kw_only=True)
class RateTicket:
    """One reservation in a deployment's window: its id, made at ``at_ms`` for ``tokens``."""

    deployment: str
    ticket_id: str
    at_ms: int
    tokens: int


@runtime_checkable
class TrafficStore(Protocol):
    """Where rate-limit windows and retry buckets live (memory, SQLite, Redis)."""

    async def try_reserve(
        self, deployment: str, limits: DeploymentLimits, *, tokens: int, now_ms: int
    ) -> RateTicket | RateVerdict:
        """Reserve one request of ``tokens`` in the window if it fits (a ticket), else say why not."""
        ...

    async def peek(self, deployment: str, limits: DeploymentLimits, *, tokens: int, now_ms: int) -> RateVerdict:
        """Whether such a reservation would fit now, without making it."""
        ...

    async def settle(self, ticket: RateTicket, *, tokens: int, now_ms: int) -> None:
        """Replace the ticket's estimate by the tokens really used, and its instant by ``now_ms``
        (the answer's arrival: the request reached the provider at some instant up to then, so the
        window counts it from then on, and the provider never sees more than the limit)."""
        ...

    async def release(self, ticket: RateTicket) -> None:
        """Remove a ticket whose request was never sent."""
        ...

    async def retry_failure(self, provider: str, config: RetryBudgetConfig) -> bool:
        """A retryable failure costs one token; whether a retry is still allowed after it."""
        ...

    async def retry_success(self, provider: str, config: RetryBudgetConfig) -> None:
        """A success refunds the bucket's ratio."""
        ...

    async def retry_tokens_milli(self, provider: str, config: RetryBudgetConfig) -> int:
        """The bucket's level (a full bucket for a provider never seen)."""
        ...

    async def aclose(self) -> None:
        """Release the store's resources."""
        ...
