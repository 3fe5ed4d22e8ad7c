"""Streams that succeed, in all three wire shapes, against the real-socket mock servers."""

from __future__ import annotations

import json
import ssl

import pytest
from opentelemetry.sdk.trace import TracerProvider

from routeproof.core.types import BlockStop, FinishReason, MessageStop, TextDelta, ToolUseDelta, ToolUseStart, Usage
from routeproof.mock import DEFAULT_INPUT_TOKENS, DEFAULT_OUTPUT_TOKENS, DEFAULT_TEXT, DEFAULT_TOOL_INPUT, Shape
from routeproof.mock.script import Scripted

from .stream_cases import TOOL, bounded, mocked, text_of, tool_request

SHAPES = pytest.mark.parametrize("shape", list(Shape), ids=lambda s: s.value)
MOCK_USAGE = Usage(prompt_tokens=DEFAULT_INPUT_TOKENS, completion_tokens=DEFAULT_OUTPUT_TOKENS)


@SHAPES
@pytest.mark.asyncio
@bounded
async def test_default_text_stream(shape: Shape, tls_context: ssl.SSLContext) -> None:
    """The default stream is text deltas, one BlockStop, then exactly one MessageStop with the mock's usage."""
    async with mocked(shape, tls_context) as mock:
        events = await mock.collect()
    assert text_of(events) == DEFAULT_TEXT
    assert all(isinstance(e, TextDelta) for e in events[:-2])
    assert events[-2:] == [BlockStop(), MessageStop(stop_reason=FinishReason.STOP, usage=MOCK_USAGE)]


@SHAPES
@pytest.mark.asyncio
@bounded
async def test_default_tool_stream(shape: Shape, tls_context: ssl.SSLContext) -> None:
    """A tool call streams as ToolUseStart, ToolUseDelta pieces that join to the full JSON, BlockStop."""
    async with mocked(shape, tls_context) as mock:
        events = await mock.collect(tool_request())
    start, *deltas, block_stop, stop = events
    assert isinstance(start, ToolUseStart)
    assert start.name == TOOL
    assert len(deltas) > 1
    assert all(isinstance(d, ToolUseDelta) and d.id == start.id for d in deltas)
    joined = "".join(d.partial_json for d in deltas if isinstance(d, ToolUseDelta))
    assert json.loads(joined) == json.loads(DEFAULT_TOOL_INPUT)
    assert block_stop == BlockStop()
    assert stop == MessageStop(stop_reason=FinishReason.TOOL_CALLS, usage=MOCK_USAGE)


@SHAPES
@pytest.mark.asyncio
@bounded
async def test_stream_request_asks_for_a_stream(shape: Shape, tls_context: ssl.SSLContext) -> None:
    """The request is a stream request of its shape (OpenAI also asks for usage in the stream)."""
    async with mocked(shape, tls_context) as mock:
        await mock.collect()
        entry = mock.server.journal[-1]
    assert entry.stream
    assert entry.auth_present
    if shape is Shape.BEDROCK:
        assert entry.path.endswith("/converse-stream")
    else:
        assert isinstance(entry.body_json, dict)
        assert entry.body_json["stream"] is True
    if shape is Shape.OPENAI:
        assert isinstance(entry.body_json, dict)
        assert entry.body_json["stream_options"] == {"include_usage": True}


@SHAPES
@pytest.mark.asyncio
@bounded
async def test_traceparent_injected_on_stream(shape: Shape, tls_context: ssl.SSLContext) -> None:
    """The stream request carries the active span's trace context as a W3C traceparent."""
    tracer = TracerProvider().get_tracer("routeproof-tests")
    async with mocked(shape, tls_context) as mock:
        with tracer.start_as_current_span("attempt") as span:
            await mock.collect()
            context = span.get_span_context()
        entry = mock.server.journal[-1]
    assert entry.traceparent is not None
    version, trace_id, span_id, _ = entry.traceparent.split("-")
    assert (version, trace_id, span_id) == ("00", f"{context.trace_id:032x}", f"{context.span_id:016x}")


@pytest.mark.asyncio
@bounded
async def test_bedrock_stream_request_is_signed(tls_context: ssl.SSLContext) -> None:
    """A ConverseStream request carries a SigV4 Authorization, its date and the percent-encoded model id."""
    async with mocked(Shape.BEDROCK, tls_context) as mock:
        await mock.collect()
        entry = mock.server.journal[-1]
    assert entry.auth_present  # the mock checks the "AWS4-HMAC-SHA256 " scheme; the value is never journaled
    assert entry.header("x-amz-date") is not None
    assert entry.path == "/model/anthropic.claude-3-haiku-20240307-v1%3A0/converse-stream"
    assert entry.header("accept") == "application/vnd.amazon.eventstream"


@SHAPES
@pytest.mark.asyncio
@bounded
async def test_slow_drip_within_the_deadline(shape: Shape, tls_context: ssl.SSLContext) -> None:
    """Chunks 50 ms apart, each inside the idle limit, still make one complete stream."""
    async with mocked(shape, tls_context) as mock:
        mock.server.script(Scripted(delay_between_chunks_s=0.05))
        events = await mock.collect(timeout_s=3.0, idle_timeout_s=0.5)
    assert text_of(events) == DEFAULT_TEXT
    assert isinstance(events[-1], MessageStop)


@SHAPES
@pytest.mark.asyncio
@bounded
async def test_back_to_back_streams_on_one_client(shape: Shape, tls_context: ssl.SSLContext) -> None:
    """A finished stream leaves the pooled client usable: three streams in a row all complete."""
    async with mocked(shape, tls_context) as mock:
        for _ in range(3):
            assert isinstance((await mock.collect())[-1], MessageStop)
        assert len(mock.server.journal) == 3
