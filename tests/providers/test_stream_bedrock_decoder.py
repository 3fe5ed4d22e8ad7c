"""The ConverseStream decoder on its own: AWS event-stream frames in, provider-neutral events out."""

from __future__ import annotations

import pytest

from routeproof.core.types import (
    BlockStop,
    FinishReason,
    MessageStop,
    StreamError,
    StreamEvent,
    TextDelta,
    ToolUseDelta,
    ToolUseStart,
    Usage,
)
from routeproof.mock.eventstream import encode_event, encode_exception, encode_message
from routeproof.providers.bedrock_stream import ConverseStreamDecoder

USAGE = {"inputTokens": 12, "outputTokens": 8, "cacheReadInputTokens": 5, "cacheWriteInputTokens": 3}


def delta(index: int, payload: dict[str, object]) -> bytes:
    """A contentBlockDelta frame."""
    return encode_event("contentBlockDelta", {"contentBlockIndex": index, "delta": payload})


def text_then_tool() -> bytes:
    """A whole answer: one text block, one tool call in two pieces, stop and metadata."""
    frames = [
        encode_event("messageStart", {"role": "assistant"}),
        delta(0, {"text": "Hi "}),
        delta(0, {"text": "there"}),
        encode_event("contentBlockStop", {"contentBlockIndex": 0}),
        encode_event(
            "contentBlockStart", {"contentBlockIndex": 1, "start": {"toolUse": {"toolUseId": "tu1", "name": "search"}}}
        ),
        delta(1, {"toolUse": {"input": '{"q": '}}),
        delta(1, {"toolUse": {"input": '"x"}'}}),
        encode_event("contentBlockStop", {"contentBlockIndex": 1}),
        encode_event("messageStop", {"stopReason": "tool_use"}),
        encode_event("metadata", {"usage": USAGE, "metrics": {"latencyMs": 3}}),
    ]
    return b"".join(frames)


EXPECTED: list[StreamEvent] = [
    TextDelta(text="Hi "),
    TextDelta(text="there"),
    BlockStop(),
    ToolUseStart(id="tu1", name="search"),
    ToolUseDelta(id="tu1", partial_json='{"q": '),
    ToolUseDelta(id="tu1", partial_json='"x"}'),
    BlockStop(),
    MessageStop(
        stop_reason=FinishReason.TOOL_CALLS,
        usage=Usage(prompt_tokens=12, completion_tokens=8, cached_input_tokens=5, cache_creation_tokens=3),
    ),
]


def decode(data: bytes, chunk_size: int) -> list[StreamEvent]:
    """Feed ``data`` in chunks of ``chunk_size`` bytes, then finish."""
    decoder = ConverseStreamDecoder()
    events: list[StreamEvent] = []
    for start in range(0, len(data), chunk_size):
        events += decoder.feed(data[start : start + chunk_size])
    return events + decoder.finish()


@pytest.mark.parametrize("chunk_size", [1, 7, 64, 100_000])
def test_any_chunking_gives_the_same_events(chunk_size: int) -> None:
    """However the bytes are split, the events are the same; MessageStop carries all four usage counts."""
    assert decode(text_then_tool(), chunk_size) == EXPECTED


def test_in_band_exception() -> None:
    """An exception message is a StreamError naming the exception type and its message."""
    events = decode(encode_exception("throttlingException", "Too many tokens"), 1000)
    assert len(events) == 1
    assert isinstance(events[0], StreamError)
    assert "throttlingException: Too many tokens" in events[0].message


def test_error_message_type() -> None:
    """An ``error`` message (error code and message in headers) is a StreamError."""
    frame = encode_message({":message-type": "error", ":error-code": "InternalFailure", ":error-message": "boom"}, b"")
    (event,) = decode(frame, 1000)
    assert isinstance(event, StreamError)
    assert "InternalFailure: boom" in event.message


