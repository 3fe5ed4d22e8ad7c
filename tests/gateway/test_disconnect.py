"""A client that disconnects cancels its call: no provider request starts after the disconnect."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from routeproof.mock import Scripted
from tests.gateway.conftest import GATEWAY_KEY, StackFactory

pytestmark = pytest.mark.asyncio
BODY = {"model": "chat", "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]}
RETRY_SCHEDULE_S = 1.5  # the band backoff sleeps ~200 ms then ~800 ms (+-20 %): attempts 2 and 3 would start by then


@pytest.mark.parametrize("stream", [False, True])
async def test_disconnect_mid_retry_stops_provider_traffic(make_stack: StackFactory, stream: bool) -> None:
    """Disconnect during the first backoff sleep: the call is cancelled and the journal stays at one request."""
    async with make_stack(extra="") as stack:  # the default band backoff: 200 ms, then 800 ms
        stack.anthropic.set_default(Scripted(status=503))
        async with httpx.AsyncClient(timeout=10) as client:
            request = asyncio.create_task(
                client.post(
                    f"{stack.url}/v1/chat/completions",
                    json={**BODY, "stream": stream},
                    headers={"authorization": f"Bearer {GATEWAY_KEY}"},
                )
            )
            async with asyncio.timeout(5):
                await stack.anthropic.wait_for_requests(1)
            request.cancel()  # httpx drops the connection: the gateway sees the disconnect
            await asyncio.wait([request])
        async with asyncio.timeout(5):
            while stack.app.in_flight:  # noqa: ASYNC110 - a counter, polled until the call is gone
                await asyncio.sleep(0.01)
        await asyncio.sleep(RETRY_SCHEDULE_S)  # bounded: long enough for attempts 2 and 3 to have started
        assert len(stack.anthropic.journal) == 1
        assert not stack.openai.journal
