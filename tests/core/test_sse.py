"""Incremental SSE decoding: chunking independence, completeness, fold == normalize, WHATWG rules."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from routeproof.core.formats.normalize import normalize_anthropic, normalize_openai
from routeproof.core.formats.sse import StreamDecoder, WireProtocol, fold_events
from routeproof.core.types import (
    BlockStop,
    FinishReason,
    MessageStop,
    ProviderKind,
    StreamError,
    StreamEvent,
    TextDelta,
    ToolUseDelta,
    ToolUseStart,
    Usage,
)
from routeproof.errors import InvalidResponse


def _sse(event: str | None, data: dict[str, Any] | str) -> str:
    text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    return (f"event: {event}\n" if event else "") + f"data: {text}\n\n"


def _anthropic(kind: str, **fields: Any) -> str:
    return _sse(kind, {"type": kind, **fields})


def _delta(index: int, delta: dict[str, Any]) -> str:
    return _anthropic("content_block_delta", index=index, delta=delta)


_MESSAGE: dict[str, Any] = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5",
    "content": [],
    "stop_reason": None,
    "usage": {"input_tokens": 25, "output_tokens": 1, "cache_read_input_tokens": 5},
}
_TOOL_BLOCK = {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}
ANTHROPIC_STREAM = "".join(
    [
        _anthropic("message_start", message=_MESSAGE),
        _anthropic("content_block_start", index=0, content_block={"type": "text", "text": ""}),
        _anthropic("ping"),
        _delta(0, {"type": "text_delta", "text": "Héllo 🌍"}),
        _anthropic("content_block_stop", index=0),
        _anthropic("content_block_start", index=1, content_block=_TOOL_BLOCK),
        _delta(1, {"type": "input_json_delta", "partial_json": '{"location": "Pa'}),
        _delta(1, {"type": "input_json_delta", "partial_json": 'ris"}'}),
        _anthropic("content_block_stop", index=1),
        _anthropic("message_delta", delta={"stop_reason": "tool_use", "stop_sequence": None},
                   usage={"output_tokens": 15}),
        _anthropic("message_stop"),
    ]
).encode()  # fmt: skip

ANTHROPIC_FINAL = {
    "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
    "content": [{"type": "text", "text": "Héllo 🌍"},
                {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"location": "Paris"}}],
    "stop_reason": "tool_use", "stop_sequence": None,
    "usage": {"input_tokens": 25, "output_tokens": 15, "cache_read_input_tokens": 5},
}  # fmt: skip


def _chunk(i: int, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], "usage": None} | {"_": i}  # fmt: skip


def _call(index: int, arguments: str, call_id: str = "", name: str = "") -> dict[str, Any]:
    if not call_id:
        return {"tool_calls": [{"index": index, "function": {"arguments": arguments}}]}
    function = {"name": name, "arguments": arguments}
    return {"tool_calls": [{"index": index, "id": call_id, "type": "function", "function": function}]}


_USAGE_CHUNK = {
    "id": "chatcmpl-1",
    "object": "chat.completion.chunk",
    "model": "gpt-4o",
    "choices": [],
    "usage": {"prompt_tokens": 30, "completion_tokens": 9, "prompt_tokens_details": {"cached_tokens": 5}},
}
OPENAI_STREAM = "".join(
    [
        _sse(None, _chunk(0, {"role": "assistant", "content": ""})),
        _sse(None, _chunk(1, {"content": "Héllo 🌍"})),
        _sse(None, _chunk(2, _call(0, "", "call_A", "f"))),
        _sse(None, _chunk(3, _call(0, '{"a": [1, '))),
        _sse(None, _chunk(4, _call(1, "{}", "call_B", "g"))),
        _sse(None, _chunk(5, _call(0, "2.5]}"))),
        _sse(None, _chunk(6, {}, "tool_calls")),
        _sse(None, _USAGE_CHUNK),
        "data: [DONE]\n\n",
    ]
).encode()  # fmt: skip

_FINAL_CALLS = [
    {"id": "call_A", "type": "function", "function": {"name": "f", "arguments": '{"a":[1,2.5]}'}},
    {"id": "call_B", "type": "function", "function": {"name": "g", "arguments": "{}"}},
]
OPENAI_FINAL = {
    "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-4o",
    "choices": [{"index": 0, "finish_reason": "tool_calls",
                 "message": {"role": "assistant", "content": "Héllo 🌍", "tool_calls": _FINAL_CALLS}}],
    "usage": {"prompt_tokens": 30, "completion_tokens": 9, "prompt_tokens_details": {"cached_tokens": 5}},
}  # fmt: skip


def _decode(protocol: WireProtocol, chunks: list[bytes]) -> list[StreamEvent]:
    decoder = StreamDecoder(protocol)
    events: list[StreamEvent] = []
    for chunk in chunks:
        events += decoder.feed(chunk)
    return events + decoder.finish()


def _split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    return [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]


def test_anthropic_stream_events() -> None:
    """The documented Anthropic stream maps to text, tool start/deltas, block stops and MessageStop(tool_calls)."""
    events = _decode(WireProtocol.ANTHROPIC, [ANTHROPIC_STREAM])
    assert events == [
        TextDelta(text="Héllo 🌍"), BlockStop(), ToolUseStart(id="toolu_1", name="get_weather"),
        ToolUseDelta(id="toolu_1", partial_json='{"location": "Pa'), ToolUseDelta(id="toolu_1", partial_json='ris"}'),
        BlockStop(),
        MessageStop(stop_reason=FinishReason.TOOL_CALLS,
                    usage=Usage(prompt_tokens=25, completion_tokens=15, cached_input_tokens=5)),
    ]  # fmt: skip


def test_openai_streaming_stop_reason_is_tool_calls_with_usage_chunk() -> None:
    """OpenAI parallel streamed tool calls end in MessageStop(TOOL_CALLS) carrying the usage chunk's counts."""
    events = _decode(WireProtocol.OPENAI, [OPENAI_STREAM])
    assert events[-1] == MessageStop(
        stop_reason=FinishReason.TOOL_CALLS, usage=Usage(prompt_tokens=25, completion_tokens=9, cached_input_tokens=5)
    )
    assert [e for e in events if isinstance(e, ToolUseStart)] == [
        ToolUseStart(id="call_A", name="f"),
        ToolUseStart(id="call_B", name="g"),
    ]


