"""The official ``openai`` SDK against the gateway, with the mock providers behind it."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any, cast

import openai
import pytest
import pytest_asyncio
from openai.types.chat import (
    ChatCompletionMessageFunctionToolCall,
    ChatCompletionMessageParam,
    ChatCompletionToolParam,
)

from routeproof.gateway import ATTEMPTS_HEADER
from routeproof.mock import DEFAULT_TEXT, DEFAULT_TOOL_INPUT, Scripted
from tests.gateway.conftest import GATEWAY_KEY, Stack

pytestmark = pytest.mark.asyncio
TOOL: ChatCompletionToolParam = {"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}}
HELLO: list[ChatCompletionMessageParam] = [{"role": "user", "content": "hi"}]


@pytest_asyncio.fixture
async def client(stack: Stack) -> AsyncIterator[openai.AsyncOpenAI]:
    """An OpenAI SDK client pointed at the gateway (no SDK retries: the gateway decides)."""
    async with openai.AsyncOpenAI(base_url=f"{stack.url}/v1", api_key=GATEWAY_KEY, max_retries=0, timeout=15) as c:
        yield c


async def test_plain_completion_is_answered_by_the_primary(client: openai.AsyncOpenAI, stack: Stack) -> None:
    """A plain chat completion parses in the SDK and comes from the first provider (Anthropic)."""
    raw = await client.chat.completions.with_raw_response.create(model="chat", messages=HELLO, max_tokens=32)
    completion = raw.parse()
    assert completion.choices[0].message.content == DEFAULT_TEXT
    assert completion.choices[0].finish_reason == "stop"
    assert completion.usage is not None
    assert completion.usage.total_tokens > 0
    attempts = json.loads(raw.headers[ATTEMPTS_HEADER])
    assert [(a["provider"], a["status"]) for a in attempts] == [("anthropic", "succeeded")]
    assert len(stack.anthropic.journal) == 1
    assert not stack.openai.journal


async def test_streamed_completion_arrives_in_chunks(client: openai.AsyncOpenAI) -> None:
    """A streamed completion is valid chunk SSE: the text reassembles and usage comes last."""
    stream = await client.chat.completions.create(
        model="chat",
        messages=HELLO,
        max_tokens=32,
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = [chunk async for chunk in stream]
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == DEFAULT_TEXT
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].usage is not None
    assert chunks[-1].usage.completion_tokens > 0


async def test_tool_call_plain_and_streamed(client: openai.AsyncOpenAI) -> None:
    """A tool call comes back with its id, name and JSON arguments, plain and streamed."""
    completion = await client.chat.completions.create(model="chat", messages=HELLO, tools=[TOOL], max_tokens=32)
    calls = completion.choices[0].message.tool_calls or []
    call = calls[0]
    assert isinstance(call, ChatCompletionMessageFunctionToolCall)
    assert call.function.name == "search"
    assert json.loads(call.function.arguments) == json.loads(DEFAULT_TOOL_INPUT)
    assert completion.choices[0].finish_reason == "tool_calls"
    stream = await client.chat.completions.create(
        model="chat",
        messages=HELLO,
        tools=[TOOL],
        max_tokens=32,
        stream=True,
    )
    arguments, names = "", []
    async for chunk in stream:
        for delta in chunk.choices[0].delta.tool_calls or () if chunk.choices else ():
            names += [delta.function.name] if delta.function and delta.function.name else []
            arguments += delta.function.arguments or "" if delta.function else ""
    assert names == ["search"]
    assert json.loads(arguments) == json.loads(DEFAULT_TOOL_INPUT)


async def test_fails_over_when_the_primary_keeps_failing(client: openai.AsyncOpenAI, stack: Stack) -> None:
    """Three 503s from Anthropic: the answer comes from OpenAI and the header lists all four attempts."""
    stack.anthropic.script(Scripted(status=503), Scripted(status=503), Scripted(status=503))
    raw = await client.chat.completions.with_raw_response.create(model="chat", messages=HELLO, max_tokens=32)
    assert raw.parse().choices[0].message.content == DEFAULT_TEXT
    attempts = json.loads(raw.headers[ATTEMPTS_HEADER])
    assert [a["provider"] for a in attempts] == ["anthropic"] * 3 + ["openai"]
    assert attempts[-1]["status"] == "succeeded"


async def test_models_lists_the_aliases(client: openai.AsyncOpenAI) -> None:
    """GET /v1/models lists the configured aliases in OpenAI's list shape."""
    models = [m.id async for m in client.models.list()]
    assert models == ["chat", "fast"]


