"""Default answers in each provider's documented wire shape, streamed and not, and the auth gate."""

from __future__ import annotations

import json

import httpx
import pytest
from botocore.eventstream import ChecksumMismatch, EventStreamBuffer  # type: ignore[import-untyped]  # botocore has no hints

from routeproof.mock import (
    DEFAULT_INPUT_TOKENS,
    DEFAULT_OUTPUT_TOKENS,
    DEFAULT_TEXT,
    MockProviderServer,
    Scripted,
    Shape,
)
from tests.mock.helpers import PATHS, STREAM_PATHS, TIMEOUT_S, auth_headers, parse_sse, request_body, sse_json


async def post(srv: MockProviderServer, path: str, body: dict[str, object], **headers: str) -> httpx.Response:
    """POST ``body`` to ``srv`` with the shape's credentials."""
    async with httpx.AsyncClient(base_url=srv.base_url, timeout=TIMEOUT_S) as client:
        return await client.post(path, json=body, headers={**auth_headers(srv.shape), **headers})


@pytest.mark.asyncio
async def test_anthropic_default_answer_is_a_message_with_usage() -> None:
    """A plain Anthropic request gets a Messages-API message with text content and usage."""
    async with MockProviderServer(Shape.ANTHROPIC) as srv:
        resp = await post(srv, "/v1/messages", request_body(Shape.ANTHROPIC))
    data = resp.json()
    assert resp.status_code == 200
    assert data["type"] == "message"
    assert data["content"] == [{"type": "text", "text": DEFAULT_TEXT}]
    assert data["stop_reason"] == "end_turn"
    assert data["usage"] == {"input_tokens": DEFAULT_INPUT_TOKENS, "output_tokens": DEFAULT_OUTPUT_TOKENS}


@pytest.mark.asyncio
@pytest.mark.parametrize("path", ["/v1/chat/completions", "/chat/completions"])
async def test_openai_default_answer_is_a_chat_completion(path: str) -> None:
    """OpenAI-compatible requests on either path get a chat.completion with usage."""
    async with MockProviderServer(Shape.OPENAI) as srv:
        resp = await post(srv, path, request_body(Shape.OPENAI))
    data = resp.json()
    assert data["object"] == "chat.completion"
    assert data["choices"][0]["message"]["content"] == DEFAULT_TEXT
    assert data["choices"][0]["finish_reason"] == "stop"
    assert data["usage"]["total_tokens"] == DEFAULT_INPUT_TOKENS + DEFAULT_OUTPUT_TOKENS


@pytest.mark.asyncio
async def test_bedrock_converse_default_answer() -> None:
    """Bedrock Converse answers output.message, stopReason and usage; the model comes from the path."""
    async with MockProviderServer(Shape.BEDROCK) as srv:
        resp = await post(srv, "/model/anthropic.claude-3-haiku%3A1/converse", request_body(Shape.BEDROCK))
        entry = srv.journal[0]
    data = resp.json()
    assert data["output"]["message"]["content"] == [{"text": DEFAULT_TEXT}]
    assert data["stopReason"] == "end_turn"
    assert data["usage"]["outputTokens"] == DEFAULT_OUTPUT_TOKENS
    assert entry.model == "anthropic.claude-3-haiku:1"


