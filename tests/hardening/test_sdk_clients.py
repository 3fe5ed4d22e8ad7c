"""The hardening answers as the real SDKs see them (openai, anthropic; nobody here wrote them): a store
that is down is a 503 status error carrying our code, error type and Retry-After."""

from __future__ import annotations

from pathlib import Path

import anthropic
import openai
import pytest

from tests.gateway.conftest import FAST_BACKOFF, GATEWAY_KEY, StackFactory

pytestmark = pytest.mark.asyncio
PRICING = Path(__file__).resolve().parents[2] / "config" / "pricing.toml"
LEDGER = '\n[ledger]\nbackend = "redis"\nurl = "redis://127.0.0.1:9/0"\n'
MESSAGES = [{"role": "user", "content": "hi"}]


async def test_sdks_see_store_unavailable_as_a_503_with_our_code(make_stack: StackFactory) -> None:
    """openai raises InternalServerError (503) with code store_unavailable; anthropic an
    InternalServerError (503) whose body says overloaded_error; no provider was called."""
    async with make_stack(extra=FAST_BACKOFF + LEDGER, pricing=str(PRICING), budget_usd="5") as stack:
        async with openai.AsyncOpenAI(base_url=f"{stack.url}/v1", api_key=GATEWAY_KEY, max_retries=0) as oai:
            with pytest.raises(openai.InternalServerError) as oai_error:
                await oai.chat.completions.create(model="chat", messages=MESSAGES)  # type: ignore[arg-type]
        async with anthropic.AsyncAnthropic(base_url=stack.url, api_key=GATEWAY_KEY, max_retries=0) as ant:
            with pytest.raises(anthropic.APIStatusError) as ant_error:
                await ant.messages.create(model="chat", max_tokens=8, messages=MESSAGES)  # type: ignore[arg-type]
        assert stack.provider_requests() == 0
    assert oai_error.value.status_code == 503
    assert oai_error.value.code == "store_unavailable"
    assert oai_error.value.response.headers["retry-after"] == "1"
    assert ant_error.value.status_code == 503
    assert isinstance(ant_error.value.body, dict)
    assert ant_error.value.body["error"]["type"] == "overloaded_error"
