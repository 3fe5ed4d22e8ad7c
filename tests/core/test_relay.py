"""The same-protocol relay rules (``core/formats/relay.py``) and the decoder's frames (``keep_frames``)."""

from __future__ import annotations

import json
from dataclasses import fields
from typing import Any

import icontract
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from routeproof.core.formats.relay import (
    RelayedTextDelta,
    attach_frames,
    is_usage_only_chunk,
    relay_frame,
    relayed_frames,
    relays,
    with_frames,
)
from routeproof.core.formats.sse import StreamDecoder, WireProtocol
from routeproof.core.messages import WireFormat
from routeproof.core.stream_rules import Hold, hold_back
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


def _data(payload: object, event: str | None = None, eol: str = "\n") -> str:
    head = f"event: {event}{eol}" if event else ""
    return f"{head}data: {json.dumps(payload)}{eol}{eol}"


def _chunk(delta: dict[str, Any], finish: str | None = None, **top: object) -> dict[str, Any]:
    return {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m", "system_fingerprint": "fp",
            **top, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}  # fmt: skip


USAGE = {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}
OPENAI_FRAMES = (
    _data(_chunk({"role": "assistant", "content": ""}, usage=None)),
    ": keep-alive\n\n",
    _data(_chunk({"content": "Hi"}, usage=None, service_tier="default")),
    _data(_chunk({"annotations": [{"type": "url_citation"}]}, usage=None)),
    _data(_chunk({"content": " there", "tool_calls": None}, usage=None), eol="\r\n"),
    _data(_chunk({}, "stop", usage=None)),
    _data({"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [], "usage": USAGE}),
    "data: [DONE]\n\n",
)
ANTHROPIC_FRAMES = (
    _data(
        {
            "type": "message_start",
            "message": {
                "id": "msg_1",
                "usage": {"input_tokens": 3, "output_tokens": 1, "cache_creation": {"ephemeral_5m_input_tokens": 0}},
            },
        },
        "message_start",
    ),
    _data({"type": "ping"}, "ping"),
    _data(
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        "content_block_start",
    ),
    _data(
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}},
        "content_block_delta",
        eol="\r",
    ),
    _data({"type": "future_event", "x": 1}, "future_event"),
    _data({"type": "content_block_stop", "index": 0}, "content_block_stop"),
    _data(
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}}, "message_delta"
    ),
    _data({"type": "message_stop"}, "message_stop"),
)
STREAMS = {WireProtocol.OPENAI: OPENAI_FRAMES, WireProtocol.ANTHROPIC: ANTHROPIC_FRAMES}


def _base(event: StreamEvent) -> StreamEvent:
    """``event`` as its neutral base type (a Relayed* event without its frames)."""
    base = type(event).__mro__[1] if relayed_frames(event) is not None else type(event)
    result: StreamEvent = base(**{f.name: getattr(event, f.name) for f in fields(base)})
    return result


def _decode(protocol: WireProtocol, body: bytes, cuts: list[int], *, keep: bool) -> list[StreamEvent]:
    decoder = StreamDecoder(protocol, keep_frames=keep)
    events: list[StreamEvent] = []
    points = sorted({c % (len(body) + 1) for c in cuts})
    for start, end in zip([0, *points], [*points, len(body)], strict=True):
        events += decoder.feed(body[start:end])
    return events + decoder.finish()


@settings(max_examples=150, deadline=None)
@given(protocol=st.sampled_from(list(STREAMS)), cuts=st.lists(st.integers(min_value=0), max_size=12))
def test_the_frames_of_all_events_are_the_body_as_received(protocol: WireProtocol, cuts: list[int]) -> None:
    """However the body is split, the events' frames joined are the body, and the events are the plain decoder's."""
    body = "".join(STREAMS[protocol]).encode()
    kept = _decode(protocol, body, cuts, keep=True)
    assert "".join(f for e in kept for f in relayed_frames(e) or ()).encode() == body
    assert [_base(e) for e in kept] == _decode(protocol, body, cuts, keep=False)
    assert isinstance(kept[-1], MessageStop)


def test_without_keep_frames_the_events_are_the_neutral_ones() -> None:
    """A cross-protocol stream (no relay) decodes to the neutral events, nothing kept."""
    events = _decode(WireProtocol.OPENAI, "".join(OPENAI_FRAMES).encode(), [], keep=False)
    assert all(relayed_frames(e) is None for e in events)