@pytest.mark.asyncio
@pytest.mark.parametrize("shape", list(Shape))
async def test_tools_in_the_request_make_the_default_a_tool_call(shape: Shape) -> None:
    """When the request declares tools, the default answer calls the first one."""
    async with MockProviderServer(shape) as srv:
        data = (await post(srv, PATHS[shape], request_body(shape, tool="lookup"))).json()
    if shape is Shape.ANTHROPIC:
        assert data["content"][0]["name"] == "lookup"
        assert data["stop_reason"] == "tool_use"
    elif shape in (Shape.OPENAI, Shape.AZURE, Shape.GEMINI):
        assert data["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "lookup"
        assert data["choices"][0]["finish_reason"] == "tool_calls"
    else:
        assert data["output"]["message"]["content"][0]["toolUse"]["name"] == "lookup"


@pytest.mark.asyncio
async def test_anthropic_stream_follows_the_documented_event_sequence() -> None:
    """A streamed Anthropic answer is SSE: message_start ... message_delta(usage), message_stop."""
    async with MockProviderServer(Shape.ANTHROPIC) as srv:
        resp = await post(srv, "/v1/messages", request_body(Shape.ANTHROPIC, stream=True))
    assert resp.headers["content-type"].startswith("text/event-stream")
    events = parse_sse(resp.text)
    names = [n for n, _ in events]
    assert names[0] == "message_start"
    assert names[-3:] == ["content_block_stop", "message_delta", "message_stop"]
    assert all(json.loads(d)["type"] == n for n, d in events)
    text = "".join(e["delta"]["text"] for e in sse_json(resp.text) if e["type"] == "content_block_delta")  # type: ignore[index]
    assert text == DEFAULT_TEXT
    delta = json.loads(events[-2][1])
    assert delta["delta"]["stop_reason"] == "end_turn"
    assert delta["usage"]["output_tokens"] == DEFAULT_OUTPUT_TOKENS


@pytest.mark.asyncio
async def test_anthropic_stream_with_tools_sends_input_json_deltas() -> None:
    """Streamed tool use arrives as input_json_delta pieces that join into valid JSON."""
    async with MockProviderServer(Shape.ANTHROPIC) as srv:
        resp = await post(srv, "/v1/messages", request_body(Shape.ANTHROPIC, stream=True, tool="lookup"))
    deltas = [e["delta"] for e in sse_json(resp.text) if e["type"] == "content_block_delta"]
    assert all(d["type"] == "input_json_delta" for d in deltas)  # type: ignore[index]
    assert json.loads("".join(d["partial_json"] for d in deltas)) == {"query": "routeproof mock"}  # type: ignore[index]


@pytest.mark.asyncio
@pytest.mark.parametrize("include_usage", [True, False])
async def test_openai_stream_ends_with_done_and_usage_chunk_when_asked(include_usage: bool) -> None:
    """OpenAI streams data chunks, a usage chunk only with include_usage, then data: [DONE]."""
    body = request_body(Shape.OPENAI, stream=True)
    if include_usage:
        body["stream_options"] = {"include_usage": True}
    async with MockProviderServer(Shape.OPENAI) as srv:
        resp = await post(srv, "/v1/chat/completions", body)
    events = parse_sse(resp.text)
    assert events[-1] == (None, "[DONE]")
    chunks = sse_json(resp.text)
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    usage_chunks = [c for c in chunks if c.get("usage")]
    assert len(usage_chunks) == (1 if include_usage else 0)
    if include_usage:
        assert usage_chunks[0]["choices"] == []
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])  # type: ignore[index]
    assert text == DEFAULT_TEXT


@pytest.mark.asyncio
async def test_bedrock_converse_stream_decodes_with_botocore() -> None:
    """converse-stream answers AWS event-stream frames that botocore's decoder accepts (CRCs valid)."""
    async with MockProviderServer(Shape.BEDROCK) as srv:
        resp = await post(srv, STREAM_PATHS[Shape.BEDROCK], request_body(Shape.BEDROCK))
    assert resp.headers["content-type"] == "application/vnd.amazon.eventstream"
    buffer = EventStreamBuffer()
    buffer.add_data(resp.content)
    messages = list(buffer)
    types = [m.headers[":event-type"] for m in messages]
    assert types[0] == "messageStart"
    assert types[-2:] == ["messageStop", "metadata"]
    deltas = [
        json.loads(m.payload)["delta"]["text"] for m in messages if m.headers[":event-type"] == "contentBlockDelta"
    ]
    assert "".join(deltas) == DEFAULT_TEXT
    assert json.loads(messages[-1].payload)["usage"]["totalTokens"] == DEFAULT_INPUT_TOKENS + DEFAULT_OUTPUT_TOKENS


