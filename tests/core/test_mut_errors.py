"""The error hierarchy: each error's exact text, its attributes and the attempt records it carries."""

from __future__ import annotations

from routeproof.core.errors import (
    AllProvidersFailed,
    AuthError,
    BudgetExhausted,
    DeadlineExceeded,
    InvalidResponse,
    NoEligibleProvider,
    ProviderCallFailed,
    ProviderHTTPError,
    RouterError,
    TerminalProviderError,
    UnknownAlias,
)
from routeproof.core.types import (
    AttemptFailure,
    AttemptFailureKind,
    AttemptRecord,
    AttemptStatus,
    ProviderKind,
    ProviderName,
)

_RECORDS = (
    AttemptRecord(
        provider=ProviderKind.OPENAI,
        model="m",
        attempt_num=1,
        fallback_position=0,
        status=AttemptStatus.FAILED_OVER,
        elapsed_ms=5,
    ),
)


def test_router_error_keeps_message_and_attempts() -> None:
    """A RouterError's text is its message; attempts default to () and with_attempts replaces them in place."""
    error = RouterError("boom")
    assert str(error) == "boom"
    assert error.attempts == ()
    assert error.with_attempts(_RECORDS) is error
    assert error.attempts == _RECORDS  # type: ignore[comparison-overlap]
    assert RouterError("x", attempts=_RECORDS).attempts == _RECORDS


def test_deadline_exceeded_default_text_and_attempts() -> None:
    """DeadlineExceeded says 'caller deadline exceeded' by default and keeps its records."""
    error = DeadlineExceeded(attempts=_RECORDS)
    assert str(error) == "caller deadline exceeded"
    assert error.attempts == _RECORDS
    assert str(DeadlineExceeded("late")) == "late"


def test_all_providers_failed_appends_the_last_error() -> None:
    """AllProvidersFailed names the last error after its message, and keeps it and the records."""
    plain = AllProvidersFailed()
    assert str(plain) == "all providers failed"
    assert plain.last_error is None
    last = RouterError("503 again")
    error = AllProvidersFailed(last_error=last, attempts=_RECORDS)
    assert str(error) == "all providers failed; last error: 503 again"
    assert error.last_error is last
    assert error.attempts == _RECORDS
    assert str(AllProvidersFailed("chain done", last_error=last)) == "chain done; last error: 503 again"


def test_auth_error_names_the_label_and_status() -> None:
    """AuthError's text names the instance with its kind (a kind-named one by its kind alone) and the status."""
    error = AuthError(ProviderName("vllm-a", ProviderKind.VLLM), 401, attempts=_RECORDS)
    assert str(error) == "vllm-a (vllm) rejected the credentials (HTTP 401)"
    assert str(AuthError(ProviderKind.VLLM, 403)) == "vllm rejected the credentials (HTTP 403)"
    assert str(AuthError(ProviderName("x", None), 401)) == "x rejected the credentials (HTTP 401)"
    assert error.provider == "vllm-a"
    assert error.status == 401
    assert error.attempts == _RECORDS


def test_http_errors_name_label_status_and_message() -> None:
    """Terminal and retryable HTTP errors show label, status and the provider's message, and keep every field."""
    for cls in (TerminalProviderError, ProviderHTTPError):
        error = cls(ProviderKind.ANTHROPIC, 400, "bad", retry_after_ms=7, attempts=_RECORDS)
        assert str(error) == "anthropic answered HTTP 400: 'bad'"
        assert error.provider is ProviderKind.ANTHROPIC
        assert error.status == 400
        assert error.provider_message == "bad"
        assert error.retry_after_ms == 7
        assert error.attempts == _RECORDS
        bare = cls(ProviderKind.OPENAI, 503)
        assert str(bare) == "openai answered HTTP 503: ''"
        assert bare.provider_message == ""
        assert bare.retry_after_ms is None


def test_invalid_response_names_the_provider_when_known() -> None:
    """InvalidResponse prefixes the provider's label when given, and keeps reason, provider and records."""
    error = InvalidResponse("no choices", provider=ProviderKind.OPENAI, attempts=_RECORDS)
    assert str(error) == "invalid response: openai: no choices"
    assert error.reason == "no choices"
    assert error.provider is ProviderKind.OPENAI
    assert error.attempts == _RECORDS
    anonymous = InvalidResponse("bug")
    assert str(anonymous) == "invalid response: bug"
    assert anonymous.provider is None


def test_budget_exhausted_names_scope_limit_request_and_spent() -> None:
    """BudgetExhausted's text shows every figure as repr, and each is kept as an attribute."""
    error = BudgetExhausted("session", 10, 12, spent=3, attempts=_RECORDS)
    assert str(error) == "budget exhausted: scope='session' limit=10 requested=12 spent=3"
    assert (error.scope, error.limit, error.requested, error.spent) == ("session", 10, 12, 3)
    assert error.attempts == _RECORDS
    assert str(BudgetExhausted("monthly", 1, 2)) == "budget exhausted: scope='monthly' limit=1 requested=2 spent=None"


def test_no_eligible_provider_says_when_one_returns() -> None:
    """NoEligibleProvider names its reason, and the earliest return time only when there is one."""
    error = NoEligibleProvider("all cooling", earliest_at=12.5, attempts=_RECORDS)
    assert str(error) == "no eligible provider: all cooling; earliest provider back at 12.5"
    assert error.reason == "all cooling"
    assert error.earliest_at == 12.5
    assert error.attempts == _RECORDS
    bare = NoEligibleProvider("tier")
    assert str(bare) == "no eligible provider: tier"
    assert bare.earliest_at is None


def test_provider_call_failed_carries_its_failure() -> None:
    """ProviderCallFailed's text names the failure kind, status and message; the failure is kept."""
    failure = AttemptFailure(kind=AttemptFailureKind.HTTP_STATUS, http_status=503, message="busy")
    error = ProviderCallFailed(failure)
    assert str(error) == "http_status: status=503 busy"
    assert error.failure is failure


def test_unknown_alias_lists_the_known_ones_sorted() -> None:
    """UnknownAlias names the alias and the policy's aliases in sorted order, and is a LookupError."""
    error = UnknownAlias("fsat", ("slow", "fast"))
    assert str(error) == "unknown model alias 'fsat'; this policy defines ['fast', 'slow']"
    assert error.alias == "fsat"
    assert isinstance(error, LookupError)
    assert error.attempts == ()