def test_bad_checksum_after_text() -> None:
    """A frame whose CRC does not match ends the stream with a StreamError after what was good."""
    data = delta(0, {"text": "ok"}) + encode_event("contentBlockStop", {"contentBlockIndex": 0}, corrupt_crc=True)
    events = decode(data, 1000)
    assert events[0] == TextDelta(text="ok")
    assert isinstance(events[1], StreamError)
    assert "ChecksumMismatch" in events[1].message
    assert len(events) == 2


def test_end_before_metadata_is_incomplete() -> None:
    """messageStop without the metadata that carries usage is not a finished stream."""
    data = delta(0, {"text": "ok"}) + encode_event("messageStop", {"stopReason": "end_turn"})
    events = decode(data, 1000)
    assert events[0] == TextDelta(text="ok")
    assert isinstance(events[-1], StreamError)
    assert events[-1].message.startswith("stream incomplete")


def test_metadata_before_message_stop() -> None:
    """Usage without a stop reason is a StreamError, not a MessageStop with a made-up reason."""
    events = decode(encode_event("metadata", {"usage": USAGE}), 1000)
    assert len(events) == 1
    assert isinstance(events[0], StreamError)


def test_tool_input_not_json_object() -> None:
    """A tool call whose accumulated input is not a JSON object is a StreamError at its block stop."""
    data = b"".join(
        [
            encode_event(
                "contentBlockStart", {"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": "t", "name": "n"}}}
            ),
            delta(0, {"toolUse": {"input": '{"q": '}}),
            encode_event("contentBlockStop", {"contentBlockIndex": 0}),
        ]
    )
    events = decode(data, 1000)
    assert isinstance(events[-1], StreamError)
    assert "'t'" in events[-1].message


@pytest.mark.parametrize(
    "frame",
    [
        delta(0, {"toolUse": {"input": "{}"}}),  # a tool delta for a block that never started
        encode_event("contentBlockDelta", {"delta": {"text": "x"}}),  # no contentBlockIndex
        encode_event("messageStop", {"stopReason": 7}),
        encode_message({":message-type": "event", ":event-type": "messageStop"}, b"{not json"),
        encode_message({":message-type": "surprise"}, b"{}"),
    ],
    ids=["orphan-tool-delta", "no-index", "stop-reason-type", "payload-not-json", "unknown-message-type"],
)
def test_wrong_shapes_are_stream_errors(frame: bytes) -> None:
    """A frame of the wrong shape is a 'malformed' StreamError, never an exception."""
    (event,) = decode(frame, 1000)
    assert isinstance(event, StreamError)
    assert "malformed" in event.message


def test_unknown_events_and_deltas_are_ignored() -> None:
    """Event types and delta kinds added later are skipped (reasoning is carried: test_bedrock_block_kinds)."""
    data = b"".join(
        [
            encode_event("somethingNew", {"x": 1}),
            delta(0, {"somethingNewer": {"text": "hmm"}}),
            delta(1, {"text": "answer"}),
            encode_event("messageStop", {"stopReason": "end_turn"}),
            encode_event("metadata", {"usage": {"inputTokens": 1, "outputTokens": 1}}),
        ]
    )
    events = decode(data, 1000)
    assert events == [
        TextDelta(text="answer"),
        MessageStop(stop_reason=FinishReason.STOP, usage=Usage(prompt_tokens=1, completion_tokens=1)),
    ]


def test_nothing_after_a_terminal_event() -> None:
    """After MessageStop (or StreamError) feed and finish return nothing."""
    decoder = ConverseStreamDecoder()
    events = decoder.feed(text_then_tool())
    assert events == EXPECTED
    assert decoder.done
    assert decoder.feed(delta(0, {"text": "late"})) == []
    assert decoder.finish() == []


def test_bad_usage_is_stream_error() -> None:
    """A metadata usage with a negative count is a malformed StreamError naming the field."""
    data = encode_event("messageStop", {"stopReason": "end_turn"}) + encode_event(
        "metadata", {"usage": {"inputTokens": -1, "outputTokens": 1}}
    )
    (event,) = decode(data, 1000)
    assert isinstance(event, StreamError)
    assert "inputTokens" in event.message