@pytest.mark.asyncio
@pytest.mark.parametrize("shape", list(Shape))
async def test_missing_credentials_are_rejected_in_the_shape_error_format(shape: Shape) -> None:
    """Without the shape's auth header the mock answers 401 (403 for Bedrock) and keeps the script queue."""
    async with MockProviderServer(shape) as srv, httpx.AsyncClient(base_url=srv.base_url, timeout=TIMEOUT_S) as client:
        srv.script(Scripted(status=500))
        resp = await client.post(PATHS[shape], json=request_body(shape))
        assert srv.journal[0].auth_present is False
        assert srv.pending == 1
    assert resp.status_code == (403 if shape is Shape.BEDROCK else 401)
    if shape is Shape.ANTHROPIC:
        assert resp.json()["error"]["type"] == "authentication_error"
    elif shape in (Shape.OPENAI, Shape.AZURE):
        assert "error" in resp.json()
    elif shape is Shape.GEMINI:
        assert resp.json()[0]["error"]["status"] == "UNAUTHENTICATED"
    else:
        assert resp.headers["x-amzn-errortype"].startswith("AccessDeniedException")
        assert "message" in resp.json()


@pytest.mark.asyncio
async def test_anthropic_without_version_header_is_a_400() -> None:
    """An Anthropic request with a key but no anthropic-version header is rejected with 400."""
    async with MockProviderServer(Shape.ANTHROPIC) as srv, httpx.AsyncClient(base_url=srv.base_url) as client:
        resp = await client.post("/v1/messages", json={}, headers={"x-api-key": "k"}, timeout=TIMEOUT_S)
    assert resp.status_code == 400
    assert resp.json()["error"]["type"] == "invalid_request_error"


@pytest.mark.asyncio
async def test_require_auth_false_accepts_anonymous_requests() -> None:
    """require_auth=False serves requests that carry no credentials."""
    async with MockProviderServer(Shape.OPENAI, require_auth=False) as srv, httpx.AsyncClient() as client:
        resp = await client.post(f"{srv.base_url}/v1/chat/completions", json={}, timeout=TIMEOUT_S)
    assert resp.status_code == 200


@pytest.mark.asyncio
async def test_unknown_path_is_404_and_wrong_method_is_405() -> None:
    """Paths outside the shape get 404; a GET on the provider route gets 405."""
    async with MockProviderServer(Shape.OPENAI) as srv, httpx.AsyncClient(base_url=srv.base_url) as client:
        missing = await client.post("/v1/messages", json={}, headers=auth_headers(Shape.OPENAI), timeout=TIMEOUT_S)
        wrong = await client.get("/v1/chat/completions", headers=auth_headers(Shape.OPENAI), timeout=TIMEOUT_S)
    assert (missing.status_code, wrong.status_code) == (404, 405)


@pytest.mark.asyncio
async def test_bedrock_stream_can_carry_an_in_band_exception() -> None:
    """A scripted Bedrock stream item with message_type=exception is an event-stream exception frame."""
    items = (
        {"event": "messageStart", "data": {"role": "assistant"}},
        {"event": "throttlingException", "message_type": "exception", "data": {"message": "slow down"}},
    )
    async with MockProviderServer(Shape.BEDROCK) as srv:
        srv.script(Scripted(stream_events=items))
        resp = await post(srv, STREAM_PATHS[Shape.BEDROCK], request_body(Shape.BEDROCK))
    buffer = EventStreamBuffer()
    buffer.add_data(resp.content)
    start, error = list(buffer)
    assert start.headers[":event-type"] == "messageStart"
    assert error.headers[":message-type"] == "exception"
    assert error.headers[":exception-type"] == "throttlingException"
    assert json.loads(error.payload) == {"message": "slow down"}


@pytest.mark.asyncio
async def test_bedrock_malformed_stream_fails_botocore_checksum() -> None:
    """malformed_body on converse-stream sends a frame whose CRC botocore rejects."""
    async with MockProviderServer(Shape.BEDROCK) as srv:
        srv.script(Scripted(malformed_body=True))
        resp = await post(srv, STREAM_PATHS[Shape.BEDROCK], request_body(Shape.BEDROCK))
    buffer = EventStreamBuffer()
    buffer.add_data(resp.content)
    with pytest.raises(ChecksumMismatch):
        list(buffer)
