"""The official ``anthropic`` SDK against the gateway, with the mock providers behind it."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import anthropic
import pytest
import pytest_asyncio
from anthropic.types import MessageParam, ToolParam

from routeproof.gateway import ATTEMPTS_HEADER
from routeproof.mock import DEFAULT_TEXT, DEFAULT_TOOL_INPUT, Scripted
from tests.gateway.conftest import GATEWAY_KEY, Stack

pytestmark = pytest.mark.asyncio
HELLO: list[MessageParam] = [{"role": "user", "content": "hi"}]
TOOL: ToolParam = {"name": "search", "input_schema": {"type": "object"}}


@pytest_asyncio.fixture
async def client(stack: Stack) -> AsyncIterator[anthropic.AsyncAnthropic]:
    """An Anthropic SDK client pointed at the gateway (no SDK retries: the gateway decides)."""
    async with anthropic.AsyncAnthropic(base_url=stack.url, api_key=GATEWAY_KEY, max_retries=0, timeout=15) as c:
        yield c


async def test_plain_message(client: anthropic.AsyncAnthropic) -> None:
    """A plain message parses in the SDK with text, stop reason, usage and the attempts header."""
    raw = await client.messages.with_raw_response.create(model="chat", max_tokens=32, messages=HELLO)
    msg = await raw.parse()
    assert msg.content[0].type == "text"
    assert msg.content[0].text == DEFAULT_TEXT
    assert msg.stop_reason == "end_turn"
    assert msg.usage.output_tokens > 0
    assert json.loads(raw.headers[ATTEMPTS_HEADER])[0]["status"] == "succeeded"


async def test_streamed_message_accumulates(client: anthropic.AsyncAnthropic) -> None:
    """A streamed message is valid Messages SSE: the SDK's accumulated message has the text and usage."""
    async with client.messages.stream(model="chat", max_tokens=32, messages=HELLO) as stream:
        text = "".join([t async for t in stream.text_stream])
        final = await stream.get_final_message()
    assert text == DEFAULT_TEXT
    assert final.stop_reason == "end_turn"
    assert final.usage.input_tokens > 0
    assert final.usage.output_tokens > 0


async def test_tool_use_plain_and_streamed(client: anthropic.AsyncAnthropic) -> None:
    """A tool_use block comes back with its input object, plain and streamed."""
    msg = await client.messages.create(model="chat", max_tokens=32, messages=HELLO, tools=[TOOL])
    block = next(b for b in msg.content if b.type == "tool_use")
    assert block.name == "search"
    assert block.input == json.loads(DEFAULT_TOOL_INPUT)
    assert msg.stop_reason == "tool_use"
    async with client.messages.stream(model="chat", max_tokens=32, messages=HELLO, tools=[TOOL]) as stream:
        final = await stream.get_final_message()
    streamed = next(b for b in final.content if b.type == "tool_use")
    assert streamed.name == "search"
    assert streamed.input == json.loads(DEFAULT_TOOL_INPUT)


async def test_streamed_failover_before_the_first_token(client: anthropic.AsyncAnthropic, stack: Stack) -> None:
    """Anthropic failing three times before any token: the stream comes from OpenAI, translated."""
    stack.anthropic.script(Scripted(status=529), Scripted(status=529), Scripted(status=529))
    async with client.messages.stream(model="chat", max_tokens=32, messages=HELLO) as stream:
        final = await stream.get_final_message()
    assert final.content[0].type == "text"
    assert final.content[0].text == DEFAULT_TEXT
    assert len(stack.openai.journal) == 1


async def test_models_in_anthropic_shape(client: anthropic.AsyncAnthropic) -> None:
    """GET /v1/models with anthropic-version answers Anthropic's list shape."""
    page = await client.models.list()
    assert [m.id for m in page.data] == ["chat", "fast"]


@pytest.mark.parametrize(
    ("script", "error", "status"),
    [
        (Scripted(status=400), anthropic.BadRequestError, 400),
        (Scripted(status=404), anthropic.NotFoundError, 404),
        (Scripted(status=403), anthropic.InternalServerError, 502),
        (Scripted(delay_before_headers_s=2.0), anthropic.APIStatusError, 504),
    ],
)
async def test_error_classes(
    client: anthropic.AsyncAnthropic, stack: Stack, script: Scripted, error: type[Exception], status: int
) -> None:
    """Provider 400/404 -> 400/404, provider auth -> 502 (not 401), deadline -> 504, in Anthropic's shape."""
    stack.anthropic.script(script)
    with pytest.raises(anthropic.APIStatusError) as caught:
        await client.messages.create(
            model="chat",
            max_tokens=32,
            messages=HELLO,
            extra_headers={"x-routeproof-deadline-ms": "300"},
        )
    assert isinstance(caught.value, error)
    assert caught.value.status_code == status
    body = caught.value.response.json()
    assert body["type"] == "error"
    assert body["error"]["message"]
    assert body["routeproof"]["attempts"][0]["provider"] == "anthropic"


async def test_wrong_key_and_unknown_model(stack: Stack, client: anthropic.AsyncAnthropic) -> None:
    """A wrong x-api-key is 401 authentication_error; an unknown model is 404 not_found_error."""
    async with anthropic.AsyncAnthropic(base_url=stack.url, api_key="wrong", max_retries=0) as bad:
        with pytest.raises(anthropic.AuthenticationError):
            await bad.messages.create(model="chat", max_tokens=8, messages=HELLO)
    with pytest.raises(anthropic.NotFoundError) as caught:
        await client.messages.create(model="claude-9", max_tokens=8, messages=HELLO)
    assert caught.value.response.json()["error"]["type"] == "not_found_error"
    assert stack.provider_requests() == 0


async def test_all_failed_is_502(client: anthropic.AsyncAnthropic, stack: Stack) -> None:
    """Every provider failing is 502 api_error with every attempt in the routeproof field."""
    stack.anthropic.set_default(Scripted(status=500))
    stack.openai.set_default(Scripted(status=503))
    with pytest.raises(anthropic.InternalServerError) as caught:
        await client.messages.create(model="chat", max_tokens=8, messages=HELLO)
    body = caught.value.response.json()
    assert caught.value.status_code == 502
    assert body["error"]["type"] == "api_error"
    assert len(body["routeproof"]["attempts"]) == 6


async def test_top_p_and_tool_choice_reach_the_provider(client: anthropic.AsyncAnthropic, stack: Stack) -> None:
    """top_p and tool_choice "any" from the Anthropic SDK reach the provider as sent (this SDK version
    has no top_p argument, so it goes in extra_body, as the SDK documents for fields it lacks)."""
    await client.messages.create(
        model="chat",
        max_tokens=32,
        messages=HELLO,
        tools=[TOOL],
        tool_choice={"type": "any"},
        extra_body={"top_p": 0.25},
    )
    body = stack.anthropic.journal[-1].body_json
    assert isinstance(body, dict)
    assert (body["top_p"], body["tool_choice"]) == (0.25, {"type": "any"})