async def test_wrong_key_is_401(stack: Stack) -> None:
    """An unknown gateway key is an AuthenticationError, and no provider is called."""
    async with openai.AsyncOpenAI(base_url=f"{stack.url}/v1", api_key="nope", max_retries=0) as bad:
        with pytest.raises(openai.AuthenticationError) as caught:
            await bad.chat.completions.create(model="chat", messages=HELLO)
    assert caught.value.status_code == 401
    assert stack.provider_requests() == 0


async def test_unknown_model_is_404(client: openai.AsyncOpenAI) -> None:
    """A model that is not a configured alias is a NotFoundError naming it."""
    with pytest.raises(openai.NotFoundError, match="gpt-5-turbo"):
        await client.chat.completions.create(model="gpt-5-turbo", messages=HELLO)


async def test_malformed_request_is_400(client: openai.AsyncOpenAI, stack: Stack) -> None:
    """A request the OpenAI shape does not allow is a BadRequestError; no provider is called."""
    with pytest.raises(openai.BadRequestError):
        await client.chat.completions.create(model="chat", messages=cast("Any", [{"role": "wizard", "content": "x"}]))
    assert stack.provider_requests() == 0


async def test_provider_400_is_400_without_failover(client: openai.AsyncOpenAI, stack: Stack) -> None:
    """A provider's 400 is terminal: a BadRequestError, OpenAI never called, the attempt recorded."""
    stack.anthropic.script(Scripted(status=400))
    with pytest.raises(openai.BadRequestError) as caught:
        await client.chat.completions.create(model="chat", messages=HELLO)
    body = caught.value.response.json()
    assert [a["status"] for a in body["routeproof"]["attempts"]] == ["terminal_400"]
    assert not stack.openai.journal


async def test_all_failed_is_502_with_every_attempt(client: openai.AsyncOpenAI, stack: Stack) -> None:
    """Every provider failing is a 502 InternalServerError carrying all six attempt records."""
    stack.anthropic.set_default(Scripted(status=500))
    stack.openai.set_default(Scripted(status=500))
    with pytest.raises(openai.InternalServerError) as caught:
        await client.chat.completions.create(model="chat", messages=HELLO)
    assert caught.value.status_code == 502
    body = caught.value.response.json()
    assert body["error"]["code"] == "all_providers_failed"
    assert [a["provider"] for a in body["routeproof"]["attempts"]] == ["anthropic"] * 3 + ["openai"] * 3


async def test_upstream_auth_failure_is_502_not_401(client: openai.AsyncOpenAI, stack: Stack) -> None:
    """A provider rejecting the gateway's own key is a 502: the client is not told its key is wrong."""
    stack.anthropic.script(Scripted(status=401))
    with pytest.raises(openai.InternalServerError) as caught:
        await client.chat.completions.create(model="chat", messages=HELLO)
    assert caught.value.status_code == 502
    body = caught.value.response.json()
    assert body["error"]["type"] == "server_error"
    assert [a["status"] for a in body["routeproof"]["attempts"]] == ["terminal_auth"]