@given(st.sampled_from([WireProtocol.ANTHROPIC, WireProtocol.OPENAI]), st.lists(st.integers(0, 10_000), max_size=40))
def test_any_chunking_gives_the_same_events(protocol: WireProtocol, cuts: list[int]) -> None:
    """Splitting a valid stream anywhere (inside UTF-8 characters, between CR and LF) changes no event."""
    stream = ANTHROPIC_STREAM if protocol is WireProtocol.ANTHROPIC else OPENAI_STREAM
    for body in (stream, stream.replace(b"\n", b"\r\n"), stream.replace(b"\n", b"\r")):
        assert _decode(protocol, _split(body, cuts)) == _decode(protocol, [stream])


def test_fold_equals_normalize_of_the_non_streamed_response() -> None:
    """Folding a stream's events gives the same ProviderResponse as normalising the non-streamed body."""
    anthropic = fold_events(_decode(WireProtocol.ANTHROPIC, [ANTHROPIC_STREAM]), provider=ProviderKind.ANTHROPIC,
                            model="claude-sonnet-4-5", response_id="msg_1")  # fmt: skip
    assert anthropic == normalize_anthropic(ANTHROPIC_FINAL)
    openai = fold_events(_decode(WireProtocol.OPENAI, [OPENAI_STREAM]), provider=ProviderKind.OPENAI, model="gpt-4o",
                         response_id="chatcmpl-1")  # fmt: skip
    assert openai == normalize_openai(OPENAI_FINAL)


@given(st.integers(0, 10_000))
def test_truncated_stream_is_incomplete_never_a_message_stop(cut: int) -> None:
    """A stream cut before its terminator ends in StreamError('stream incomplete...') and folding raises."""
    for protocol, stream in ((WireProtocol.ANTHROPIC, ANTHROPIC_STREAM), (WireProtocol.OPENAI, OPENAI_STREAM)):
        terminator = stream.rindex(b"data:")
        events = _decode(protocol, [stream[: cut % terminator]])
        assert not any(isinstance(e, MessageStop) for e in events)
        assert isinstance(events[-1], StreamError)
        assert events[-1].message.startswith("stream incomplete")
        try:
            fold_events(events, provider=ProviderKind.OPENAI, model="m")
        except InvalidResponse:
            pass
        else:
            raise AssertionError("a truncated stream folded into a response")


