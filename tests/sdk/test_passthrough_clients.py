"""Same-protocol passthrough through ``routeproof serve``, driven by the official SDKs over loopback.

Each test points an official client (``openai``, ``anthropic``) at the gateway with a mock provider of
the same protocol first in the chain, and asserts on the body the mock received (the caller's own
fields verbatim; only ``model``, ``stream`` and the cap field name are the router's) and on what the
SDK parsed.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pydantic
import pytest
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from routeproof.gateway import Backend
from routeproof.mock import MockProviderServer, Shape
from tests.gateway.conftest import ENVIRON, FAST_BACKOFF, GATEWAY_KEY, metrics_reader, serve

__all__ = ["metrics_reader"]  # the gateway suite's session fixture, used here too

pytestmark = pytest.mark.asyncio

PNG_1PX = base64.b64encode(
    bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000"
                  "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082")
).decode()  # fmt: skip


@dataclass(frozen=True, slots=True, kw_only=True)
class Same:
    """A gateway whose chain starts with a provider of one protocol (``first``), the other second."""

    url: str
    first: MockProviderServer
    second: MockProviderServer


def _toml(first: Shape, first_url: str, second_url: str, *, alone: bool = False, openai_model: str = "gpt-4o") -> str:
    oai_first = first is Shape.OPENAI
    oai_url, ant_url = (first_url, second_url) if oai_first else (second_url, first_url)
    ant = f"""
[driver.providers.anthropic]
base_url = "{ant_url}"
model = "claude-sonnet-4-5"
priority = {2 if oai_first else 1}
"""
    oai = f"""
[driver.providers.openai]
base_url = "{oai_url}/v1"
model = "{openai_model}"
priority = {1 if oai_first else 2}
"""
    chain = (oai if oai_first else ant) if alone else ant + oai
    return f"""
{chain}

{FAST_BACKOFF}

[gateway]
aliases = ["chat"]

[gateway.tenants.team-a]
key_env = "GW_KEY_A"
"""


@asynccontextmanager
async def same_stack(
    tmp_path: Path,
    reader: InMemoryMetricReader | None,
    first: Shape,
    *,
    alone: bool = False,
    openai_model: str = "gpt-4o",
) -> AsyncIterator[Same]:
    """A gateway with ``first``'s protocol first in the chain, the other protocol second (none if ``alone``)."""
    other = Shape.ANTHROPIC if first is Shape.OPENAI else Shape.OPENAI
    async with MockProviderServer(first) as head, MockProviderServer(other) as tail:
        path = tmp_path / "agent.toml"
        path.write_text(_toml(first, head.base_url, tail.base_url, alone=alone, openai_model=openai_model))
        async with serve(Backend.load(path, environ=ENVIRON), reader) as (url, _app, _stop):
            yield Same(url=url, first=head, second=tail)


def _sent(server: MockProviderServer) -> dict[str, Any]:
    body = server.journal[-1].body_json
    assert isinstance(body, dict)
    return body


def _without(body: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in body.items() if k not in keys}


class Weather(pydantic.BaseModel):
    """A structured-output schema."""

    city: str
    celsius: float


async def test_openai_sdk_fields_reach_an_openai_provider_verbatim(
    tmp_path: Path, metrics_reader: InMemoryMetricReader | None
) -> None:
    """user, seed, metadata, n, service_tier, parallel_tool_calls, strict tools, images, newer fields: verbatim."""
    async with same_stack(tmp_path, metrics_reader, Shape.OPENAI) as s:
        client = openai.AsyncOpenAI(base_url=f"{s.url}/v1", api_key=GATEWAY_KEY, max_retries=0, timeout=15)
        messages: Any = [
            {"role": "system", "content": "be brief"},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "what is this?"},
                    {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG_1PX}", "detail": "low"}},
                    {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}},
                ],
            },
        ]
        tools: Any = [
            {
                "type": "function",
                "function": {
                    "name": "lookup",
                    "strict": True,
                    "parameters": {"type": "object", "properties": {}, "additionalProperties": False},
                },
            }
        ]
        extra = {"verbosity": "low", "prompt_cache_key": "k-1"}  # newer than this code's parser
        raw = await client.chat.completions.with_raw_response.create(
            model="chat", messages=messages, tools=tools, user="u-42", seed=7, n=1, metadata={"trace": "t1"},
            service_tier="auto", parallel_tool_calls=False, logprobs=True, top_logprobs=2,
            response_format={"type": "json_object"}, extra_body=extra, extra_headers={"OpenAI-Beta": "assistants=v2"},
        )  # fmt: skip
        completion = raw.parse()
        await client.close()
        assert completion.choices[0].message.tool_calls  # the mock calls the first tool it is offered
        assert "x-routeproof-dropped" not in raw.headers  # nothing was left out
        sent = _sent(s.first)
        assert not s.second.journal
        assert sent["model"] == "gpt-4o"
        assert "max_tokens" not in sent  # no cap invented
        assert "max_completion_tokens" not in sent
        expected = {
            "messages": messages, "tools": tools, "user": "u-42", "seed": 7, "n": 1, "metadata": {"trace": "t1"},
            "service_tier": "auto", "parallel_tool_calls": False, "logprobs": True, "top_logprobs": 2,
            "response_format": {"type": "json_object"}, **extra,
        }  # fmt: skip
        assert _without(sent, "model") == expected
        assert s.first.journal[-1].header("openai-beta") == "assistants=v2"