async def test_deadline_header_is_504(client: openai.AsyncOpenAI, stack: Stack) -> None:
    """A provider slower than the caller's deadline header gives a 504 with the deadline code."""
    stack.anthropic.script(Scripted(delay_before_headers_s=2.0))
    with pytest.raises(openai.APIStatusError) as caught:
        await client.chat.completions.create(
            model="chat",
            messages=HELLO,
            extra_headers={"x-routeproof-deadline-ms": "150"},
        )
    assert caught.value.status_code == 504
    assert caught.value.response.json()["error"]["code"] == "deadline_exceeded"


async def test_mid_stream_cut_raises_in_the_sdk(client: openai.AsyncOpenAI, stack: Stack) -> None:
    """A provider stream cut after its first token reaches the SDK as an APIError, not a silent end."""
    events = (
        {"data": {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [
            {"index": 0, "delta": {"role": "assistant", "content": "Hel"}, "finish_reason": None}]}},
    )  # fmt: skip
    stack.anthropic.set_default(Scripted(status=500))
    stack.openai.script(Scripted(stream_events=events))
    stream = await client.chat.completions.create(model="chat", messages=HELLO, stream=True)
    seen: list[str] = []

    async def consume() -> None:
        async for chunk in stream:
            seen.append(chunk.choices[0].delta.content or "" if chunk.choices else "")

    with pytest.raises(openai.APIError, match="stream interrupted"):
        await consume()
    assert "".join(seen) == "Hel"


async def test_top_p_and_tool_choice_reach_each_provider_in_its_wire_format(
    client: openai.AsyncOpenAI, stack: Stack
) -> None:
    """top_p and a named tool_choice from the OpenAI SDK reach Anthropic as Anthropic's fields and, after
    failover, OpenAI as OpenAI's; without tools a tool_choice is not sent."""
    await client.chat.completions.create(model="chat", messages=HELLO, max_tokens=32, tool_choice="none")
    plain = stack.anthropic.journal[-1].body_json
    assert isinstance(plain, dict)
    assert "tool_choice" not in plain
    assert "top_p" not in plain
    stack.anthropic.script(Scripted(status=503), Scripted(status=503), Scripted(status=503))
    await client.chat.completions.create(
        model="chat",
        messages=HELLO,
        max_tokens=32,
        tools=[TOOL],
        top_p=0.5,
        tool_choice={"type": "function", "function": {"name": "search"}},
    )
    first, last = stack.anthropic.journal[-1].body_json, stack.openai.journal[-1].body_json
    assert isinstance(first, dict)
    assert isinstance(last, dict)
    assert (first["top_p"], first["tool_choice"]) == (0.5, {"type": "tool", "name": "search"})
    assert (last["top_p"], last["tool_choice"]) == (0.5, {"type": "function", "function": {"name": "search"}})


async def test_an_sdk_that_gives_up_ends_the_gateways_call_and_its_provider_request(stack: Stack) -> None:
    """The SDK's own timeout (0.5 s) closes its connection while the provider has not answered: the
    gateway cancels the call at once (its server tells the app the connection is gone), so the call
    leaves the gateway well within a second and no failover request follows."""
    stack.anthropic.set_default(Scripted(delay_before_headers_s=10))
    async with openai.AsyncOpenAI(base_url=f"{stack.url}/v1", api_key=GATEWAY_KEY, max_retries=0, timeout=0.5) as c:
        with pytest.raises(openai.APITimeoutError):
            await c.chat.completions.create(model="chat", messages=HELLO, max_tokens=32)
    loop = asyncio.get_running_loop()
    gave_up_at = loop.time()
    async with asyncio.timeout(5):
        while stack.app.in_flight:  # noqa: ASYNC110 - a counter, polled until the call is gone
            await asyncio.sleep(0.005)
    assert loop.time() - gave_up_at < 1.0
    await asyncio.sleep(0.5)  # a failover to OpenAI would have started by now (fast backoff)
    assert (len(stack.anthropic.journal), len(stack.openai.journal)) == (1, 0)