def test_partial_tool_json_is_an_error_not_a_tool_call() -> None:
    """A tool block that stops with incomplete JSON arguments is a StreamError, never a finished call."""
    stream = ANTHROPIC_STREAM.replace(b'ris\\"}', b"ris")
    events = _decode(WireProtocol.ANTHROPIC, [stream])
    assert isinstance(events[-1], StreamError)
    assert "toolu_1" in events[-1].message


def test_malformed_json_and_in_band_error_become_stream_errors() -> None:
    """Garbled event JSON and Anthropic's in-band error event each end the stream with one StreamError."""
    garbled = _decode(WireProtocol.OPENAI, [b"data: {not json\n\ndata: [DONE]\n\n"])
    assert len(garbled) == 1
    assert isinstance(garbled[0], StreamError)
    overloaded = _sse("error", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    cut = ANTHROPIC_STREAM.index(b"event: content_block_start")
    events = _decode(WireProtocol.ANTHROPIC, [ANTHROPIC_STREAM[:cut] + overloaded.encode() + ANTHROPIC_STREAM])
    assert events[-1] == StreamError(message="provider error: overloaded_error: Overloaded")
    assert sum(isinstance(e, StreamError | MessageStop) for e in events) == 1


def test_nothing_is_emitted_after_message_stop() -> None:
    """After MessageStop, further bytes and finish() produce no events."""
    decoder = StreamDecoder(WireProtocol.OPENAI)
    assert isinstance(decoder.feed(OPENAI_STREAM)[-1], MessageStop)
    assert decoder.feed(OPENAI_STREAM) == []
    assert decoder.finish() == []


def test_whatwg_rules_bom_comments_multiline_data_and_fields() -> None:
    """BOM, comments, id/retry fields, a field without colon and multi-line data follow the WHATWG rules."""
    body = (
        "\ufeff: keep-alive comment\nretry: 1500\nid: 7\ndata\n\n"  # "data" with no colon: an empty data line
        'data: {"choices": [{"index": 0, "delta":\ndata: {"content": "hi"}, "finish_reason": "stop"}]}\n\n'
        "data: [DONE]\n\n"
    ).encode()
    decoder = StreamDecoder(WireProtocol.OPENAI)
    events = decoder.feed(body[:1]) + decoder.feed(body[1:]) + decoder.finish()
    assert decoder.retry_ms == 1500
    assert decoder.last_event_id == "7"
    assert events == [TextDelta(text="hi"), BlockStop(), MessageStop(stop_reason=FinishReason.STOP, usage=Usage())]


@given(st.binary(max_size=300), st.sampled_from([WireProtocol.ANTHROPIC, WireProtocol.OPENAI]))
def test_garbage_bytes_only_yield_stream_errors(data: bytes, protocol: WireProtocol) -> None:
    """Random bytes never raise: the decoder ends in exactly one terminal event, a StreamError or MessageStop."""
    events = _decode(protocol, [data])
    assert sum(isinstance(e, StreamError | MessageStop) for e in events) == 1


_EVENT_KEYS = st.sampled_from(
    ["type", "index", "delta", "choices", "usage", "message", "content_block", "tool_calls", "function", "text",
     "finish_reason", "error", "id"]
)  # fmt: skip
_EVENT_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(_EVENT_KEYS, c, max_size=4),
    max_leaves=10,
)


@given(st.lists(_EVENT_JSON, max_size=5), st.sampled_from([WireProtocol.ANTHROPIC, WireProtocol.OPENAI]))
def test_wrongly_typed_event_json_only_yields_stream_errors(payloads: list[Any], protocol: WireProtocol) -> None:
    """Well-formed SSE carrying JSON of the wrong shape never raises KeyError/TypeError/IndexError."""
    body = "".join(_sse(None, json.dumps(p)) for p in payloads).encode()
    events = _decode(protocol, [body])
    assert isinstance(events[-1], StreamError | MessageStop)