async def test_openai_parse_with_a_pydantic_model_passes_its_json_schema(
    tmp_path: Path, metrics_reader: InMemoryMetricReader | None
) -> None:
    """chat.completions.parse sends a strict json_schema response_format verbatim and parses the answer."""
    async with same_stack(tmp_path, metrics_reader, Shape.OPENAI) as s:
        from routeproof.mock import Scripted

        answer = {
            "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-4o",
            "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                         "message": {"role": "assistant", "content": '{"city":"Oslo","celsius":3.5}',
                                     "refusal": None}}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 5, "total_tokens": 10},
        }  # fmt: skip
        s.first.script(Scripted(body=answer))
        client = openai.AsyncOpenAI(base_url=f"{s.url}/v1", api_key=GATEWAY_KEY, max_retries=0, timeout=15)
        done = await client.chat.completions.parse(
            model="chat", messages=[{"role": "user", "content": "weather?"}], response_format=Weather
        )
        await client.close()
        assert done.choices[0].message.parsed == Weather(city="Oslo", celsius=3.5)
        sent = _sent(s.first)
        assert sent["response_format"]["type"] == "json_schema"
        assert sent["response_format"]["json_schema"]["strict"] is True
        assert sent["response_format"]["json_schema"]["name"] == "Weather"


async def test_openai_stream_keeps_the_callers_fields_and_asks_for_usage(
    tmp_path: Path, metrics_reader: InMemoryMetricReader | None
) -> None:
    """A streamed same-protocol call sends stream and include_usage (router-owned) and the rest verbatim."""
    async with same_stack(tmp_path, metrics_reader, Shape.OPENAI) as s:
        client = openai.AsyncOpenAI(base_url=f"{s.url}/v1", api_key=GATEWAY_KEY, max_retries=0, timeout=15)
        stream = await client.chat.completions.create(
            model="chat", messages=[{"role": "user", "content": "hi"}], stream=True, user="u-1", seed=3,
            max_tokens=40,
        )  # fmt: skip
        text = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
        await client.close()
        assert text
        sent = _sent(s.first)
        assert sent["stream"] is True
        assert sent["stream_options"] == {"include_usage": True}
        assert (sent["user"], sent["seed"]) == ("u-1", 3)
        assert sent["max_completion_tokens"] == 40  # the field gpt-4o takes, the caller's value
        assert "max_tokens" not in sent


