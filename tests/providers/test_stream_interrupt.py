"""After the first event: drops, malformed data, in-band errors, idle gaps and cancellation.

The stream is committed once an event was yielded: whatever goes wrong then ends it with exactly one
``StreamError("stream interrupted: ...")``, nothing is raised, and the response is always closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl

import httpx
import pytest

from routeproof.core.types import MessageStop, StreamError, StreamEvent, TextDelta
from routeproof.errors import ProviderCallFailed
from routeproof.mock import DEFAULT_TEXT, CutMode, Scripted, Shape
from routeproof.mock import shapes as mock_shapes
from routeproof.mock.script import StreamItem

from .stream_cases import (
    MODEL,
    TOOL,
    Mocked,
    RawServer,
    bounded,
    check_well_formed,
    chunked,
    make_provider,
    mocked,
    text_of,
    text_request,
    tool_request,
)
from .test_stream_failures import broken_first_event, in_band_error

# the three wire families (Azure and Gemini stream OpenAI's chunks: their own rows are in test_stream_success)
SHAPES = pytest.mark.parametrize("shape", [Shape.ANTHROPIC, Shape.OPENAI, Shape.BEDROCK], ids=lambda s: s.value)
ITEMS_TO_FIRST_TEXT = {Shape.ANTHROPIC: 4, Shape.OPENAI: 2, Shape.BEDROCK: 2}
"""How many default stream items it takes until the first text delta (message_start, ping, ...)."""
CUT_SWEEP_END = 10_000  # a safety bound: the sweep stops at the first complete stream (about 1.5 kB)
CUT_SWEEP_STEP = 31  # a prime step, so the cuts land at varied places within events and chunk framing


def default_items(shape: Shape, *, tool: bool = False) -> tuple[StreamItem, ...]:
    """The mock's default stream items for a stream request of ``shape``."""
    view = mock_shapes.RequestView(
        model=MODEL, stream=True, tool_name=TOOL if tool else None, include_usage=shape is Shape.OPENAI
    )
    return mock_shapes.default_stream(shape, view)


def first_text_bytes(shape: Shape) -> bytes:
    """The encoded items up to and including the first text delta, as one chunk."""
    items = default_items(shape)[: ITEMS_TO_FIRST_TEXT[shape]]
    return b"".join(mock_shapes.encode_stream_item(shape, item) for item in items)


async def full_events(mock: Mocked, *, tool: bool) -> list[StreamEvent]:
    """The events of the uncut default stream."""
    return await mock.collect(tool_request() if tool else text_request())


@SHAPES
@pytest.mark.asyncio
@bounded
async def test_in_band_error_after_first_text(shape: Shape, tls_context: ssl.SSLContext) -> None:
    """An in-band error after the first text ends the stream with one StreamError carrying its message."""
    items = (*default_items(shape)[: ITEMS_TO_FIRST_TEXT[shape]], in_band_error(shape, "Overloaded"))
    async with mocked(shape, tls_context) as mock:
        mock.server.script(Scripted(stream_events=items))
        events = await mock.collect()
    check_well_formed(events)
    assert events[:-1] == [TextDelta(text="Hello")]
    assert isinstance(events[-1], StreamError)
    assert "Overloaded" in events[-1].message


@SHAPES
@pytest.mark.asyncio
@bounded
async def test_malformed_after_first_text(shape: Shape, tls_context: ssl.SSLContext) -> None:
    """Undecodable data after the first text ends the stream with one 'stream interrupted' StreamError."""
    items = (*default_items(shape)[: ITEMS_TO_FIRST_TEXT[shape]], broken_first_event(shape), *default_items(shape))
    async with mocked(shape, tls_context) as mock:
        mock.server.script(Scripted(stream_events=items))
        events = await mock.collect()
    check_well_formed(events)
    assert events[:-1] == [TextDelta(text="Hello")]
    assert isinstance(events[-1], StreamError)
    assert "malformed" in events[-1].message


