"""What is fixed for one routed call before it starts, and the closed vocabularies the kernel speaks.

:class:`CallPlan` (the chain, the clock origin, the caller's deadline, the limits, the backoff) and
:func:`plan_valid`, the precondition of :func:`routeproof.core.kernel.start`; the enums of the
kernel's vocabulary: :class:`Bound` (which limit set an attempt's timeout), :class:`CallFailureKind` (why a
call failed) and :class:`RefusalEffect` (why the shell could not perform an attempt). The kernel
re-exports every name, so ``from routeproof.core.kernel import CallPlan`` keeps working.
"""

from __future__ import annotations

import enum
import operator
from dataclasses import dataclass, field

from routeproof.core.constants import (
    ATTEMPTS_CAP,
    FAILOVER_BUDGET_MS,
    FULL_JITTER_BASE_MS,
    FULL_JITTER_CAP_MS,
    JITTER_PERCENT,
    MAX_ATTEMPTS_PER_PROVIDER,
    PROVIDER_DEFAULT_TIMEOUT_MS,
    RETRY_DELAYS_MS,
)
from routeproof.core.types import ChainEntry, ProviderId

__all__ = ["BackoffPolicy", "Bound", "CallFailureKind", "CallPlan", "RefusalEffect", "plan_valid"]


@dataclass(frozen=True, slots=True, kw_only=True)
class BackoffPolicy:
    """Which retry delays to use: the 200/800 ms band (default) or the contract's full jitter."""

    full_jitter: bool = False
    delays_ms: tuple[int, ...] = RETRY_DELAYS_MS
    jitter_percent: int = JITTER_PERCENT
    base_ms: int = FULL_JITTER_BASE_MS
    cap_ms: int = FULL_JITTER_CAP_MS


@dataclass(frozen=True, slots=True, kw_only=True)
class CallPlan:
    """Everything fixed for one call: the chain, the clock origin, the deadline and the limits."""

    chain: tuple[ChainEntry, ...]
    started_at_ms: int
    deadline_at_ms: int  # the caller's deadline, absolute
    budget_ms: int = FAILOVER_BUDGET_MS
    max_attempts_per_provider: int = MAX_ATTEMPTS_PER_PROVIDER
    attempts_cap: int = ATTEMPTS_CAP
    attempt_timeout_ms: int = PROVIDER_DEFAULT_TIMEOUT_MS
    backoff: BackoffPolicy = field(default_factory=BackoffPolicy)
    context_window_failover: bool = False
    provider_timeouts_ms: tuple[tuple[ProviderId, int], ...] = ()  # agent.toml's per-provider timeout_ms

    def timeout_for(self, provider: ProviderId) -> int:
        """The per-attempt ceiling for ``provider``: its configured ``timeout_ms``, else the plan's."""
        for kind, timeout_ms in self.provider_timeouts_ms:
            if kind == provider:
                return min(timeout_ms, self.attempt_timeout_ms)
        return self.attempt_timeout_ms

    @property
    def budget_end_ms(self) -> int:
        """When the 30 s failover budget runs out."""
        return self.started_at_ms + self.budget_ms

    @property
    def effective_end_ms(self) -> int:
        """The earlier of the budget's end and the caller's deadline."""
        return min(self.budget_end_ms, self.deadline_at_ms)


class Bound(enum.Enum):
    """Which limit set an attempt's timeout (it decides what an elapsed timeout means)."""

    DEADLINE = "deadline"  # the caller's deadline
    BUDGET = "budget"  # the 30 s failover budget
    ATTEMPT = "attempt"  # the 30 s per-attempt ceiling


class CallFailureKind(enum.Enum):
    """Why a call failed; the shell maps each to one RouterError."""

    DEADLINE = "deadline"  # -> DeadlineExceeded
    ALL_FAILED = "all_failed"  # -> AllProvidersFailed (chain or budget exhausted)
    TERMINAL = "terminal"  # -> TerminalProviderError (400, 404, context overflow)
    AUTH = "auth"  # -> AuthError (401, 403)
    ATTEMPTS_CAP = "attempts_cap"  # -> InvalidResponse(ATTEMPTS_CAP_REASON)
    BUDGET = "budget"  # -> BudgetExhausted (the ledger's refusal)
    NO_ELIGIBLE = "no_eligible"  # -> NoEligibleProvider (empty chain)


class RefusalEffect(enum.Enum):
    """Why the shell could not perform a CallProvider action."""

    SKIP_PROVIDER = "skip_provider"  # e.g. this provider's daily budget: go on down the chain
    TERMINAL = "terminal"  # e.g. the session or monthly budget: the call ends


_TIMEOUT_MS = operator.itemgetter(1)


def plan_valid(plan: CallPlan) -> bool:
    """A plan the kernel accepts: positive limits, a usable backoff, positions matching the chain."""
    backoff = plan.backoff
    return (
        plan.budget_ms > 0
        and plan.max_attempts_per_provider >= 1
        and plan.attempts_cap >= 1
        and plan.attempt_timeout_ms > 0
        and min(map(_TIMEOUT_MS, plan.provider_timeouts_ms), default=1) > 0  # all > 0, in a C-level loop
        and 0 <= backoff.jitter_percent <= 100
        and min(backoff.delays_ms, default=0) >= 0  # all >= 0: this runs in every kernel contract
        and (
            (0 < backoff.base_ms <= backoff.cap_ms)
            if backoff.full_jitter
            else len(backoff.delays_ms) + 1 >= plan.max_attempts_per_provider
        )
    )
