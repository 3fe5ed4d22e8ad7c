"""Failures before the first event: each raises ProviderCallFailed with the complete()-style kind."""

from __future__ import annotations

import asyncio
import re
import socket
import ssl

import httpx
import pytest

from routeproof.core.types import AttemptFailure, AttemptFailureKind
from routeproof.errors import ProviderCallFailed
from routeproof.mock import CutMode, Scripted, Shape
from routeproof.mock.eventstream import encode_event
from routeproof.mock.script import StreamItem

from .stream_cases import SECRETS, Mocked, bounded, make_provider, mocked, secrets_of, text_request

# the three wire families (Azure and Gemini stream OpenAI's chunks: their own rows are in test_stream_success)
SHAPES = pytest.mark.parametrize("shape", [Shape.ANTHROPIC, Shape.OPENAI, Shape.BEDROCK], ids=lambda s: s.value)
OVERLOADED = "Overloaded, try later"


def in_band_error(shape: Shape, message: str) -> StreamItem:
    """The shape's in-band error event carrying ``message``."""
    if shape is Shape.ANTHROPIC:
        return {"event": "error", "data": {"type": "error", "error": {"type": "overloaded_error", "message": message}}}
    if shape is Shape.OPENAI:
        return {"data": {"error": {"message": message, "type": "server_error"}}}
    return {"event": "throttlingException", "message_type": "exception", "data": {"message": message}}


def broken_first_event(shape: Shape) -> StreamItem:
    """Bytes the shape's decoder cannot read, as the very first event."""
    if shape is Shape.ANTHROPIC:
        return 'event: content_block_start\ndata: {"type": "content_block_start", "index": 0, "content\n\n'
    if shape is Shape.OPENAI:
        return 'data: {"choices": [{"index": 0, "delta": {"content": "tru\n\n'
    return encode_event("contentBlockDelta", {"delta": {"text": "x"}, "contentBlockIndex": 0}, corrupt_crc=True)


def overflow_body(shape: Shape) -> dict[str, object]:
    """The shape's 400 body for a prompt longer than the context window."""
    if shape is Shape.ANTHROPIC:
        return {"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long: 9 > 8"}}
    if shape is Shape.OPENAI:
        return {"error": {"message": "maximum context length is 8192 tokens", "code": "context_length_exceeded"}}
    return {"message": "Input is too long for requested model."}


async def fail(mock: Mocked, *, timeout_s: float = 2.0) -> AttemptFailure:
    """The failure one stream raises; nothing was yielded before it."""
    with pytest.raises(ProviderCallFailed) as info:
        await mock.collect(timeout_s=timeout_s)
    assert mock.seen == []
    failure = info.value.failure
    assert all(secret not in failure.message for secret in SECRETS), failure
    return failure


@SHAPES
@pytest.mark.parametrize("status", [429, 503])
@pytest.mark.asyncio
@bounded
async def test_retryable_status_with_retry_after(shape: Shape, status: int, tls_context: ssl.SSLContext) -> None:
    """429 / 503 before the body is HTTP_STATUS with that status and Retry-After in milliseconds."""
    async with mocked(shape, tls_context) as mock:
        mock.server.script(Scripted(status=status, headers=(("Retry-After", "2"),)))
        failure = await fail(mock)
    assert (failure.kind, failure.http_status, failure.retry_after_ms) == (AttemptFailureKind.HTTP_STATUS, status, 2000)


@SHAPES
@pytest.mark.parametrize("status", [401, 403, 500])
@pytest.mark.asyncio
@bounded
async def test_other_status_is_http_status(shape: Shape, status: int, tls_context: ssl.SSLContext) -> None:
    """Any other non-2xx before the body is HTTP_STATUS with that status and no Retry-After."""
    async with mocked(shape, tls_context) as mock:
        mock.server.script(Scripted(status=status))
        failure = await fail(mock)
    assert (failure.kind, failure.http_status, failure.retry_after_ms) == (AttemptFailureKind.HTTP_STATUS, status, None)
    assert f"scripted HTTP {status}" in failure.message


@SHAPES
@pytest.mark.asyncio
@bounded
async def test_context_overflow(shape: Shape, tls_context: ssl.SSLContext) -> None:
    """A 400 saying the context length was exceeded is CONTEXT_OVERFLOW, as for complete()."""
    async with mocked(shape, tls_context) as mock:
        mock.server.script(Scripted(status=400, body=overflow_body(shape)))
        failure = await fail(mock)
    assert (failure.kind, failure.http_status) == (AttemptFailureKind.CONTEXT_OVERFLOW, 400)