@pytest.mark.parametrize("shape", [Shape.OPENAI, Shape.BEDROCK], ids=lambda s: s.value)
@pytest.mark.asyncio
@bounded
async def test_mock_malformed_stream_after_first_text(shape: Shape, tls_context: ssl.SSLContext) -> None:
    """The mock's malformed stream (first text, then a broken event) ends in one StreamError."""
    async with mocked(shape, tls_context) as mock:
        mock.server.script(Scripted(malformed_body=True))
        events = await mock.collect()
    check_well_formed(events)
    assert isinstance(events[-1], StreamError)
    assert events[0] == TextDelta(text="Hello")


@SHAPES
@pytest.mark.parametrize("tool", [False, True], ids=["text", "tool"])
@pytest.mark.asyncio
@bounded
async def test_clean_close_without_terminator(shape: Shape, tool: bool, tls_context: ssl.SSLContext) -> None:
    """A body that ends cleanly without the protocol's terminator ends in a StreamError, never a MessageStop."""
    items = default_items(shape, tool=tool)[:-1]  # drop message_stop / [DONE] / metadata
    async with mocked(shape, tls_context) as mock:
        mock.server.script(Scripted(stream_events=items))
        events = await mock.collect(tool_request() if tool else text_request())
    check_well_formed(events)
    assert isinstance(events[-1], StreamError)


@SHAPES
@pytest.mark.asyncio
@bounded
async def test_nothing_after_message_stop(shape: Shape, tls_context: ssl.SSLContext) -> None:
    """Bytes after the terminator are never turned into events: MessageStop is the last event."""
    items = (*default_items(shape), *default_items(shape)[: ITEMS_TO_FIRST_TEXT[shape]])
    async with mocked(shape, tls_context) as mock:
        mock.server.script(Scripted(stream_events=items))
        events = await mock.collect()
    check_well_formed(events)
    assert isinstance(events[-1], MessageStop)
    assert text_of(events) == DEFAULT_TEXT


@SHAPES
@pytest.mark.parametrize("cut_mode", [CutMode.RESET, CutMode.CLOSE], ids=lambda m: m.value)
@pytest.mark.parametrize("tool", [False, True], ids=["text", "tool"])
@pytest.mark.asyncio
@bounded
async def test_cut_after_n_bytes_across_the_stream(
    shape: Shape, cut_mode: CutMode, tool: bool, tls_context: ssl.SSLContext
) -> None:
    """A cut at N bytes, N across the response: a failure, or a prefix ending in one StreamError, or all of it."""
    request = tool_request() if tool else text_request()
    outcomes: set[str] = set()
    async with mocked(shape, tls_context) as mock:
        full = await full_events(mock, tool=tool)
        for cut_after_bytes in range(0, CUT_SWEEP_END, CUT_SWEEP_STEP):
            mock.server.script(Scripted(cut_after_bytes=cut_after_bytes, cut_mode=cut_mode))
            try:
                events = await mock.collect(request)
            except ProviderCallFailed:
                assert mock.seen == [], cut_after_bytes  # nothing is yielded before a raise
                outcomes.add("failed")
                continue
            check_well_formed(events)
            assert events[:-1] == full[: len(events) - 1], cut_after_bytes
            if isinstance(events[-1], StreamError):
                outcomes.add("interrupted")
                continue
            assert events == full, cut_after_bytes
            outcomes.add("complete")
            break  # the terminator got through: every longer cut gives the same complete stream
    assert outcomes == {"failed", "interrupted", "complete"}