def test_a_frame_opening_a_tool_call_is_held_back_with_it() -> None:
    """One OpenAI chunk closing the text and opening a tool call: its frame goes with the tool call, which
    the relay holds until the block closes (never relayed before it: partial tool JSON)."""
    call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "f", "arguments": '{"a"'}}
    frames = (_data(_chunk({"content": "Hi"})), _data(_chunk({"content": "", "tool_calls": [call]})))
    decoder = StreamDecoder(WireProtocol.OPENAI, keep_frames=True)
    events = decoder.feed("".join(frames).encode())
    assert [type(_base(e)) for e in events] == [TextDelta, BlockStop, ToolUseStart, ToolUseDelta]
    assert relayed_frames(events[1]) == ()
    assert relayed_frames(events[2]) == ()
    assert relayed_frames(events[3]) == (frames[1],)
    in_tool, emitted = False, list[str]()
    for event in events:
        decision = hold_back(event, in_tool=in_tool, whole_turn=False)
        in_tool = decision.in_tool
        if decision.hold is Hold.EMIT:
            emitted += relayed_frames(event) or ()
    assert emitted == [frames[0]]


def test_frames_go_with_the_last_event_that_is_not_an_error() -> None:
    """A batch ending in a StreamError gives its frames to the event before it; a batch of errors keeps them waiting."""
    stop = MessageStop(stop_reason=FinishReason.STOP, usage=Usage())
    events, waiting = attach_frames([TextDelta(text="a"), StreamError(message="x")], ("f1", "f2"))
    assert relayed_frames(events[0]) == ("f1", "f2")
    assert waiting == ()
    assert attach_frames([StreamError(message="x")], ("f1",)) == ([StreamError(message="x")], ("f1",))
    assert attach_frames([], ("f1",)) == ([], ("f1",))
    [carried], _ = attach_frames([stop], ("f",))
    assert isinstance(carried, MessageStop)
    assert relayed_frames(carried) == ("f",)


def test_an_event_already_relayed_is_refused_not_stripped_of_its_frames() -> None:
    """CrossHair's counterexample (the gate of stop 36): an event that already carries frames would lose
    them to the batch's carrier; attach_frames takes only what a decoder just produced."""
    with pytest.raises(icontract.ViolationError, match="fresh from a decoder"):
        attach_frames([with_frames(TextDelta(text="a"), ("",)), TextDelta(text="b")], ())


def test_with_frames_keeps_the_event_and_never_relays_an_error() -> None:
    """A relayed event is its neutral event plus frames; a StreamError stays as it is."""
    relayed = with_frames(TextDelta(text="a", logprobs_json="{}"), ("f",))
    assert isinstance(relayed, RelayedTextDelta)
    assert relayed.text == "a"
    assert relayed.logprobs_json == "{}"
    error = StreamError(message="cut")
    assert with_frames(error, ("f",)) is error


USAGE_CHUNK = _data({"id": "c", "choices": [], "usage": USAGE})


@pytest.mark.parametrize(
    ("frame", "held"),
    [
        (USAGE_CHUNK, True),
        (_data(_chunk({"content": "Hi"}, usage=None)), False),
        (_data(_chunk({}, "stop", usage=USAGE)), False),  # usage on a chunk with a choice: relayed whole
        ("data: [DONE]\n\n", False),
        (": usage choices\n\n", False),
        ('data: {"choices": [], "usage": nul\n\n', False),  # not JSON: not this rule's to judge
    ],
)
def test_only_the_usage_chunk_is_held_and_only_when_the_caller_did_not_ask(frame: str, held: bool) -> None:
    """The router's own usage chunk is held back from a caller that did not ask for usage; all else is as sent."""
    assert is_usage_only_chunk(frame) is held
    assert relay_frame(WireFormat.OPENAI_CHAT, frame, caller_usage=False) == ("" if held else frame)
    assert relay_frame(WireFormat.OPENAI_CHAT, frame, caller_usage=True) == frame
    assert relay_frame(WireFormat.ANTHROPIC_MESSAGES, frame, caller_usage=False) == frame


def test_only_a_stream_of_the_callers_own_protocol_is_relayed() -> None:
    """Same protocol and frames kept: relayed; another protocol, a Responses caller, or no frames: encoded."""
    relayed = with_frames(TextDelta(text="a"), ("f",))
    assert relays(WireFormat.OPENAI_CHAT, WireFormat.OPENAI_CHAT, relayed)
    assert relays(WireFormat.ANTHROPIC_MESSAGES, WireFormat.ANTHROPIC_MESSAGES, relayed)
    assert not relays(WireFormat.ANTHROPIC_MESSAGES, WireFormat.OPENAI_CHAT, relayed)
    assert not relays(WireFormat.OPENAI_RESPONSES, WireFormat.OPENAI_RESPONSES, relayed)
    assert not relays(WireFormat.OPENAI_CHAT, None, relayed)
    assert not relays(WireFormat.OPENAI_CHAT, WireFormat.OPENAI_CHAT, TextDelta(text="a"))


def test_streamed_audio_is_content() -> None:
    """A ``delta.audio`` piece commits the stream (an empty TextDelta) and carries its frame at once."""
    frame = _data(_chunk({"audio": {"id": "audio_1", "transcript": "Hi"}}))
    [event] = StreamDecoder(WireProtocol.OPENAI, keep_frames=True).feed(frame.encode())
    assert _base(event) == TextDelta(text="")
    assert relayed_frames(event) == (frame,)