class _CountingEol:
    """Wraps the decoder's line-end pattern and counts how many characters each search may scan."""

    def __init__(self, pattern: Any) -> None:
        self.pattern = pattern
        self.scanned = 0

    def search(self, text: str, position: int = 0) -> Any:
        self.scanned += len(text) - position
        return self.pattern.search(text, position)


def test_line_decoding_scans_each_character_a_bounded_number_of_times(monkeypatch: Any) -> None:
    """A 1 MB line fed in 1000 small chunks is scanned for line ends about once, not once per chunk."""
    from routeproof.core.formats import sse

    counter = _CountingEol(sse._EOL)
    monkeypatch.setattr(sse, "_EOL", counter)
    body = ('data: {"choices":[{"index":0,"delta":{"content":"' + "x" * 1_000_000 + '"}}]}\n\n').encode()
    decoder = StreamDecoder(WireProtocol.OPENAI)
    events: list[StreamEvent] = []
    for i in range(0, len(body), 1000):
        events += decoder.feed(body[i : i + 1000])
    assert events == [TextDelta(text="x" * 1_000_000)]
    assert counter.scanned <= 2 * len(body)


def test_a_line_over_the_cap_ends_the_stream_in_a_stream_error() -> None:
    """A line longer than max_line_chars is a StreamError naming the cap, even before the line ends."""
    decoder = StreamDecoder(WireProtocol.OPENAI, max_line_chars=100)
    events = decoder.feed(b"data: " + b"y" * 60) + decoder.feed(b"y" * 60)
    assert len(events) == 1
    assert isinstance(events[0], StreamError)
    assert "longer than 100" in events[0].message
    assert decoder.done
    assert decoder.feed(b"\n\ndata: [DONE]\n\n") == []


def test_an_event_whose_data_lines_sum_over_the_cap_is_a_stream_error() -> None:
    """Many short data lines of one event count together against the cap."""
    decoder = StreamDecoder(WireProtocol.OPENAI, max_line_chars=100)
    events = decoder.feed(b"data: 0123456789\n" * 20)
    assert len(events) == 1
    assert isinstance(events[0], StreamError)


def test_a_line_at_the_cap_is_decoded() -> None:
    """A line of exactly max_line_chars characters is still an ordinary line."""
    line = 'data: {"choices":[]}'
    decoder = StreamDecoder(WireProtocol.OPENAI, max_line_chars=len(line))
    assert decoder.feed((line + "\n\n").encode()) == []
    assert not decoder.done


def test_null_usage_fields_in_message_delta_keep_the_counts_of_message_start() -> None:
    """message_delta usage with null counts (cache, input) does not erase message_start's counts."""
    message = _MESSAGE | {"usage": {"input_tokens": 25, "output_tokens": 1, "cache_read_input_tokens": 5,
                                    "cache_creation_input_tokens": 7}}  # fmt: skip
    body = "".join(
        [
            _anthropic("message_start", message=message),
            _anthropic("content_block_start", index=0, content_block={"type": "text", "text": ""}),
            _delta(0, {"type": "text_delta", "text": "hi"}),
            _delta(0, {"type": "citations_delta", "citation": {"type": "char_location", "cited_text": "hi"}}),
            _anthropic("content_block_stop", index=0),
            _anthropic("message_delta", delta={"stop_reason": "model_context_window_exceeded"},
                       usage={"output_tokens": 9, "input_tokens": None, "cache_read_input_tokens": None,
                              "cache_creation_input_tokens": None}),
            _anthropic("message_stop"),
        ]
    ).encode()  # fmt: skip
    events = _decode(WireProtocol.ANTHROPIC, [body])
    assert events == [
        TextDelta(text="hi"),
        TextDelta(text="", citation_json='{"type":"char_location","cited_text":"hi"}'),  # carried, as sent
        BlockStop(),
        MessageStop(
            stop_reason=FinishReason.LENGTH,
            usage=Usage(prompt_tokens=25, completion_tokens=9, cached_input_tokens=5, cache_creation_tokens=7),
        ),
    ]