@SHAPES
@pytest.mark.asyncio
@bounded
async def test_connection_refused(shape: Shape, client: httpx.AsyncClient) -> None:
    """Nobody listening is CONN_REFUSED."""
    with socket.socket() as probe:  # a port that was free a moment ago and has no listener now
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    provider = make_provider(shape, client, f"http://127.0.0.1:{port}")
    stream = provider.stream(text_request(), "m", timeout_at=asyncio.get_running_loop().time() + 2)
    with pytest.raises(ProviderCallFailed) as info:
        await anext(stream)
    assert info.value.failure.kind is AttemptFailureKind.CONN_REFUSED


@SHAPES
@pytest.mark.parametrize(
    "step",
    [Scripted(hang_after_headers=True), Scripted(hang=True), Scripted(delay_before_headers_s=1.0)],
    ids=["headers-then-nothing", "no-headers", "slow-headers"],
)
@pytest.mark.asyncio
@bounded
async def test_no_first_event_by_timeout_at(shape: Shape, step: Scripted, tls_context: ssl.SSLContext) -> None:
    """No event by timeout_at (headers then nothing, no headers, slow headers) is ATTEMPT_TIMEOUT at timeout_at."""
    async with mocked(shape, tls_context) as mock:
        mock.server.script(step)
        loop = asyncio.get_running_loop()
        started = loop.time()
        failure = await fail(mock, timeout_s=0.2)
        elapsed_s = loop.time() - started
    assert failure.kind is AttemptFailureKind.ATTEMPT_TIMEOUT
    assert re.fullmatch(r"no first event within 0\.\d{3}s", failure.message), failure.message  # the time it had
    assert 0.2 <= elapsed_s < 0.6


@SHAPES
@pytest.mark.asyncio
@bounded
async def test_in_band_error_first_is_stream_error(shape: Shape, tls_context: ssl.SSLContext) -> None:
    """An in-band error as the very first event is a STREAM_ERROR failure carrying the provider's message."""
    async with mocked(shape, tls_context) as mock:
        mock.server.script(Scripted(stream_events=(in_band_error(shape, OVERLOADED),)))
        failure = await fail(mock)
    assert (failure.kind, failure.http_status) == (AttemptFailureKind.STREAM_ERROR, 200)
    assert OVERLOADED in failure.message


@SHAPES
@pytest.mark.asyncio
@bounded
async def test_in_band_error_message_is_redacted(shape: Shape, tls_context: ssl.SSLContext) -> None:
    """A provider error that echoes a credential never carries it into the failure."""
    async with mocked(shape, tls_context) as mock:
        echoed = f"bad credentials: {' '.join(secrets_of(shape))}"
        mock.server.script(Scripted(stream_events=(in_band_error(shape, echoed),)))
        failure = await fail(mock)  # fail() asserts no secret is in the message
    assert "[REDACTED]" in failure.message


@SHAPES
@pytest.mark.asyncio
@bounded
async def test_malformed_first_event_is_stream_error(shape: Shape, tls_context: ssl.SSLContext) -> None:
    """Data the decoder cannot read, before any event, is a STREAM_ERROR failure."""
    async with mocked(shape, tls_context) as mock:
        mock.server.script(Scripted(stream_events=(broken_first_event(shape),)))
        failure = await fail(mock)
    assert failure.kind is AttemptFailureKind.STREAM_ERROR
    assert "malformed" in failure.message


@pytest.mark.asyncio
@bounded
async def test_anthropic_malformed_mock_stream_is_stream_error(tls_context: ssl.SSLContext) -> None:
    """The mock's malformed Anthropic stream breaks before the first text: a STREAM_ERROR failure."""
    async with mocked(Shape.ANTHROPIC, tls_context) as mock:
        mock.server.script(Scripted(malformed_body=True))
        failure = await fail(mock)
    assert failure.kind is AttemptFailureKind.STREAM_ERROR


@SHAPES
@pytest.mark.asyncio
@bounded
async def test_empty_body_is_stream_error(shape: Shape, tls_context: ssl.SSLContext) -> None:
    """A 200 whose body ends before any event is a STREAM_ERROR failure, never an empty success."""
    async with mocked(shape, tls_context) as mock:
        mock.server.script(Scripted(stream_events=()))
        failure = await fail(mock)
    assert failure.kind is AttemptFailureKind.STREAM_ERROR


@SHAPES
@pytest.mark.parametrize("cut_mode", [CutMode.RESET, CutMode.CLOSE], ids=lambda m: m.value)
@pytest.mark.parametrize("cut_after_bytes", [0, 12, 90])
@pytest.mark.asyncio
@bounded
async def test_cut_before_first_event_is_conn_reset(
    shape: Shape, cut_mode: CutMode, cut_after_bytes: int, tls_context: ssl.SSLContext
) -> None:
    """A connection cut in the head or before the first event's bytes is CONN_RESET."""
    async with mocked(shape, tls_context) as mock:
        mock.server.script(Scripted(cut_after_bytes=cut_after_bytes, cut_mode=cut_mode))
        failure = await fail(mock)
    assert failure.kind is AttemptFailureKind.CONN_RESET