async def test_anthropic_sdk_caching_thinking_and_beta_reach_an_anthropic_provider_verbatim(
    tmp_path: Path, metrics_reader: InMemoryMetricReader | None
) -> None:
    """System text blocks with cache_control, thinking, a signed thinking block across a tool turn,
    metadata, an image block and anthropic-beta all reach an Anthropic provider as sent."""
    async with same_stack(tmp_path, metrics_reader, Shape.ANTHROPIC) as s:
        client = anthropic.AsyncAnthropic(base_url=s.url, api_key=GATEWAY_KEY, max_retries=0, timeout=15)
        system: Any = [{"type": "text", "text": "long prompt", "cache_control": {"type": "ephemeral", "ttl": "1h"}}]
        messages: Any = [
            {"role": "user", "content": [
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_1PX}},
                {"type": "text", "text": "weather in Oslo?"}]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "I should call the tool.", "signature": "EqQBCkYIARgCIkD+/sig=="},
                {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Oslo"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "3C"}]},
        ]  # fmt: skip
        tools: Any = [{"name": "weather", "input_schema": {"type": "object"}, "cache_control": {"type": "ephemeral"}}]
        raw = await client.messages.with_raw_response.create(
            model="chat", max_tokens=2048, system=system, messages=messages, tools=tools,
            thinking={"type": "enabled", "budget_tokens": 1024}, metadata={"user_id": "u-9"},
            extra_headers={"anthropic-beta": "interleaved-thinking-2025-05-14"},
        )  # fmt: skip
        await raw.parse()
        await client.close()
        assert not s.second.journal
        sent = _sent(s.first)
        expected = {
            "max_tokens": 2048, "system": system, "messages": messages, "tools": tools,
            "thinking": {"type": "enabled", "budget_tokens": 1024}, "metadata": {"user_id": "u-9"},
        }  # fmt: skip
        assert _without(sent, "model") == expected
        assert sent["model"] == "claude-sonnet-4-5"
        assert s.first.journal[-1].header("anthropic-beta") == "interleaved-thinking-2025-05-14"


async def test_a_field_another_protocol_refuses_skips_that_provider_for_a_same_protocol_one(
    tmp_path: Path, metrics_reader: InMemoryMetricReader | None
) -> None:
    """An OpenAI field with no Anthropic row (a future one) skips the Anthropic primary; the OpenAI
    fallback gets it verbatim."""
    async with same_stack(tmp_path, metrics_reader, Shape.ANTHROPIC) as s:
        client = openai.AsyncOpenAI(base_url=f"{s.url}/v1", api_key=GATEWAY_KEY, max_retries=0, timeout=15)
        await client.chat.completions.create(
            model="chat", messages=[{"role": "user", "content": "hi"}], extra_body={"future_param": {"a": 1}}
        )
        await client.close()
        assert not s.first.journal  # nothing was sent to the provider that cannot carry it
        assert _sent(s.second)["future_param"] == {"a": 1}


async def test_when_no_provider_can_carry_a_field_the_answer_is_a_400_naming_it(
    tmp_path: Path, metrics_reader: InMemoryMetricReader | None
) -> None:
    """An Anthropic-only chain and an OpenAI-only field: a 400 in OpenAI's error shape naming the field."""
    async with same_stack(tmp_path, metrics_reader, Shape.ANTHROPIC, alone=True) as s:
        client = openai.AsyncOpenAI(base_url=f"{s.url}/v1", api_key=GATEWAY_KEY, max_retries=0, timeout=15)
        with pytest.raises(openai.BadRequestError, match="future_param") as caught:
            await client.chat.completions.create(
                model="chat", messages=[{"role": "user", "content": "hi"}], extra_body={"future_param": 1}
            )
        await client.close()
        assert caught.value.status_code == 400
        assert not s.first.journal


async def test_cross_protocol_drops_are_named_and_anthropic_gets_the_documented_cap(
    tmp_path: Path, metrics_reader: InMemoryMetricReader | None
) -> None:
    """OpenAI client, Anthropic provider: seed (the emitter's drop), verbosity (the table's) and
    OpenAI-Beta are named dropped (plain, and before the first stream event); the uncapped request is
    sent with the model's documented maximum output."""
    async with same_stack(tmp_path, metrics_reader, Shape.ANTHROPIC) as s:
        client = openai.AsyncOpenAI(base_url=f"{s.url}/v1", api_key=GATEWAY_KEY, max_retries=0, timeout=15)
        hello: Any = [{"role": "user", "content": "hi"}]
        beta = {"OpenAI-Beta": "assistants=v2"}
        raw = await client.chat.completions.with_raw_response.create(
            model="chat", messages=hello, extra_headers=beta, seed=5, extra_body={"verbosity": "low"}
        )
        assert sorted(raw.headers["x-routeproof-dropped"].split(",")) == ["header:openai-beta", "seed", "verbosity"]
        sent = _sent(s.first)
        assert sent["max_tokens"] == 64000  # claude-sonnet-4-5's documented maximum (models.toml)
        assert s.first.journal[-1].header("openai-beta") is None
        async with client.chat.completions.with_streaming_response.create(
            model="chat", messages=hello, extra_headers=beta, stream=True
        ) as streamed:
            assert streamed.headers["x-routeproof-dropped"] == "header:openai-beta"  # before any event
            assert [line async for line in streamed.iter_lines() if line.startswith("data: ")]
        await client.close()
        async with httpx.AsyncClient(timeout=15) as http:
            scraped = (await http.get(f"{s.url}/metrics")).text
        if metrics_reader is not None:  # the process's SDK meter provider is ours: the drop is counted
            counted = [line for line in scraped.splitlines() if line.startswith("ai_router_parameters_dropped_total")]
            assert any('parameter="seed"' in line and 'provider="anthropic"' in line for line in counted), counted


