"""What the gateway answers when a call fails: one table from condition to HTTP status and error
type, in the shape of the API the client spoke, with the attempt records in an extension field.

| condition                                   | status | code                       |
| ------------------------------------------- | ------ | -------------------------- |
| missing or unknown gateway key              | 401    | invalid_api_key            |
| body over ``max_body_bytes``                | 413    | request_too_large          |
| not JSON, not the API's request shape, bad deadline header, a provider's 400 | 400 | invalid_request |
| ``model`` is not a configured alias         | 404    | model_not_found            |
| budget exhausted (``BudgetExhausted``)      | 402    | budget_exhausted           |
| every provider failed (``AllProvidersFailed``) | 502 | all_providers_failed     |
| a provider's 404 (its catalogue lacks the model) | 404 | upstream_model_not_found |
| an invalid provider answer                  | 502    | upstream_error             |
| a provider rejected the gateway's credentials | 502   | upstream_error (*)         |
| no provider may take the call (tier, cooling) | 503  | no_eligible_provider       |
| the ledger store is down, locked or full (``LedgerUnavailable``) | 503 | store_unavailable (+ ``Retry-After``) |
| the tenant's share of in-flight calls and queue is full | 503 | tenant_saturated (+ ``Retry-After``) |
| a body whose content type is not JSON       | 415    | unsupported_media_type     |
| the caller's deadline elapsed (``DeadlineExceeded``) | 504 | deadline_exceeded     |

(*) never 401 (``AuthError``): that would tell the client its own key is wrong.
Budget is 402, not 429: SDKs retry a 429 at once, and a spent budget does not come back in seconds.
The extension field is ``routeproof`` at the top level of the error body:
``{"code": ..., "attempts": [attempt, ...]}`` (see :func:`attempt_json`).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from routeproof.core.types import AttemptRecord
from routeproof.errors import (
    AllProvidersFailed,
    AuthError,
    BudgetExhausted,
    DeadlineExceeded,
    NoEligibleProvider,
    RouterError,
    TerminalProviderError,
    TranslationError,
)
from routeproof.ledger_store.protocol import LedgerUnavailable

__all__ = ["STORE_RETRY_AFTER_S", "Api", "Failure", "attempt_json", "error_body", "failure_for", "failure_headers"]


class Api(enum.Enum):
    """The wire API a client spoke."""

    OPENAI = "openai"
    ANTHROPIC = "anthropic"
    RESPONSES = "responses"  # OpenAI's Responses API: OpenAI's error shape


@dataclass(frozen=True, slots=True, kw_only=True)
class Failure:
    """A failed request as the gateway answers it."""

    status: int
    code: str
    message: str
    attempts: tuple[AttemptRecord, ...] = ()
    retry_after_s: int | None = None
    """Sent as ``Retry-After`` (whole seconds) when set: the condition is expected to pass."""


STORE_RETRY_AFTER_S = 1
"""``Retry-After`` while the ledger store is unavailable: fail closed, try again in a second."""


def failure_headers(failure: Failure) -> tuple[tuple[bytes, bytes], ...]:
    """The extra response headers for ``failure`` (``Retry-After`` when it has one)."""
    if failure.retry_after_s is None:
        return ()
    return ((b"retry-after", str(failure.retry_after_s).encode()),)


_OPENAI_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "insufficient_quota",
    404: "invalid_request_error",
    405: "invalid_request_error",
    413: "invalid_request_error",
    415: "invalid_request_error",
    429: "requests",  # OpenAI's type for a rate limit (its code: rate_limit_exceeded)
}
_ANTHROPIC_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    404: "not_found_error",
    405: "invalid_request_error",
    413: "request_too_large",
    415: "invalid_request_error",
    429: "rate_limit_error",
    503: "overloaded_error",
    504: "timeout_error",
}


def failure_for(exc: RouterError) -> Failure:
    """The gateway's answer to a RouterError raised by a routed call."""
    attempts = exc.attempts
    if isinstance(exc, DeadlineExceeded):
        return Failure(status=504, code="deadline_exceeded", message=str(exc), attempts=attempts)
    if isinstance(exc, BudgetExhausted):
        return Failure(status=402, code="budget_exhausted", message=str(exc), attempts=attempts)
    if isinstance(exc, LedgerUnavailable):  # fail closed: nothing was sent unbooked; the store may be back soon
        return Failure(
            status=503, code="store_unavailable", message=str(exc), attempts=attempts, retry_after_s=STORE_RETRY_AFTER_S
        )
    if isinstance(exc, NoEligibleProvider):
        return Failure(status=503, code="no_eligible_provider", message=str(exc), attempts=attempts)
    if isinstance(exc, AuthError):
        message = "an upstream provider rejected the gateway's credentials (the operator is alerted)"
        return Failure(status=502, code="upstream_error", message=message, attempts=attempts)
    if isinstance(exc, TerminalProviderError) and exc.status == 400:
        return Failure(status=400, code="invalid_request", message=str(exc), attempts=attempts)
    if isinstance(exc, TerminalProviderError) and exc.status == 404:
        return Failure(status=404, code="upstream_model_not_found", message=str(exc), attempts=attempts)
    if isinstance(exc, TranslationError):
        return Failure(status=400, code="invalid_request", message=str(exc), attempts=attempts)
    if isinstance(exc, AllProvidersFailed):
        return Failure(status=502, code="all_providers_failed", message=str(exc), attempts=attempts)
    return Failure(status=502, code="upstream_error", message=str(exc), attempts=attempts)


def attempt_json(record: AttemptRecord) -> dict[str, Any]:
    """One attempt record as JSON (the ``routeproof.attempts`` items and the success header)."""
    return {
        "provider": record.provider.as_metric_label(),
        "model": record.model,
        "attempt": record.attempt_num,
        "fallback_position": record.fallback_position,
        "status": record.status.value,
        "http_status": record.http_status,
        "elapsed_ms": record.elapsed_ms,
        "retry_reason": None if record.retry_reason is None else record.retry_reason.value,
        "first_token_ms": record.first_token_ms,
    }


def error_body(api: Api, failure: Failure) -> dict[str, Any]:
    """The error body in ``api``'s documented shape, plus the ``routeproof`` extension field."""
    extension = {"code": failure.code, "attempts": [attempt_json(r) for r in failure.attempts]}
    if api is not Api.ANTHROPIC:
        kind = _OPENAI_TYPES.get(failure.status, "server_error")
        error = {"message": failure.message, "type": kind, "param": None, "code": failure.code}
        return {"error": error, "routeproof": extension}
    kind = _ANTHROPIC_TYPES.get(failure.status, "api_error")
    return {"type": "error", "error": {"type": kind, "message": failure.message}, "routeproof": extension}