@SHAPES
@pytest.mark.asyncio
@bounded
async def test_idle_gap_after_first_event(shape: Shape, tls_context: ssl.SSLContext) -> None:
    """No bytes for longer than idle_timeout_s after the first event: one StreamError, promptly."""
    items = (first_text_bytes(shape), *default_items(shape)[ITEMS_TO_FIRST_TEXT[shape] :])
    async with mocked(shape, tls_context) as mock:
        mock.server.script(Scripted(stream_events=items, delay_between_chunks_s=0.3))
        loop = asyncio.get_running_loop()
        started = loop.time()
        events = await mock.collect(timeout_s=2.0, idle_timeout_s=0.1)
        elapsed_s = loop.time() - started
    check_well_formed(events)
    assert events[:-1] == [TextDelta(text="Hello")]
    assert isinstance(events[-1], StreamError)
    assert "no data for 0.1s" in events[-1].message
    assert elapsed_s < 0.3


@SHAPES
@pytest.mark.asyncio
@bounded
async def test_no_overall_timeout_after_first_event(shape: Shape, tls_context: ssl.SSLContext) -> None:
    """timeout_at bounds only the first event: a stream that outlives it still completes."""
    items = (first_text_bytes(shape), *default_items(shape)[ITEMS_TO_FIRST_TEXT[shape] :])
    async with mocked(shape, tls_context) as mock:
        mock.server.script(Scripted(stream_events=items, delay_between_chunks_s=0.06))
        loop = asyncio.get_running_loop()
        started = loop.time()
        events = await mock.collect(timeout_s=0.1)
        elapsed_s = loop.time() - started
    assert elapsed_s > 0.1
    assert isinstance(events[-1], MessageStop)
    assert text_of(events) == DEFAULT_TEXT


@SHAPES
@pytest.mark.parametrize("after_first_event", [True, False], ids=["after-first", "before-first"])
@pytest.mark.asyncio
@bounded
async def test_consumer_cancellation_closes_the_response(
    shape: Shape, after_first_event: bool, client: httpx.AsyncClient
) -> None:
    """Cancelling the consumer (before or after the first event) propagates CancelledError and closes the connection."""
    content_type = mock_shapes.stream_content_type(shape)
    body = (first_text_bytes(shape),) if after_first_event else ()
    async with RawServer(chunked(*body, content_type=content_type)) as server:
        provider = make_provider(shape, client, server.base_url)
        first = asyncio.Event()

        async def consume() -> None:
            timeout_at = asyncio.get_running_loop().time() + 2
            async for _ in provider.stream(text_request(), MODEL, timeout_at=timeout_at):
                first.set()

        task = asyncio.create_task(consume())
        if after_first_event:
            await first.wait()
        else:
            await server.request_received.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert first.is_set() is after_first_event
        async with asyncio.timeout(1.0):
            await server.client_closed.wait()


@SHAPES
@pytest.mark.asyncio
@bounded
async def test_aclose_after_first_event_closes_the_response(shape: Shape, client: httpx.AsyncClient) -> None:
    """Closing the generator after the first event (GeneratorExit) closes the connection."""
    content_type = mock_shapes.stream_content_type(shape)
    async with RawServer(chunked(first_text_bytes(shape), content_type=content_type)) as server:
        provider = make_provider(shape, client, server.base_url)
        timeout_at = asyncio.get_running_loop().time() + 2
        async with contextlib.aclosing(provider.stream(text_request(), MODEL, timeout_at=timeout_at)) as events:  # type: ignore[type-var]  # an async generator
            assert await anext(events) == TextDelta(text="Hello")
        async with asyncio.timeout(1.0):
            await server.client_closed.wait()


@SHAPES
@pytest.mark.asyncio
@bounded
async def test_attempt_timeout_closes_the_response(shape: Shape, client: httpx.AsyncClient) -> None:
    """Headers then nothing: ATTEMPT_TIMEOUT, and the connection is closed, not left hanging."""
    content_type = mock_shapes.stream_content_type(shape)
    async with RawServer(chunked(content_type=content_type)) as server:
        provider = make_provider(shape, client, server.base_url)
        timeout_at = asyncio.get_running_loop().time() + 0.1
        with pytest.raises(ProviderCallFailed):
            await anext(provider.stream(text_request(), MODEL, timeout_at=timeout_at))
        async with asyncio.timeout(1.0):
            await server.client_closed.wait()
