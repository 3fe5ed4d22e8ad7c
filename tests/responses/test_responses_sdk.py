"""The official ``openai`` SDK's Responses API against the gateway, with the mock providers behind it
(Anthropic first, OpenAI second): plain, streamed, a function tool loop, failover, stateful refusals."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import openai
import pytest
import pytest_asyncio
from openai.types.responses import FunctionToolParam, Response, ResponseInputParam
from pydantic import BaseModel

from routeproof.gateway import ATTEMPTS_HEADER
from routeproof.mock import DEFAULT_TEXT, DEFAULT_TOOL_INPUT, Scripted
from tests.gateway.conftest import GATEWAY_KEY, Stack

pytestmark = pytest.mark.asyncio
TOOL: FunctionToolParam = {"type": "function", "name": "search", "parameters": {"type": "object"}, "strict": None}
PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEAwS2OUAAAAABJRU5ErkJggg=="
FAIL_THRICE = (Scripted(status=503), Scripted(status=503), Scripted(status=503))


@pytest_asyncio.fixture
async def client(stack: Stack) -> AsyncIterator[openai.AsyncOpenAI]:
    """An OpenAI SDK client pointed at the gateway (no SDK retries: the gateway decides)."""
    async with openai.AsyncOpenAI(base_url=f"{stack.url}/v1", api_key=GATEWAY_KEY, max_retries=0, timeout=15) as c:
        yield c


def _last_body(server: Any) -> dict[str, Any]:
    body = server.journal[-1].body_json
    assert isinstance(body, dict)
    return body


async def test_plain_response_is_answered_by_the_primary(client: openai.AsyncOpenAI, stack: Stack) -> None:
    """A plain responses.create parses as the SDK's Response, with text, usage and attempt records,
    and instructions reach Anthropic as its system prompt."""
    raw = await client.responses.with_raw_response.create(
        model="chat", input="hi", instructions="be brief", max_output_tokens=32, temperature=0.5
    )
    response = raw.parse()
    assert isinstance(response, Response)
    assert response.status == "completed"
    assert response.output_text == DEFAULT_TEXT
    assert response.instructions == "be brief"
    assert response.temperature == 0.5
    assert response.usage is not None
    assert response.usage.total_tokens == response.usage.input_tokens + response.usage.output_tokens > 0
    attempts = json.loads(raw.headers[ATTEMPTS_HEADER])
    assert [(a["provider"], a["status"]) for a in attempts] == [("anthropic", "succeeded")]
    sent = _last_body(stack.anthropic)
    assert sent["system"] == "be brief"
    assert sent["max_tokens"] == 32
    assert sent["messages"] == [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]


async def test_streamed_response_events_parse_and_reassemble(client: openai.AsyncOpenAI) -> None:
    """responses.stream yields typed events in order with rising sequence numbers; the final response
    carries the text and usage."""
    async with client.responses.stream(model="chat", input="hi", max_output_tokens=32) as stream:
        events = [event async for event in stream]
        final = await stream.get_final_response()
    kinds = [e.type for e in events]
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds[-1] == "response.completed"
    assert "response.output_item.added" in kinds
    assert "response.content_part.added" in kinds
    assert "response.output_text.done" in kinds
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert "".join(e.delta for e in events if e.type == "response.output_text.delta") == DEFAULT_TEXT
    assert final.output_text == DEFAULT_TEXT
    assert final.usage is not None
    assert final.usage.output_tokens > 0


async def test_function_tool_loop_plain_and_streamed(client: openai.AsyncOpenAI, stack: Stack) -> None:
    """A function tool call comes back as a function_call item (plain and streamed), and its
    function_call_output goes back to Anthropic as a tool_result for that call."""
    response = await client.responses.create(model="chat", input="find it", tools=[TOOL], max_output_tokens=32)
    calls = [item for item in response.output if item.type == "function_call"]
    assert [c.name for c in calls] == ["search"]
    assert json.loads(calls[0].arguments) == json.loads(DEFAULT_TOOL_INPUT)
    async with client.responses.stream(model="chat", input="find it", tools=[TOOL], max_output_tokens=32) as stream:
        events = [event async for event in stream]
        final = await stream.get_final_response()
    deltas = "".join(e.delta for e in events if e.type == "response.function_call_arguments.delta")
    assert json.loads(deltas) == json.loads(DEFAULT_TOOL_INPUT)
    assert [i.type for i in final.output] == ["function_call"]
    call = calls[0]
    follow_up: ResponseInputParam = [
        {"role": "user", "content": "find it"},
        {"type": "function_call", "call_id": call.call_id, "name": call.name, "arguments": call.arguments},
        {"type": "function_call_output", "call_id": call.call_id, "output": "found"},
    ]
    answer = await client.responses.create(model="chat", input=follow_up, tools=[TOOL], max_output_tokens=32)
    assert answer.status == "completed"
    sent = _last_body(stack.anthropic)["messages"]
    assert sent[1]["content"][0]["type"] == "tool_use"
    assert sent[1]["content"][0]["id"] == call.call_id
    assert sent[2]["content"][0] == {"type": "tool_result", "tool_use_id": call.call_id, "content": "found"}


async def test_failover_to_openai_plain_and_before_the_first_event(client: openai.AsyncOpenAI, stack: Stack) -> None:
    """Anthropic failing three times fails over to OpenAI, plain and streamed (before any event)."""
    stack.anthropic.script(*FAIL_THRICE)
    raw = await client.responses.with_raw_response.create(model="chat", input="hi", max_output_tokens=32)
    assert raw.parse().output_text == DEFAULT_TEXT
    attempts = json.loads(raw.headers[ATTEMPTS_HEADER])
    assert [a["provider"] for a in attempts] == ["anthropic"] * 3 + ["openai"]
    assert _last_body(stack.openai)["max_completion_tokens"] == 32
    stack.anthropic.script(*FAIL_THRICE)
    async with client.responses.stream(model="chat", input="hi", max_output_tokens=32) as stream:
        final = await stream.get_final_response()
    assert final.output_text == DEFAULT_TEXT
    assert _last_body(stack.openai)["stream"] is True


async def test_mid_stream_cut_ends_in_one_response_failed(client: openai.AsyncOpenAI, stack: Stack) -> None:
    """A provider stream cut after its first token ends in one response.failed event, never a silent end."""
    events = (
        {"data": {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [
            {"index": 0, "delta": {"role": "assistant", "content": "Hel"}, "finish_reason": None}]}},
    )  # fmt: skip
    stack.anthropic.set_default(Scripted(status=500))
    stack.openai.script(Scripted(stream_events=events))
    stream = await client.responses.create(model="chat", input="hi", stream=True)
    kinds = [event.type async for event in stream]
    assert kinds[-1] == "response.failed"
    assert kinds.count("response.failed") == 1
    assert "response.completed" not in kinds
    assert "response.output_text.delta" in kinds


async def test_all_providers_failing_is_an_openai_shaped_error(client: openai.AsyncOpenAI, stack: Stack) -> None:
    """When every provider fails the SDK raises with the gateway's status and OpenAI's error shape."""
    stack.anthropic.set_default(Scripted(status=500))
    stack.openai.set_default(Scripted(status=500))
    with pytest.raises(openai.APIStatusError) as caught:
        await client.responses.create(model="chat", input="hi")
    assert caught.value.status_code == 502
    body = caught.value.response.json()
    assert body["error"]["code"] == "all_providers_failed"
    assert len(body["routeproof"]["attempts"]) == 6


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("previous_response_id", "resp_123"),
        ("store", True),
        ("background", True),
        ("conversation", "conv_1"),
        ("include", ["reasoning.encrypted_content"]),
        ("tools", [{"type": "web_search"}]),
    ],
)
async def test_stateful_fields_are_refused_naming_the_field(
    client: openai.AsyncOpenAI, stack: Stack, field: str, value: object
) -> None:
    """A field that needs OpenAI's stored state is a 400 naming it, and nothing is sent to a provider."""
    with pytest.raises(openai.BadRequestError) as caught:
        await client.responses.create(model="chat", input="hi", extra_body={field: value})
    message = caught.value.response.json()["error"]["message"]
    assert repr(field) in message or "tools[0].type" in message
    assert stack.provider_requests() == 0


