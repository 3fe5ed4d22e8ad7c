"""The mock answers with what a request asks for (thinking and signatures, cache and reasoning
usage, logprobs), as the official SDKs parse it, and journals the body exactly as received."""

from __future__ import annotations

import anthropic
import openai
import pytest

from routeproof.mock import MockProviderServer, Shape
from routeproof.mock.features import (
    MOCK_CACHE_READ_TOKENS,
    MOCK_CACHE_WRITE_TOKENS,
    MOCK_REASONING_TOKENS,
    MOCK_SIGNATURE,
    MOCK_THINKING,
    Asks,
    asked,
)

THINK: anthropic.types.ThinkingConfigEnabledParam = {"type": "enabled", "budget_tokens": 1024}


def test_asks_reads_the_request() -> None:
    """thinking, cache markers, reasoning models, logprobs and top_logprobs are read from the body."""
    system = [{"type": "text", "text": "s", "cache_control": {"type": "ephemeral"}}]
    assert asked(Shape.ANTHROPIC, {"thinking": dict(THINK), "system": system}) == Asks(thinking=True, cache=True)
    assert asked(Shape.OPENAI, {"model": "o3", "logprobs": True, "top_logprobs": 2}) == Asks(
        reasoning=True, logprobs=True, top_logprobs=2
    )
    assert asked(Shape.OPENAI, {"model": "gpt-4o"}) == Asks()


@pytest.mark.asyncio
async def test_anthropic_thinking_and_cache_usage_plain_and_streamed() -> None:
    """A thinking request gets a signed thinking block first; cache markers get cache usage."""
    async with MockProviderServer(Shape.ANTHROPIC) as mock:
        client = anthropic.AsyncAnthropic(base_url=mock.base_url, api_key="k", max_retries=0, timeout=10)
        system: list[anthropic.types.TextBlockParam] = [
            {"type": "text", "text": "long", "cache_control": {"type": "ephemeral"}}
        ]
        hello: list[anthropic.types.MessageParam] = [{"role": "user", "content": "hi"}]
        done = await client.messages.create(
            model="claude-sonnet-4-5", max_tokens=2048, system=system, messages=hello, thinking=THINK
        )
        first = done.content[0]
        assert first.type == "thinking"
        assert (first.thinking, first.signature) == (MOCK_THINKING, MOCK_SIGNATURE)
        assert done.content[1].type == "text"
        assert done.usage.cache_read_input_tokens == MOCK_CACHE_READ_TOKENS
        assert done.usage.cache_creation_input_tokens == MOCK_CACHE_WRITE_TOKENS
        async with client.messages.stream(
            model="claude-sonnet-4-5", max_tokens=2048, messages=hello, thinking=THINK
        ) as stream:
            final = await stream.get_final_message()
        await client.close()
        block = final.content[0]
        assert block.type == "thinking"
        assert (block.thinking, block.signature) == (MOCK_THINKING, MOCK_SIGNATURE)
        assert final.content[1].type == "text"
        assert '"budget_tokens":1024' in mock.journal[0].body_text.replace(" ", "")  # the body as received
        assert len(mock.journal[0].body_text.encode()) == mock.journal[0].body_size


@pytest.mark.asyncio
async def test_openai_reasoning_usage_and_logprobs_plain_and_streamed() -> None:
    """A reasoning model reports reasoning tokens; a cache key cached tokens (inside prompt_tokens, as
    OpenAI counts them); logprobs: true gets token logprobs (plain and chunks)."""
    async with MockProviderServer(Shape.OPENAI) as mock:
        client = openai.AsyncOpenAI(base_url=f"{mock.base_url}/v1", api_key="k", max_retries=0, timeout=10)
        done = await client.chat.completions.create(
            model="o3", messages=[{"role": "user", "content": "hi"}], logprobs=True, top_logprobs=2,
            prompt_cache_key="k-1",
        )  # fmt: skip
        assert done.usage is not None
        assert done.usage.prompt_tokens_details is not None
        assert done.usage.prompt_tokens_details.cached_tokens == MOCK_CACHE_READ_TOKENS
        assert done.usage.prompt_tokens >= MOCK_CACHE_READ_TOKENS
        assert done.usage is not None
        assert done.usage.completion_tokens_details is not None
        assert done.usage.completion_tokens_details.reasoning_tokens == MOCK_REASONING_TOKENS
        logprobs = done.choices[0].logprobs
        assert logprobs is not None
        assert logprobs.content
        assert "".join(t.token for t in logprobs.content) == done.choices[0].message.content
        assert len(logprobs.content[0].top_logprobs) == 2
        stream = await client.chat.completions.create(
            model="o3", messages=[{"role": "user", "content": "hi"}], logprobs=True, stream=True,
            stream_options={"include_usage": True},
        )  # fmt: skip
        chunks = [c async for c in stream]
        await client.close()
        assert any(c.choices and c.choices[0].logprobs and c.choices[0].logprobs.content for c in chunks)
        usage = chunks[-1].usage
        assert usage is not None
        assert usage.completion_tokens_details is not None
        assert usage.completion_tokens_details.reasoning_tokens == MOCK_REASONING_TOKENS
