"""The two provider HTTP-status errors share one shape and stay two unrelated kinds."""

from __future__ import annotations

import pytest

from routeproof.core.identity import ProviderKind, ProviderName
from routeproof.errors import ProviderHTTPError, TerminalProviderError


@pytest.mark.parametrize("error_type", [TerminalProviderError, ProviderHTTPError])
def test_status_errors_carry_the_same_fields(error_type: type[TerminalProviderError | ProviderHTTPError]) -> None:
    """Both errors keep provider, status, the provider's message, Retry-After and the message text."""
    provider = ProviderName("openai-eu", ProviderKind.OPENAI)
    error = error_type(provider, 503, "overloaded", retry_after_ms=1_500)
    assert (error.provider, error.status, error.provider_message, error.retry_after_ms, error.attempts) == (
        provider,
        503,
        "overloaded",
        1_500,
        (),
    )
    assert str(error) == "openai-eu (openai) answered HTTP 503: 'overloaded'"


def test_neither_status_error_is_the_other() -> None:
    """``except TerminalProviderError`` never catches a retried-out 503, nor the other way round."""
    assert not issubclass(ProviderHTTPError, TerminalProviderError)
    assert not issubclass(TerminalProviderError, ProviderHTTPError)