async def test_idle_stateful_values_are_accepted(client: openai.AsyncOpenAI) -> None:
    """store: false and background: false ask for nothing a router cannot do, and are answered."""
    response = await client.responses.create(model="chat", input="hi", store=False, background=False)
    assert response.output_text == DEFAULT_TEXT


async def test_unauthenticated_and_unknown_model_are_openai_shaped(stack: Stack) -> None:
    """A bad gateway key is a 401 and an unknown alias a 404, both in OpenAI's error shape."""
    async with httpx.AsyncClient(base_url=stack.url, timeout=10) as http:
        bad = await http.post("/v1/responses", json={"model": "chat", "input": "hi"}, headers={"x-api-key": "nope"})
        unknown = await http.post(
            "/v1/responses", json={"model": "nope", "input": "hi"}, headers={"x-api-key": GATEWAY_KEY}
        )
    assert bad.status_code == 401
    assert bad.json()["error"]["code"] == "invalid_api_key"
    assert unknown.status_code == 404
    assert unknown.json()["error"]["code"] == "model_not_found"


class Weather(BaseModel):
    """The structured answer ``responses.parse`` asks for."""

    city: str
    celsius: int


async def test_parse_with_a_pydantic_model_reaches_openai_as_json_schema(
    client: openai.AsyncOpenAI, stack: Stack
) -> None:
    """responses.parse sends text.format json_schema; after failover OpenAI receives it as response_format
    and the SDK parses the JSON answer into the model."""
    stack.anthropic.script(*FAIL_THRICE)
    message = {"role": "assistant", "content": '{"city":"Oslo","celsius":3}'}
    answer = {
        "id": "c1", "object": "chat.completion", "created": 1, "model": "gpt-4o",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12},
    }  # fmt: skip
    stack.openai.script(Scripted(body=answer))
    parsed = await client.responses.parse(model="chat", input="weather in Oslo?", text_format=Weather)
    assert parsed.output_parsed == Weather(city="Oslo", celsius=3)
    fmt = _last_body(stack.openai)["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["name"] == "Weather"
    assert fmt["json_schema"]["strict"] is True
    assert fmt["json_schema"]["schema"]["required"] == ["city", "celsius"]


async def test_an_input_image_reaches_anthropic_as_an_image_block(client: openai.AsyncOpenAI, stack: Stack) -> None:
    """An input_image data URL reaches Anthropic as a base64 image block."""
    image: ResponseInputParam = [{"role": "user", "content": [
        {"type": "input_text", "text": "what is this?"},
        {"type": "input_image", "image_url": f"data:image/png;base64,{PIXEL}", "detail": "auto"},
    ]}]  # fmt: skip
    response = await client.responses.create(model="chat", input=image, max_output_tokens=32)
    assert response.output_text == DEFAULT_TEXT
    blocks = _last_body(stack.anthropic)["messages"][0]["content"]
    assert blocks[0] == {"type": "text", "text": "what is this?"}
    assert blocks[1]["type"] == "image"
    assert blocks[1]["source"] == {"type": "base64", "media_type": "image/png", "data": PIXEL}


async def test_deadline_header_is_a_504_in_openai_shape(client: openai.AsyncOpenAI, stack: Stack) -> None:
    """A provider slower than the caller's deadline header gives a 504 with the deadline code."""
    stack.anthropic.script(Scripted(delay_before_headers_s=2.0))
    with pytest.raises(openai.APIStatusError) as caught:
        await client.responses.create(model="chat", input="hi", extra_headers={"x-routeproof-deadline-ms": "150"})
    assert caught.value.status_code == 504
    assert caught.value.response.json()["error"]["code"] == "deadline_exceeded"


async def test_a_provider_400_is_a_400_and_not_failed_over(client: openai.AsyncOpenAI, stack: Stack) -> None:
    """A provider's 400 is terminal: answered 400 in OpenAI's shape, the next provider never asked."""
    stack.anthropic.script(Scripted(status=400))
    with pytest.raises(openai.BadRequestError) as caught:
        await client.responses.create(model="chat", input="hi")
    assert caught.value.response.json()["error"]["code"] == "invalid_request"
    assert not stack.openai.journal
