"""Waiting for a local connection slot is not the provider's fault (issue 13): a hand-built Router
over an httpx pool of one connection, with a real loopback mock, so httpx really raises PoolTimeout."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from routeproof import LimitOptions
from routeproof.core.boundary import classify_exception
from routeproof.core.types import ProviderKind, ProviderResponse
from routeproof.errors import DeadlineExceeded, LocalCongestion, NoEligibleProvider
from routeproof.mock import MockProviderServer, Scripted, Shape
from routeproof.providers import _http
from routeproof.providers.openai import OpenAIProvider
from routeproof.router import Router
from routeproof.transport import make_client
from tests.router.fixtures import deadline, policy, request, resolved_for

OPENAI = ProviderKind.OPENAI


@pytest.mark.asyncio
async def test_pool_wait_is_local_congestion_not_a_provider_timeout() -> None:
    """A call stuck behind the only pooled connection is skipped as local_congestion: no attempt
    record, no health effect, and the call holding the connection still succeeds."""
    async with MockProviderServer(Shape.OPENAI) as server:
        server.script(Scripted(delay_before_headers_s=1.0))  # the first call holds the one connection
        client = make_client("httpx", connections=1)
        provider = OpenAIProvider(api_key="sk-test", base_url=f"{server.base_url}/v1", client=client)
        router = Router(
            [provider], limits=LimitOptions(max_in_flight_per_provider=None)
        )  # admission off: the pool is the limit
        tenant = policy(OPENAI)
        resolved = resolved_for(tenant)
        try:
            async with asyncio.timeout(10):
                holder = asyncio.create_task(router.call_provider(request(), resolved, deadline(5), tenant))
                await server.wait_for_requests(1)  # the holder's request is on the wire
                with pytest.raises((NoEligibleProvider, DeadlineExceeded)) as caught:
                    await router.call_provider(request(), resolved, deadline(0.3), tenant)
                answer = await holder
        finally:
            await client.aclose()
    # skipped as local_congestion, or (when the skip lands within a millisecond of the deadline) the
    # deadline; never an ATTEMPT_TIMEOUT/READ_TIMEOUT record against the provider
    assert caught.value.attempts == ()
    assert isinstance(caught.value, DeadlineExceeded) or "local_congestion" in str(caught.value)
    assert isinstance(answer, ProviderResponse)
    assert [a.provider for a in answer.attempts] == [OPENAI]
    assert len(server.journal) == 1  # the congested call sent nothing
    assert all(h.consecutive_failures == 0 for _, h in router.health.providers)  # nothing cooled


def test_pool_timeout_maps_to_local_congestion_through_the_one_table() -> None:
    """httpx.PoolTimeout's row in the transport-error table is LocalCongestion, which the attempt
    boundary turns into a skip (never an AttemptFailure)."""
    mapped = _http.transport_failure(httpx.PoolTimeout("no slot"), ("sk-secret",))
    assert isinstance(mapped, LocalCongestion)
    outcome, failure = classify_exception(mapped)
    assert outcome is not None
    assert outcome.skip_reason == "local_congestion"
    assert failure is None


def test_pool_wait_ends_before_the_attempt_bound() -> None:
    """The pool wait is shorter than the attempt's time left, so PoolTimeout wins the race to it."""
    for remaining_s in (0.002, 0.05, 1.0, 30.0):
        assert 0 < _http.pool_timeout_s(remaining_s) < remaining_s
