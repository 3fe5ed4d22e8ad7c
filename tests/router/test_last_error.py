"""How AllProvidersFailed describes the last failed attempt (core/outcomes.py's last-error table)."""

from __future__ import annotations

import httpx
import pytest
import respx

from routeproof import AllProvidersFailed, AttemptStatus
from routeproof.errors import ProviderHTTPError, TerminalProviderError
from routeproof.router import Router
from tests.router.fixtures import (
    ANTHROPIC_URL,
    A,
    B,
    bedrock_url,
    deadline,
    policy,
    providers,
    request,
    resolved_for,
    status,
)

pytestmark = [pytest.mark.asyncio, pytest.mark.looptime(end=600)]


async def test_a_503_retried_then_failed_over_is_not_described_as_terminal(
    mock: respx.MockRouter, client: httpx.AsyncClient
) -> None:
    """A chain of 503s (retried, then failed over) ends with last_error a ProviderHTTPError(503), not terminal."""
    mock.post(bedrock_url()).mock(return_value=status(503))
    mock.post(ANTHROPIC_URL).mock(return_value=status(503))
    tenant = policy(B, [A])
    with pytest.raises(AllProvidersFailed) as info:
        await Router(providers(client)).call_provider(request(), resolved_for(tenant), deadline(), tenant)
    last = info.value.last_error
    assert isinstance(last, ProviderHTTPError)
    assert not isinstance(last, TerminalProviderError)
    assert last.status == 503
    assert "answered HTTP 503" in str(info.value)  # the message the gateway relays is unchanged
    assert AttemptStatus.RETRIED_AFTER_5XX in {a.status for a in info.value.attempts}
    assert {a.provider for a in info.value.attempts} == {B, A}