async def test_a_same_protocol_answer_reaches_the_caller_with_every_field(
    tmp_path: Path, metrics_reader: InMemoryMetricReader | None
) -> None:
    """OpenAI provider, OpenAI client: reasoning and cached tokens, logprobs and fields the neutral
    model does not carry (system_fingerprint, service_tier) come back as the provider sent them."""
    from routeproof.mock import Scripted

    logprobs = {"content": [{"token": "Hi", "logprob": -0.1, "bytes": [72, 105], "top_logprobs": []}], "refusal": None}
    answer = {
        "id": "chatcmpl-own", "object": "chat.completion", "created": 1, "model": "gpt-4o",
        "system_fingerprint": "fp_1", "service_tier": "default",
        "choices": [{"index": 0, "finish_reason": "stop", "logprobs": logprobs,
                     "message": {"role": "assistant", "content": "Hi", "refusal": None, "annotations": []}}],
        "usage": {"prompt_tokens": 50, "completion_tokens": 30, "total_tokens": 80,
                  "prompt_tokens_details": {"cached_tokens": 40},
                  "completion_tokens_details": {"reasoning_tokens": 20}},
    }  # fmt: skip
    async with same_stack(tmp_path, metrics_reader, Shape.OPENAI) as s:
        s.first.script(Scripted(body=answer))
        client = openai.AsyncOpenAI(base_url=f"{s.url}/v1", api_key=GATEWAY_KEY, max_retries=0, timeout=15)
        done = await client.chat.completions.create(
            model="chat", messages=[{"role": "user", "content": "hi"}], logprobs=True
        )
        await client.close()
    assert done.usage is not None
    assert done.usage.completion_tokens_details is not None
    assert done.usage.completion_tokens_details.reasoning_tokens == 20
    assert done.usage.prompt_tokens_details is not None
    assert done.usage.prompt_tokens_details.cached_tokens == 40
    assert done.choices[0].logprobs is not None
    assert done.choices[0].logprobs.content is not None
    assert done.choices[0].logprobs.content[0].token == "Hi"
    assert done.system_fingerprint == "fp_1"


async def test_an_anthropic_answer_keeps_its_signed_thinking_block_and_cache_usage(
    tmp_path: Path, metrics_reader: InMemoryMetricReader | None
) -> None:
    """Anthropic provider, Anthropic client: the thinking block and its signature come back byte-exact,
    with cache-read and cache-creation tokens, so the next turn can send the block back intact."""
    from routeproof.mock import Scripted

    thinking = {"type": "thinking", "thinking": "Let me think.", "signature": "ErUBCkYIBRgCIkB/+sig=="}
    answer = {
        "id": "msg_own", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [thinking, {"type": "text", "text": "Hi"}], "stop_reason": "end_turn", "stop_sequence": None,
        "usage": {"input_tokens": 5, "output_tokens": 9, "cache_read_input_tokens": 100,
                  "cache_creation_input_tokens": 7},
    }  # fmt: skip
    async with same_stack(tmp_path, metrics_reader, Shape.ANTHROPIC) as s:
        s.first.script(Scripted(body=answer))
        client = anthropic.AsyncAnthropic(base_url=s.url, api_key=GATEWAY_KEY, max_retries=0, timeout=15)
        done = await client.messages.create(
            model="chat", max_tokens=2048, messages=[{"role": "user", "content": "hi"}],
            thinking={"type": "enabled", "budget_tokens": 1024},
        )  # fmt: skip
        await client.close()
    block = done.content[0]
    assert block.type == "thinking"
    assert block.signature == thinking["signature"]
    assert block.thinking == thinking["thinking"]
    assert done.usage.cache_read_input_tokens == 100
    assert done.usage.cache_creation_input_tokens == 7


