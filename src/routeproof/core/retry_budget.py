"""The retry budget: a token bucket per provider in the style of gRPC A6 ``retryThrottling``.

Each provider has a bucket of at most ``max_tokens``, full at start. A failed attempt that the
kernel would retry costs one token; a successful attempt refunds ``token_ratio``. A retry is allowed
while the bucket holds more than half its capacity (after the failure's cost). When it is spent,
the kernel fails the attempt over instead of retrying it and the record says so
(``AttemptRecord.retry_throttled``).

Why gRPC A6 and not Envoy's ``retry_budget`` (retries <= a percentage of active requests, with a
floor): Envoy's rule needs an accurate count of *active* requests across replicas and, at the low
concurrency an LLM gateway runs at (tens of calls), its floor (``min_retry_concurrency``, 3)
dominates, so it does not bound a storm over time. The token bucket bounds it over history: with a
provider down, retries stop after ``max_tokens / 2`` failures and resume at ``token_ratio`` per
success, so attempts <= calls + ratio x successes + max_tokens; and a rare transient failure
(1 %: each success refunds 0.1, each failure costs 1) never drains it. The state is one integer
per provider, so a shared store applies it atomically (one Lua script in Redis).

Tokens are integer thousandths (``milli``): no float in the state.
"""

from __future__ import annotations

from dataclasses import dataclass

import icontract

from routeproof.core.classify import Verdict, classify_failure
from routeproof.core.types import AttemptFailure, AttemptFailureKind

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_TOKEN_RATIO_MILLI",
    "MILLI",
    "RetryBudgetConfig",
    "after_failure",
    "after_success",
    "costs_token",
    "retry_allowed",
]

MILLI = 1000
DEFAULT_MAX_TOKENS = 10
"""gRPC A6's example (``maxTokens: 10``): five consecutive failures on a provider stop its retries."""
DEFAULT_TOKEN_RATIO_MILLI = 100
"""``tokenRatio: 0.1``: ten successes earn one retry back."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryBudgetConfig:
    """A bucket of ``max_tokens`` per provider; a success refunds ``token_ratio_milli / 1000``."""

    max_tokens: int = DEFAULT_MAX_TOKENS
    token_ratio_milli: int = DEFAULT_TOKEN_RATIO_MILLI

    def __post_init__(self) -> None:
        if not isinstance(self.max_tokens, int) or not 1 <= self.max_tokens <= 1000:
            raise ValueError(f"retry budget max_tokens must be an int in 1..1000, got {self.max_tokens!r}")
        if not isinstance(self.token_ratio_milli, int) or not 1 <= self.token_ratio_milli <= MILLI:
            raise ValueError(
                f"retry budget token_ratio must be in 0.001..1 (milli 1..1000), got {self.token_ratio_milli!r}"
            )

    @property
    def capacity_milli(self) -> int:
        """The bucket's capacity in thousandths of a token (its level when nothing has happened)."""
        return self.max_tokens * MILLI


def _after_failure(config: RetryBudgetConfig, tokens_milli: int) -> int:
    return max(0, tokens_milli - MILLI)


@icontract.require(lambda config, tokens_milli: 0 <= tokens_milli <= config.capacity_milli)
@icontract.ensure(lambda config, result: 0 <= result <= config.capacity_milli)
@icontract.ensure(lambda tokens_milli, result: result == max(0, tokens_milli - MILLI))
def after_failure(config: RetryBudgetConfig, tokens_milli: int) -> int:
    """The bucket after a failed attempt that would be retried: one token less, never below 0."""
    return _after_failure(config, tokens_milli)


def _after_success(config: RetryBudgetConfig, tokens_milli: int) -> int:
    return min(config.capacity_milli, tokens_milli + config.token_ratio_milli)


@icontract.require(lambda config, tokens_milli: 0 <= tokens_milli <= config.capacity_milli)
@icontract.ensure(lambda config, result: 0 <= result <= config.capacity_milli)
@icontract.ensure(lambda tokens_milli, result: result >= tokens_milli)
def after_success(config: RetryBudgetConfig, tokens_milli: int) -> int:
    """The bucket after a successful attempt: ``token_ratio`` more, never above capacity."""
    return _after_success(config, tokens_milli)


def _retry_allowed(config: RetryBudgetConfig, tokens_milli: int) -> bool:
    return tokens_milli * 2 > config.capacity_milli


@icontract.require(lambda config, tokens_milli: 0 <= tokens_milli <= config.capacity_milli)
@icontract.ensure(lambda config, tokens_milli, result: result == (tokens_milli * 2 > config.capacity_milli))
def retry_allowed(config: RetryBudgetConfig, tokens_milli: int) -> bool:
    """Whether a provider whose bucket holds ``tokens_milli`` may have a failed attempt retried."""
    return _retry_allowed(config, tokens_milli)


def _costs_token(failure: AttemptFailure) -> bool:
    return classify_failure(failure, context_window_failover=False).verdict is Verdict.RETRY


@icontract.require(
    lambda failure: (
        failure.kind is not AttemptFailureKind.HTTP_STATUS
        or (failure.http_status is not None and 100 <= failure.http_status <= 999)
    ),
    "an HTTP failure carries its status (as classify_failure requires)",
)
@icontract.ensure(
    lambda failure, result: (
        not (result and failure.kind is AttemptFailureKind.HTTP_STATUS and failure.http_status in {400, 401, 403, 404})
    ),
    "a terminal failure never costs a token (it is never retried)",
)
def costs_token(failure: AttemptFailure) -> bool:
    """Whether a failed attempt costs its provider a token: only the retryable ones (gRPC A6)."""
    return _costs_token(failure)
