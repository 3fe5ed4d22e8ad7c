"""The ``openai`` SDK's own types as oracle for every Responses body and SSE event the gateway emits,
read as raw bytes (no SDK helper in between), plain and streamed, text and tool calls, and cut."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from openai.types.responses import Response, ResponseStreamEvent
from pydantic import TypeAdapter

from routeproof.mock import Scripted
from tests.gateway.conftest import GATEWAY_KEY, Stack

pytestmark = pytest.mark.asyncio
EVENTS: TypeAdapter[ResponseStreamEvent] = TypeAdapter(ResponseStreamEvent)
TOOL = {"type": "function", "name": "search", "parameters": {"type": "object"}}
HEADERS = {"authorization": f"Bearer {GATEWAY_KEY}"}


def _sse(text: str) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for block in text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.split("\n"))
        out.append((lines["event"], json.loads(lines["data"])))
    return out


async def _post(stack: Stack, body: dict[str, Any]) -> httpx.Response:
    async with httpx.AsyncClient(base_url=stack.url, timeout=10) as http:
        return await http.post("/v1/responses", json=body, headers=HEADERS)


def _check_stream(text: str) -> list[str]:
    """Every event validates as the SDK's union member its ``event:`` line names; returns the types."""
    kinds: list[str] = []
    for number, (kind, data) in enumerate(_sse(text)):
        event = EVENTS.validate_python(data)
        assert event.type == kind == data["type"]
        assert event.sequence_number == number
        if kind in ("response.created", "response.completed", "response.failed", "response.incomplete"):
            Response.model_validate(data["response"])
        kinds.append(kind)
    return kinds


@pytest.mark.parametrize("tools", [[], [TOOL]], ids=["text", "tool"])
async def test_plain_bodies_validate_as_the_sdk_response(stack: Stack, tools: list[dict[str, Any]]) -> None:
    """A plain answer (text or a function call) validates as ``openai.types.responses.Response``."""
    raw = await _post(stack, {"model": "chat", "input": "hi", "tools": tools, "metadata": {"k": "v"}})
    assert raw.status_code == 200, raw.text
    response = Response.model_validate(raw.json())
    assert response.object == "response"
    assert response.metadata == {"k": "v"}
    assert response.output[0].type == ("function_call" if tools else "message")


@pytest.mark.parametrize("tools", [[], [TOOL]], ids=["text", "tool"])
@pytest.mark.parametrize("provider", ["anthropic", "openai"])
async def test_stream_events_validate_as_the_sdk_union(
    stack: Stack, tools: list[dict[str, Any]], provider: str
) -> None:
    """Every streamed event, from either provider, is a member of ``ResponseStreamEvent`` and in order."""
    if provider == "openai":
        stack.anthropic.set_default(Scripted(status=500))
    raw = await _post(stack, {"model": "chat", "input": "hi", "tools": tools, "stream": True})
    assert raw.headers["content-type"].startswith("text/event-stream")
    kinds = _check_stream(raw.text)
    item = "response.function_call_arguments.done" if tools else "response.output_text.done"
    assert kinds[:3] == ["response.created", "response.in_progress", "response.output_item.added"]
    assert item in kinds
    assert kinds[-2:] == ["response.output_item.done", "response.completed"]


async def test_a_cut_stream_ends_in_a_valid_response_failed(stack: Stack) -> None:
    """A stream cut after its first token ends in one valid ``response.failed`` with an error."""
    events = (
        {"data": {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [
            {"index": 0, "delta": {"role": "assistant", "content": "Hel"}, "finish_reason": None}]}},
    )  # fmt: skip
    stack.anthropic.set_default(Scripted(status=500))
    stack.openai.script(Scripted(stream_events=events))
    raw = await _post(stack, {"model": "chat", "input": "hi", "stream": True})
    kinds = _check_stream(raw.text)
    assert kinds[-1] == "response.failed"
    failed = _sse(raw.text)[-1][1]["response"]
    assert failed["status"] == "failed"
    assert "stream interrupted" in failed["error"]["message"]


async def test_an_output_cap_hit_is_incomplete(stack: Stack) -> None:
    """An answer cut by the output cap is ``status: incomplete`` with reason max_output_tokens."""
    body = {"id": "msg_1", "type": "message", "role": "assistant", "model": "m", "stop_reason": "max_tokens",
            "content": [{"type": "text", "text": "Hel"}], "usage": {"input_tokens": 3, "output_tokens": 1}}  # fmt: skip
    stack.anthropic.script(Scripted(body=body))
    raw = await _post(stack, {"model": "chat", "input": "hi", "max_output_tokens": 1})
    response = Response.model_validate(raw.json())
    assert response.status == "incomplete"
    assert response.incomplete_details is not None
    assert response.incomplete_details.reason == "max_output_tokens"