async def test_a_streamed_thinking_block_reaches_an_anthropic_client_with_its_signature(
    tmp_path: Path, metrics_reader: InMemoryMetricReader | None
) -> None:
    """Anthropic stream through the gateway: the thinking block (thinking and signature deltas)
    arrives before the text, and the SDK's final message holds it byte-exact."""
    from routeproof.mock.features import MOCK_SIGNATURE, MOCK_THINKING

    async with same_stack(tmp_path, metrics_reader, Shape.ANTHROPIC) as s:
        client = anthropic.AsyncAnthropic(base_url=s.url, api_key=GATEWAY_KEY, max_retries=0, timeout=15)
        async with client.messages.stream(
            model="chat", max_tokens=2048, messages=[{"role": "user", "content": "hi"}],
            thinking={"type": "enabled", "budget_tokens": 1024},
        ) as stream:  # fmt: skip
            final = await stream.get_final_message()
        await client.close()
    first = final.content[0]
    assert first.type == "thinking"
    assert (first.thinking, first.signature) == (MOCK_THINKING, MOCK_SIGNATURE)
    assert final.content[1].type == "text"


async def test_streamed_reasoning_tokens_reach_an_openai_client(
    tmp_path: Path, metrics_reader: InMemoryMetricReader | None
) -> None:
    """A streamed call with reasoning_effort to a reasoning model: the final usage chunk names the reasoning tokens."""
    from routeproof.mock.features import MOCK_REASONING_TOKENS

    async with same_stack(tmp_path, metrics_reader, Shape.OPENAI, openai_model="o3") as s:
        client = openai.AsyncOpenAI(base_url=f"{s.url}/v1", api_key=GATEWAY_KEY, max_retries=0, timeout=15)
        stream = await client.chat.completions.create(
            model="chat", messages=[{"role": "user", "content": "hi"}], reasoning_effort="low", stream=True,
            stream_options={"include_usage": True},
        )  # fmt: skip
        chunks = [c async for c in stream]
        await client.close()
        assert _sent(s.first)["reasoning_effort"] == "low"
    usage = chunks[-1].usage
    assert usage is not None
    assert usage.completion_tokens_details is not None
    assert usage.completion_tokens_details.reasoning_tokens == MOCK_REASONING_TOKENS


async def test_a_nested_field_with_no_equivalent_is_named_or_refused_never_lost(
    tmp_path: Path, metrics_reader: InMemoryMetricReader | None
) -> None:
    """OpenAI client, Anthropic provider: a message's ``name`` (no Anthropic equivalent) is named
    dropped; a key inside a content part that no row maps skips the Anthropic provider (the OpenAI one
    behind it carries it verbatim) and, with no other provider, is a 400 naming it. The cross-protocol
    path used to judge top-level keys only, so both were lost silently."""
    odd: Any = [{"role": "user", "content": [{"type": "text", "text": "hi", "future_part_key": 1}]}]
    async with same_stack(tmp_path, metrics_reader, Shape.ANTHROPIC) as s:
        client = openai.AsyncOpenAI(base_url=f"{s.url}/v1", api_key=GATEWAY_KEY, max_retries=0, timeout=15)
        named: Any = [{"role": "user", "content": "hi", "name": "bob"}]
        raw = await client.chat.completions.with_raw_response.create(model="chat", messages=named)
        assert raw.headers["x-routeproof-dropped"].split(",") == ["messages[].name"]
        served = len(s.first.journal)
        await client.chat.completions.create(model="chat", messages=odd)
        assert len(s.first.journal) == served  # skipped before anything was sent
        assert _sent(s.second)["messages"][0]["content"][0]["future_part_key"] == 1
        await client.close()
    async with same_stack(tmp_path, metrics_reader, Shape.ANTHROPIC, alone=True) as s:
        client = openai.AsyncOpenAI(base_url=f"{s.url}/v1", api_key=GATEWAY_KEY, max_retries=0, timeout=15)
        with pytest.raises(openai.BadRequestError, match="future_part_key") as caught:
            await client.chat.completions.create(model="chat", messages=odd)
        assert caught.value.status_code == 400
        assert not s.first.journal
        await client.close()
