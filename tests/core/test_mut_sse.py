"""SSE decoding, branch by branch: exact events and messages for each documented shape and each wrong one."""

from __future__ import annotations

import json
from typing import Any

import pytest

from routeproof.core.formats.sse import MAX_LINE_CHARS, StreamDecoder, WireProtocol, _well_formed, fold_events
from routeproof.core.formats.wire import deterministic_tool_id
from routeproof.core.stream_events import OpaqueBlock, ThinkingDelta
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

A = WireProtocol.ANTHROPIC
OA = WireProtocol.OPENAI


def _sse(data: dict[str, Any] | str, event: str | None = None) -> str:
    text = data if isinstance(data, str) else json.dumps(data)
    return (f"event: {event}\n" if event else "") + f"data: {text}\n\n"


def _run(protocol: WireProtocol, *parts: str) -> list[StreamEvent]:
    decoder = StreamDecoder(protocol)
    return decoder.feed("".join(parts).encode()) + decoder.finish()


def _start(usage: dict[str, Any] | None = None) -> str:
    return _sse({"type": "message_start", "message": {"usage": usage or {"input_tokens": 3, "output_tokens": 1}}})


def _block(index: int, block: dict[str, Any]) -> str:
    return _sse({"type": "content_block_start", "index": index, "content_block": block})


def _delta(index: int | bool, delta: dict[str, Any]) -> str:
    return _sse({"type": "content_block_delta", "index": index, "delta": delta})


def _stop(index: int) -> str:
    return _sse({"type": "content_block_stop", "index": index})


_END = _sse({"type": "message_delta", "delta": {"stop_reason": "end_turn"}}) + _sse({"type": "message_stop"})
_INCOMPLETE = StreamError(message="stream incomplete: the body ended before the terminator")


def _choice(delta: Any = None, finish: Any = None, **extra: Any) -> str:
    choice: dict[str, Any] = {"index": 0, "delta": {} if delta is None else delta, "finish_reason": finish, **extra}
    return _sse({"choices": [choice]})


_DONE = "data: [DONE]\n\n"


# --- Anthropic -----------------------------------------------------------------------------------


def test_anthropic_error_event_with_a_plain_string_error_shows_the_string() -> None:
    """An Anthropic error event whose error is not an object reports that value as the provider error."""
    assert _run(A, _start(), _sse({"type": "error", "error": "boom"})) == [StreamError(message="provider error: boom")]


def test_anthropic_error_event_with_an_object_shows_type_and_message() -> None:
    """An Anthropic error object is reported as 'type: message'."""
    error = {"type": "error", "error": {"type": "api_error", "message": "down"}}
    assert _run(A, _sse(error)) == [StreamError(message="provider error: api_error: down")]


def test_a_text_block_with_initial_text_emits_it() -> None:
    """content_block_start with non-empty text emits that text before any delta."""
    events = _run(A, _start(), _block(0, {"type": "text", "text": "pre"}), _stop(0), _END)
    assert events[:2] == [TextDelta(text="pre"), BlockStop()]
    assert isinstance(events[-1], MessageStop)


def test_a_tool_block_with_initial_input_emits_it_as_compact_json() -> None:
    """A tool_use block that starts with a non-empty input emits it as one compact-JSON delta."""
    block = {"type": "tool_use", "id": "t1", "name": "f", "input": {"a": 1, "b": "x"}}
    events = _run(A, _start(), _block(0, block), _stop(0), _END)
    assert events[:3] == [
        ToolUseStart(id="t1", name="f"),
        ToolUseDelta(id="t1", partial_json='{"a":1,"b":"x"}'),
        BlockStop(),
    ]
    folded = fold_events(events, provider=ProviderKind.ANTHROPIC, model="m")
    assert [(c.id, c.name, c.arguments_json) for c in folded.choices[0].tool_calls] == [("t1", "f", '{"a":1,"b":"x"}')]


def test_a_tool_block_with_no_input_and_no_deltas_has_empty_object_arguments() -> None:
    """A tool call that never streamed arguments stops cleanly and folds to '{}'."""
    block = {"type": "tool_use", "id": "t1", "name": "f", "input": {}}
    events = _run(A, _start(), _block(0, block), _stop(0), _END)
    assert events[:2] == [ToolUseStart(id="t1", name="f"), BlockStop()]
    folded = fold_events(events, provider=ProviderKind.ANTHROPIC, model="m")
    assert folded.choices[0].tool_calls[0].arguments_json == "{}"


def test_server_tool_blocks_are_carried_as_opaque_pieces() -> None:
    """A server-tool block's start and deltas are OpaqueBlock pieces as sent, its stop a BlockStop."""
    tool = _block(0, {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}})
    events = _run(A, _start(), tool + _delta(0, {"type": "input_json_delta", "partial_json": "{}"}), _stop(0), _END)
    assert events == [
        OpaqueBlock(start_json='{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}'),
        OpaqueBlock(delta_json='{"type":"input_json_delta","partial_json":"{}"}'),
        BlockStop(),
        MessageStop(stop_reason=FinishReason.STOP, usage=Usage(prompt_tokens=3, completion_tokens=1)),
    ]


def test_thinking_blocks_are_relayed_with_their_signature_byte_exact() -> None:
    """A thinking block's start, thinking and signature deltas and stop are ThinkingDelta .. BlockStop;
    a redacted block is one ThinkingDelta carrying its data."""
    signature = "EqQBCkYIBRgCKkB+/=="
    thinking = _block(0, {"type": "thinking", "thinking": "", "signature": ""})
    thinking += _delta(0, {"type": "thinking_delta", "thinking": "hm"})
    thinking += _delta(0, {"type": "signature_delta", "signature": signature})
    redacted = _block(1, {"type": "redacted_thinking", "data": "opaque+/="})
    events = _run(A, _start(), thinking, _stop(0), redacted, _stop(1), _END)
    assert events[:6] == [
        ThinkingDelta(thinking="", signature=""),
        ThinkingDelta(thinking="hm"),
        ThinkingDelta(signature=signature),
        BlockStop(),
        ThinkingDelta(redacted_data="opaque+/="),
        BlockStop(),
    ]


def test_a_delta_for_an_unknown_block_index_is_a_stream_error() -> None:
    """A content_block_delta for an index never started ends the stream, naming the index."""
    events = _run(A, _start(), _delta(5, {"type": "text_delta", "text": "x"}))
    assert events == [StreamError(message="malformed message event: content_block_delta for unknown block index 5")]


def test_a_stop_for_an_unknown_block_index_is_a_stream_error() -> None:
    """A content_block_stop for an index never started ends the stream, naming the index."""
    events = _run(A, _start(), _stop(2))
    assert events == [StreamError(message="malformed message event: content_block_stop for unknown block index 2")]


def test_a_delta_that_does_not_fit_its_block_is_a_stream_error() -> None:
    """An input_json_delta on a text block (or a text_delta on a tool block) is a StreamError."""
    on_text = _run(A, _start(), _block(0, {"type": "text", "text": ""}), _delta(0, {"type": "input_json_delta"}))
    assert on_text == [
        StreamError(message="malformed message event: delta 'input_json_delta' does not fit a text block")
    ]
    tool = _block(0, {"type": "tool_use", "id": "t", "name": "f", "input": {}})
    on_tool = _run(A, _start(), tool, _delta(0, {"type": "text_delta", "text": "x"}))
    assert on_tool[-1] == StreamError(message="malformed message event: delta 'text_delta' does not fit a tool block")


def test_a_delta_type_newer_than_this_code_is_carried_not_an_error() -> None:
    """An unknown delta type inside a text block (Anthropic adds delta types) is an OpaqueBlock piece
    carried as sent, between the text pieces, and the stream completes; a known type in the wrong
    block stays an error (above)."""
    text = _block(0, {"type": "text", "text": ""})
    newer = {"type": "future_delta", "detail": {"a": 1}}
    pieces = (
        _delta(0, {"type": "text_delta", "text": "a"})
        + _delta(0, newer)
        + _delta(0, {"type": "text_delta", "text": "b"})
    )
    events = _run(A, _start(), text, pieces, _stop(0), _END)
    assert events[:4] == [TextDelta(text="a"), OpaqueBlock(delta_json='{"type":"future_delta","detail":{"a":1}}'),
                          TextDelta(text="b"), BlockStop()]  # fmt: skip
    assert isinstance(events[-1], MessageStop)


def test_incomplete_tool_arguments_at_block_stop_are_a_stream_error() -> None:
    """A tool block whose accumulated JSON is not an object ends in a StreamError naming the tool id."""
    tool = _block(0, {"type": "tool_use", "id": "t9", "name": "f", "input": {}})
    events = _run(A, _start(), tool, _delta(0, {"type": "input_json_delta", "partial_json": '{"a":'}), _stop(0))
    assert events[-1] == StreamError(message="tool call 't9' arguments are not a JSON object")


def test_message_stop_without_a_stop_reason_is_a_stream_error() -> None:
    """message_stop before any message_delta stop_reason is a StreamError."""
    events = _run(A, _start(), _sse({"type": "message_stop"}))
    assert events == [StreamError(message="message_stop without a stop_reason")]


def test_a_null_stop_reason_in_message_delta_leaves_it_unset() -> None:
    """message_delta with stop_reason null does not set a stop reason."""
    delta = _sse({"type": "message_delta", "delta": {"stop_reason": None}})
    assert _run(A, _start(), delta, _sse({"type": "message_stop"})) == [
        StreamError(message="message_stop without a stop_reason")
    ]


def test_a_wrongly_typed_field_is_a_stream_error_naming_where_and_the_value() -> None:
    """A field of the wrong type names its path and its value in the StreamError."""
    bad = _sse({"type": "message_delta", "delta": {"stop_reason": 7}})
    assert _run(A, _start(), bad) == [
        StreamError(message="malformed message event: delta.stop_reason has the wrong type: 7")
    ]


def test_a_boolean_block_index_is_rejected_as_not_an_int() -> None:
    """index: true is a wrong type, not block 1."""
    events = _run(
        A, _start(), _block(1, {"type": "text", "text": ""}), _delta(True, {"type": "text_delta", "text": "x"})
    )
    assert events == [
        StreamError(message="malformed message event: content_block_delta.index has the wrong type: True")
    ]


def test_the_event_line_gives_the_type_when_the_payload_has_none() -> None:
    """An Anthropic payload without 'type' takes its type from the SSE event line."""
    body = _sse({"error": "from the event line"}, event="error")
    assert _run(A, body) == [StreamError(message="provider error: from the event line")]


def test_the_event_type_resets_after_each_dispatch() -> None:
    """The event line applies to one event only: the next untyped payload is of type 'message', ignored."""
    body = _sse({"error": "x"}, event="ping") + _sse({"error": "y"})
    assert _run(A, body) == [_INCOMPLETE]


def test_message_delta_usage_replaces_counts_and_message_stop_reports_them() -> None:
    """Usage from message_start and message_delta is merged into the MessageStop's Usage."""
    delta = _sse({"type": "message_delta", "delta": {"stop_reason": "max_tokens"}, "usage": {"output_tokens": 40}})
    events = _run(A, _start({"input_tokens": 10, "output_tokens": 1}), delta, _sse({"type": "message_stop"}))
    assert events == [MessageStop(stop_reason=FinishReason.LENGTH, usage=Usage(prompt_tokens=10, completion_tokens=40))]


def test_a_message_delta_with_null_usage_keeps_the_earlier_counts() -> None:
    """usage: null in message_delta is no usage update."""
    delta = _sse({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": None})
    events = _run(A, _start({"input_tokens": 10, "output_tokens": 2}), delta, _sse({"type": "message_stop"}))
    assert events == [MessageStop(stop_reason=FinishReason.STOP, usage=Usage(prompt_tokens=10, completion_tokens=2))]


# --- OpenAI --------------------------------------------------------------------------------------


def test_openai_a_second_choice_is_rejected() -> None:
    """A choice with index 1 is a StreamError: routeproof streams one choice."""
    events = _run(OA, _sse({"choices": [{"index": 1, "delta": {"content": "x"}}]}))
    assert events == [StreamError(message="malformed message event: choice index 1: routeproof streams one choice")]


def test_openai_a_choice_without_index_counts_as_choice_zero() -> None:
    """A choice missing its index is choice 0."""
    events = _run(OA, _sse({"choices": [{"delta": {"content": "x"}, "finish_reason": "stop"}]}), _DONE)
    assert events == [TextDelta(text="x"), BlockStop(), MessageStop(stop_reason=FinishReason.STOP, usage=Usage())]


@pytest.mark.parametrize(
    ("choice", "message"),
    [
        ({"index": 0, "delta": [1]}, "choices[0].delta must be an object"),
        ({"index": 0, "delta": {"content": 5}}, "delta.content must be a string"),
        ({"index": 0, "delta": {"refusal": 5}}, "delta.refusal must be a string"),
        ({"index": 0, "delta": {"tool_calls": {"a": 1}}}, "delta.tool_calls must be an array"),
        (
            {"index": 0, "delta": {"tool_calls": [{"index": 0, "function": [1]}]}},
            "tool_calls[].function must be an object",
        ),
        (
            {"index": 0, "delta": {"tool_calls": [{"index": 0, "id": 5, "function": {"name": "f"}}]}},
            "tool_calls[].id must be a string",
        ),
        (
            {"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c", "function": {"name": "f", "arguments": 1}}]}},
            "tool_calls[].function.arguments must be a string",
        ),
        ({"index": 0, "delta": {}, "finish_reason": 3}, "finish_reason must be a string"),
        ({"index": 0, "delta": {"tool_calls": ["x"]}}, "tool_calls[].index has the wrong type: None"),
    ],
)
def test_openai_wrong_shapes_are_stream_errors_with_their_reason(choice: dict[str, Any], message: str) -> None:
    """Each wrongly shaped part of an OpenAI chunk is one StreamError that says what was wrong."""
    assert _run(OA, _sse({"choices": [choice]})) == [StreamError(message=f"malformed message event: {message}")]


def test_openai_choices_must_be_an_array_of_objects() -> None:
    """choices that is not an array, or holds a non-object, is a StreamError."""
    assert _run(OA, _sse({"choices": {"a": 1}})) == [
        StreamError(message="malformed message event: choices must be an array")
    ]
    assert _run(OA, _sse({"choices": [1]})) == [
        StreamError(message="malformed message event: choices[] must be an object")
    ]


def test_openai_null_delta_and_null_choices_are_empty() -> None:
    """delta: null and choices: null carry nothing."""
    events = _run(OA, _sse({"choices": None}), _choice(None, None), _choice({"content": None}, "stop"), _DONE)
    assert events == [MessageStop(stop_reason=FinishReason.STOP, usage=Usage())]


def test_openai_error_payload_is_a_provider_error() -> None:
    """An OpenAI chunk with 'error' ends the stream with its message (or the raw value)."""
    assert _run(OA, _sse({"error": {"message": "rate limited"}})) == [
        StreamError(message="provider error: rate limited")
    ]
    assert _run(OA, _sse({"error": "plain"})) == [StreamError(message="provider error: plain")]


def test_openai_refusal_text_streams_and_finishes_as_content_filter() -> None:
    """A refusal delta streams as text marked refusal and turns the finish reason into CONTENT_FILTER."""
    events = _run(OA, _choice({"refusal": "no"}), _choice({}, "stop"), _DONE)
    assert events == [
        TextDelta(text="no", refusal=True),
        BlockStop(),
        MessageStop(stop_reason=FinishReason.CONTENT_FILTER, usage=Usage()),
    ]


def test_openai_plain_content_keeps_its_finish_reason() -> None:
    """Content without refusal keeps the mapped finish reason."""
    events = _run(OA, _choice({"content": "a"}), _choice({"content": "b"}), _choice({}, "length"), _DONE)
    assert events == [
        TextDelta(text="a"),
        TextDelta(text="b"),
        BlockStop(),
        MessageStop(stop_reason=FinishReason.LENGTH, usage=Usage()),
    ]


def test_openai_blocks_switch_with_one_block_stop_between_them() -> None:
    """Text then two tool calls: a BlockStop closes each block when the next opens, and one at finish."""
    call0 = {"tool_calls": [{"index": 0, "id": "c0", "function": {"name": "f", "arguments": "{}"}}]}
    call1 = {"tool_calls": [{"index": 1, "id": "c1", "function": {"name": "g", "arguments": ""}}]}
    more0 = {"tool_calls": [{"index": 0, "function": {"arguments": ""}}]}
    events = _run(
        OA, _choice({"content": "t"}), _choice(call0), _choice(call1), _choice(more0), _choice({}, "tool_calls"), _DONE
    )
    assert events == [
        TextDelta(text="t"),
        BlockStop(),
        ToolUseStart(id="c0", name="f"),
        ToolUseDelta(id="c0", partial_json="{}"),
        BlockStop(),
        ToolUseStart(id="c1", name="g"),
        BlockStop(),
        MessageStop(stop_reason=FinishReason.TOOL_CALLS, usage=Usage()),
    ]


def test_openai_a_tool_call_without_id_gets_the_deterministic_id() -> None:
    """A tool call with no id is given deterministic_tool_id('openai', 0, index)."""
    call = {"tool_calls": [{"index": 2, "function": {"name": "f", "arguments": "{}"}}]}
    events = _run(OA, _choice(call), _choice({}, "tool_calls"), _DONE)
    expected = deterministic_tool_id("openai", 0, 2)
    assert events[:2] == [ToolUseStart(id=expected, name="f"), ToolUseDelta(id=expected, partial_json="{}")]


def test_openai_incomplete_tool_arguments_at_finish_are_a_stream_error() -> None:
    """At finish_reason, a tool call whose arguments are not a JSON object ends the stream."""
    call = {"tool_calls": [{"index": 0, "id": "c0", "function": {"name": "f", "arguments": '{"a'}}]}
    events = _run(OA, _choice(call), _choice({}, "tool_calls"), _DONE)
    assert events == [
        ToolUseStart(id="c0", name="f"),
        ToolUseDelta(id="c0", partial_json='{"a'),
        BlockStop(),
        StreamError(message="tool call 'c0' arguments are not a JSON object"),
    ]


def test_openai_done_before_finish_is_incomplete() -> None:
    """[DONE] before any finish_reason is a 'stream incomplete' StreamError."""
    assert _run(OA, _choice({"content": "x"}), _DONE) == [
        TextDelta(text="x"),
        StreamError(message="stream incomplete: [DONE] before any finish_reason"),
    ]


def test_openai_done_with_surrounding_spaces_is_recognised() -> None:
    """'data:  [DONE] ' (extra spaces) is still the terminator."""
    assert _run(OA, _choice({}, "stop"), "data:  [DONE] \n\n") == [
        MessageStop(stop_reason=FinishReason.STOP, usage=Usage())
    ]


def test_openai_usage_chunk_sets_the_usage_of_message_stop() -> None:
    """A usage chunk's counts appear in the MessageStop; a null usage changes nothing."""
    usage = _sse({"choices": [], "usage": {"prompt_tokens": 4, "completion_tokens": 2}})
    events = _run(OA, _choice({}, "stop"), usage, _sse({"choices": [], "usage": None}), _DONE)
    assert events == [MessageStop(stop_reason=FinishReason.STOP, usage=Usage(prompt_tokens=4, completion_tokens=2))]


def test_event_data_that_is_not_an_object_is_a_stream_error() -> None:
    """Event data that parses to a non-object, or fails to parse, is a StreamError quoting it."""
    assert _run(OA, _sse("[1, 2]")) == [
        StreamError(message="malformed message event: event data is not a JSON object: '[1, 2]'")
    ]
    assert _run(A, _sse("{x", event="ping")) == [
        StreamError(message="malformed ping event: malformed event JSON: '{x'")
    ]


# --- the line layer ----------------------------------------------------------------------------------


def test_max_line_chars_must_be_positive_or_none() -> None:
    """max_line_chars 0 or negative is a ValueError naming the value; 1 and None are accepted."""
    with pytest.raises(ValueError, match="max_line_chars must be >= 1 or None, got 0"):
        StreamDecoder(OA, max_line_chars=0)
    assert StreamDecoder(OA, max_line_chars=1).max_line_chars == 1
    assert StreamDecoder(OA, max_line_chars=None).max_line_chars is None
    assert StreamDecoder(OA).max_line_chars == MAX_LINE_CHARS == 8 * 1024 * 1024


def test_no_cap_decodes_a_long_line() -> None:
    """With max_line_chars=None a line longer than any small cap decodes normally."""
    decoder = StreamDecoder(OA, max_line_chars=None)
    text = "z" * 500
    events = decoder.feed((_choice({"content": text}, "stop") + _DONE).encode())
    assert events[0] == TextDelta(text=text)
    assert isinstance(events[-1], MessageStop)


def test_the_cap_error_names_the_cap_and_the_count() -> None:
    """An over-long line's StreamError names the cap and how many characters were seen."""
    decoder = StreamDecoder(OA, max_line_chars=10)
    assert decoder.feed(b"data: 0123456789\n") == [
        StreamError(message="SSE line or event longer than 10 characters (16+)")
    ]


def test_a_pending_line_exactly_at_the_cap_is_kept() -> None:
    """An unterminated line of exactly the cap is not an error; one more character is."""
    decoder = StreamDecoder(OA, max_line_chars=8)
    assert decoder.feed(b"data: xx") == []
    assert decoder.feed(b"x") == [StreamError(message="SSE line or event longer than 8 characters (9+)")]


def test_data_lines_count_one_newline_each_against_the_cap() -> None:
    """Each data line counts its length plus one (its newline) toward the event cap."""
    ok = StreamDecoder(OA, max_line_chars=10)
    assert ok.feed(b"data: 1234\ndata: 1234\n") == []  # 5 + 5 = 10
    over = StreamDecoder(OA, max_line_chars=10)
    assert over.feed(b"data: 1234\ndata: 12345\n") == [
        StreamError(message="SSE line or event longer than 10 characters (11+)")
    ]


def test_the_data_count_resets_after_each_event() -> None:
    """Data of earlier events does not count toward a later event's cap."""
    decoder = StreamDecoder(OA, max_line_chars=30)
    events = decoder.feed(b'data: {"choices":[]}\n\n' * 5)
    assert events == []
    assert not decoder.done


def test_a_split_line_is_joined_across_feeds() -> None:
    """A line cut across several feeds is decoded as one line."""
    decoder = StreamDecoder(OA)
    body = (_choice({"content": "abc"}, "stop") + _DONE).encode()
    events: list[StreamEvent] = []
    for i in range(0, len(body), 3):
        events += decoder.feed(body[i : i + 3])
    assert events == [TextDelta(text="abc"), BlockStop(), MessageStop(stop_reason=FinishReason.STOP, usage=Usage())]


def test_cr_lf_split_between_feeds_is_one_line_end() -> None:
    """'\\r' at the end of one feed and '\\n' at the start of the next end one line, not two."""
    decoder = StreamDecoder(OA)
    first = decoder.feed(b"data: [DO")
    second = decoder.feed(b"NE]\r")
    third = decoder.feed(b"\n\r\n")
    assert first == second == []
    assert third == [StreamError(message="stream incomplete: [DONE] before any finish_reason")]


def test_lone_cr_is_a_line_end() -> None:
    """Lines ended by a lone CR are decoded like LF lines."""
    body = _choice({"content": "q"}, "stop").replace("\n", "\r") + _DONE.replace("\n", "\r")
    assert _run(OA, body) == [
        TextDelta(text="q"),
        BlockStop(),
        MessageStop(stop_reason=FinishReason.STOP, usage=Usage()),
    ]


def test_a_trailing_cr_at_finish_ends_the_line() -> None:
    """A final '\\r' with nothing after it ends its line at finish()."""
    decoder = StreamDecoder(OA)
    events = decoder.feed(_choice({}, "stop").encode() + b"data: [DONE]\r") + decoder.finish_text("\r")
    assert events == [MessageStop(stop_reason=FinishReason.STOP, usage=Usage())]


def test_only_a_leading_bom_is_dropped() -> None:
    """A BOM is removed at the very start only; later it is part of the field name (an unknown field)."""
    decoder = StreamDecoder(OA)
    decoder.feed("\ufeffid: 1\n".encode())
    assert decoder.last_event_id == "1"
    decoder.feed("\ufeffid: 2\n".encode())
    assert decoder.last_event_id == "1"


def test_empty_first_feed_does_not_consume_the_bom_check() -> None:
    """An empty first chunk leaves the BOM rule for the first non-empty one."""
    decoder = StreamDecoder(OA)
    assert decoder.feed_text("") == []
    decoder.feed_text("\ufeffid: 3\n")
    assert decoder.last_event_id == "3"


def test_id_with_nul_and_non_digit_retry_are_ignored() -> None:
    """An id containing NUL is ignored; retry is set only from ASCII digits; 'id' without space works."""
    decoder = StreamDecoder(OA)
    decoder.feed_text("id:5\nretry: 200\nid: a\0b\nretry: 1x\nretry: \u0661\u0662\n")
    assert decoder.last_event_id == "5"
    assert decoder.retry_ms == 200


def test_only_one_leading_space_is_removed_from_a_value() -> None:
    """'data:  x' keeps the second space: only one leading space is stripped."""
    decoder = StreamDecoder(OA)
    decoder.feed_text("id:  7\n")
    assert decoder.last_event_id == " 7"


def test_whitespace_only_data_is_a_keep_alive() -> None:
    """An event whose data is only whitespace is dropped without an error."""
    assert _run(OA, "data:   \n\n", _choice({}, "stop"), _DONE) == [
        MessageStop(stop_reason=FinishReason.STOP, usage=Usage())
    ]


def test_the_done_property_follows_the_terminal_event() -> None:
    """done is False until a terminal event and True after one."""
    decoder = StreamDecoder(OA)
    assert decoder.done is False
    decoder.feed(_DONE.encode())
    assert decoder.done is True


def test_finish_after_a_clean_end_adds_nothing_and_initial_state_is_empty() -> None:
    """A fresh decoder has no id and no retry; finish() on it is one incomplete error."""
    decoder = StreamDecoder(A)
    assert decoder.last_event_id == ""
    assert decoder.retry_ms is None
    assert decoder.protocol is A
    assert decoder.finish() == [_INCOMPLETE]
    assert decoder.finish() == []


def test_lines_after_the_terminal_event_in_the_same_feed_are_not_read() -> None:
    """Fields after a terminal event in the same chunk do not change the decoder."""
    decoder = StreamDecoder(OA)
    decoder.feed((_DONE + "id: 9\nretry: 5\n").encode())
    assert decoder.last_event_id == ""
    assert decoder.retry_ms is None


def test_an_over_long_event_clears_its_data() -> None:
    """After the cap error, the decoder is done and reports nothing more, even at finish."""
    decoder = StreamDecoder(OA, max_line_chars=5)
    assert len(decoder.feed(b"data: 123456\n")) == 1
    assert decoder.finish() == []


# --- fold ------------------------------------------------------------------------------------------


def test_fold_rejects_a_stream_error_with_its_message() -> None:
    """fold_events of a failed stream raises InvalidResponse quoting the StreamError."""
    with pytest.raises(InvalidResponse, match="stream failed: boom"):
        fold_events([StreamError(message="boom")], provider=ProviderKind.OPENAI, model="m")


def test_fold_rejects_an_event_after_message_stop() -> None:
    """Any event after MessageStop makes fold_events raise."""
    stop = MessageStop(stop_reason=FinishReason.STOP, usage=Usage())
    with pytest.raises(InvalidResponse, match="event after MessageStop"):
        fold_events([stop, TextDelta(text="x")], provider=ProviderKind.OPENAI, model="m")


def test_fold_rejects_a_delta_for_an_unknown_tool() -> None:
    """A ToolUseDelta with no ToolUseStart before it makes fold_events raise, naming the id."""
    stop = MessageStop(stop_reason=FinishReason.STOP, usage=Usage())
    with pytest.raises(InvalidResponse, match="tool delta for unknown call 'zz'"):
        fold_events([ToolUseDelta(id="zz", partial_json="{}"), stop], provider=ProviderKind.OPENAI, model="m")


def test_fold_without_message_stop_is_incomplete() -> None:
    """A stream with no MessageStop folds to InvalidResponse 'stream incomplete'."""
    with pytest.raises(InvalidResponse, match="stream incomplete: no MessageStop"):
        fold_events([TextDelta(text="x")], provider=ProviderKind.OPENAI, model="m")


def test_fold_rejects_tool_arguments_that_are_not_an_object() -> None:
    """A folded tool call whose arguments are a JSON array is InvalidResponse naming the tool."""
    events: list[StreamEvent] = [ToolUseStart(id="t", name="f"), ToolUseDelta(id="t", partial_json="[1]"),
              MessageStop(stop_reason=FinishReason.TOOL_CALLS, usage=Usage())]  # fmt: skip
    with pytest.raises(InvalidResponse, match="tool call 't' arguments are not a JSON object"):
        fold_events(events, provider=ProviderKind.OPENAI, model="m")


def test_fold_builds_the_whole_response() -> None:
    """fold_events joins text, compacts tool arguments, and keeps provider, model, id, finish and usage."""
    usage = Usage(prompt_tokens=2, completion_tokens=3)
    events: list[StreamEvent] = [TextDelta(text="a"), TextDelta(text="b"), BlockStop(), ToolUseStart(id="t", name="f"),
              ToolUseDelta(id="t", partial_json='{"k": '), ToolUseDelta(id="t", partial_json="1}"),
              MessageStop(stop_reason=FinishReason.TOOL_CALLS, usage=usage)]  # fmt: skip
    response = fold_events(events, provider=ProviderKind.ANTHROPIC, model="m1", response_id="r1")
    assert response.provider is ProviderKind.ANTHROPIC
    assert response.model == "m1"
    assert response.choices[0].content == "ab"
    assert response.id == "r1"
    assert response.finish_reason is FinishReason.TOOL_CALLS
    assert response.usage == usage
    assert [(c.id, c.name, c.arguments_json) for c in response.choices[0].tool_calls] == [("t", "f", '{"k":1}')]
    assert fold_events(events, provider=ProviderKind.ANTHROPIC, model="m1").id == ""


_TOOL = {"type": "tool_use", "id": "t", "name": "f", "input": {}}


@pytest.mark.parametrize(
    ("parts", "message"),
    [
        ([_sse({"type": "message_start", "message": 5})], "message_start.message has the wrong type: 5"),
        ([_sse({"type": "message_start", "message": {"usage": 5}})], "message.usage has the wrong type: 5"),
        ([_sse({"type": "content_block_start", "index": "x"})], "content_block_start.index has the wrong type: 'x'"),
        (
            [_sse({"type": "content_block_start", "index": 0, "content_block": 5})],
            "content_block_start.content_block has the wrong type: 5",
        ),
        ([_block(0, {"type": "text", "text": 5})], "content_block.text has the wrong type: 5"),
        ([_block(0, {"type": "tool_use", "id": 5, "name": "f"})], "content_block.id has the wrong type: 5"),
        ([_block(0, {"type": "tool_use", "id": "t", "name": 5})], "content_block.name has the wrong type: 5"),
        (
            [_block(0, _TOOL), _sse({"type": "content_block_delta", "index": 0, "delta": 5})],
            "content_block_delta.delta has the wrong type: 5",
        ),
        (
            [_block(0, {"type": "text", "text": ""}), _delta(0, {"type": "text_delta", "text": 5})],
            "delta.text has the wrong type: 5",
        ),
        (
            [_block(0, _TOOL), _delta(0, {"type": "input_json_delta", "partial_json": 5})],
            "delta.partial_json has the wrong type: 5",
        ),
        ([_sse({"type": "message_delta", "delta": 5})], "message_delta.delta has the wrong type: 5"),
        ([_sse({"type": "message_delta", "delta": {}, "usage": 5})], "message_delta.usage has the wrong type: 5"),
    ],
)
def test_anthropic_wrongly_typed_fields_name_their_path(parts: list[str], message: str) -> None:
    """Each wrongly typed Anthropic field is a StreamError naming its path (event.field) and value."""
    events = _run(A, *parts)
    assert events[-1] == StreamError(message=f"malformed message event: {message}")


def test_openai_a_tool_name_of_the_wrong_type_names_its_path() -> None:
    """A tool call whose function name is not a string names tool_calls[].function.name."""
    call = {"tool_calls": [{"index": 0, "id": "c", "function": {"name": 5}}]}
    assert _run(OA, _choice(call)) == [
        StreamError(message="malformed message event: tool_calls[].function.name has the wrong type: 5")
    ]


def test_openai_content_and_refusal_in_one_delta_are_both_streamed() -> None:
    """A delta carrying content and refusal streams both texts in order in one block."""
    events = _run(OA, _choice({"content": "a", "refusal": "b"}, "stop"), _DONE)
    assert events == [
        TextDelta(text="a"),
        TextDelta(text="b", refusal=True),
        BlockStop(),
        MessageStop(stop_reason=FinishReason.CONTENT_FILTER, usage=Usage()),
    ]


def test_openai_text_and_a_tool_call_in_one_delta_keep_both() -> None:
    """A delta carrying text and a new tool call emits the text, a BlockStop, then the tool start."""
    delta = {"content": "a", "tool_calls": [{"index": 0, "id": "c", "function": {"name": "f"}}]}
    events = _run(OA, _choice(delta))
    assert events[:3] == [TextDelta(text="a"), BlockStop(), ToolUseStart(id="c", name="f")]


def test_openai_text_after_a_finish_opens_a_new_block_without_a_stray_block_stop() -> None:
    """finish_reason closes the open block; text that still follows opens a new one with no extra BlockStop."""
    events = _run(OA, _choice({"content": "a"}, "stop"), _choice({"content": "b"}, "stop"), _DONE)
    assert events == [
        TextDelta(text="a"),
        BlockStop(),
        TextDelta(text="b"),
        BlockStop(),
        MessageStop(stop_reason=FinishReason.STOP, usage=Usage()),
    ]


def test_a_bad_openai_usage_names_openai_in_the_stream_error() -> None:
    """An invalid usage count in an OpenAI chunk is a StreamError naming the provider and the field."""
    bad = _sse({"choices": [], "usage": {"prompt_tokens": -1, "completion_tokens": 0}})
    assert _run(OA, bad) == [
        StreamError(
            message="malformed message event: invalid response: openai: "
            "usage.prompt_tokens must be a non-negative integer, got -1"
        )
    ]


def test_two_choice_zero_entries_in_one_chunk_both_stream() -> None:
    """Two entries for choice 0 in one chunk are both streamed, in order."""
    chunk = _sse({"choices": [{"index": 0, "delta": {"content": "a"}}, {"index": 0, "delta": {"content": "b"}}]})
    assert _run(OA, chunk)[:2] == [TextDelta(text="a"), TextDelta(text="b")]


def test_bad_event_json_is_quoted_up_to_80_characters() -> None:
    """A malformed or non-object event's data is quoted in the StreamError, cut at 80 characters."""
    long_bad = "{" + "z" * 100
    assert _run(OA, _sse(long_bad)) == [
        StreamError(message=f"malformed message event: malformed event JSON: {long_bad[:80]!r}")
    ]
    long_array = "[" + "1," * 60 + "1]"
    assert _run(OA, _sse(long_array)) == [
        StreamError(message=f"malformed message event: event data is not a JSON object: {long_array[:80]!r}")
    ]


def test_a_body_cut_inside_a_utf8_character_counts_its_replacement_at_finish() -> None:
    """At finish an unfinished UTF-8 character becomes one U+FFFD, which counts against the line cap."""
    decoder = StreamDecoder(OA, max_line_chars=10)
    assert decoder.feed(b"data: 1234") == []
    assert decoder.feed(b"\xe2") == []
    assert decoder.finish() == [StreamError(message="SSE line or event longer than 10 characters (11+)")]


def test_cr_then_lf_across_feeds_does_not_split_a_multi_line_event() -> None:
    """A CR ending one feed and the LF starting the next are one line end inside a multi-line event."""
    decoder = StreamDecoder(OA)
    first = decoder.feed(b'data: {"choices": [{"index": 0, "delta":\r')
    second = decoder.feed(b'\ndata: {"content": "hi"}, "finish_reason": "stop"}]}\n\n')
    assert first == []
    assert second == [TextDelta(text="hi"), BlockStop()]


def test_the_line_count_starts_again_after_a_line_joined_from_several_feeds() -> None:
    """After a line that spanned feeds has ended, the next line's length is counted from zero."""
    decoder = StreamDecoder(OA, max_line_chars=8)
    assert decoder.feed(b"id: 1") == []
    assert decoder.feed(b"\n") == []
    assert decoder.feed(b"data: xx") == []
    assert not decoder.done


def test_data_lines_of_one_event_add_up_against_the_cap() -> None:
    """Three short data lines (4 counted characters each) pass a cap of 10 on the third, naming 12."""
    decoder = StreamDecoder(OA, max_line_chars=10)
    assert decoder.feed(b"data: 123\ndata: 123\n") == []
    assert decoder.feed(b"data: 123\n") == [StreamError(message="SSE line or event longer than 10 characters (12+)")]


def test_the_event_data_count_restarts_after_a_keep_alive() -> None:
    """The data count restarts at zero after every dispatch, a keep-alive's included."""
    decoder = StreamDecoder(OA, max_line_chars=10)
    assert decoder.feed(b"data: \n\ndata:1234\ndata:1234\n") == []
    assert not decoder.done


def test_an_event_of_empty_data_lines_is_a_keep_alive() -> None:
    """Several empty data lines make an empty event: nothing is emitted and the stream goes on."""
    decoder = StreamDecoder(OA)
    assert decoder.feed(b"data\ndata\n\n") == []
    assert not decoder.done


def test_fold_errors_name_the_provider() -> None:
    """Every InvalidResponse from fold_events names the provider it was folding for."""
    stop = MessageStop(stop_reason=FinishReason.STOP, usage=Usage())
    bad_streams: list[list[StreamEvent]] = [
        [StreamError(message="x")],
        [stop, TextDelta(text="x")],
        [ToolUseDelta(id="q", partial_json="{}"), stop],
        [TextDelta(text="x")],
        [ToolUseStart(id="t", name="f"), ToolUseDelta(id="t", partial_json="[1]"), stop],
    ]
    for events in bad_streams:
        with pytest.raises(InvalidResponse) as caught:
            fold_events(events, provider=ProviderKind.BEDROCK, model="m")
        assert caught.value.provider is ProviderKind.BEDROCK


def test_a_bad_anthropic_usage_names_anthropic_at_message_stop() -> None:
    """An invalid usage count surfaces at message_stop as a StreamError naming Anthropic and the field."""
    events = _run(A, _start({"input_tokens": -1, "output_tokens": 1}), _END)
    assert events == [
        StreamError(
            message="malformed message event: invalid response: anthropic: "
            "usage.input_tokens must be a non-negative integer, got -1"
        )
    ]


def test_well_formed_allows_one_terminal_event_only_at_the_end() -> None:
    """The decoder's postcondition: no terminal event, or exactly one, as the last event."""
    stop = MessageStop(stop_reason=FinishReason.STOP, usage=Usage())
    assert _well_formed([])
    assert _well_formed([TextDelta(text="a")])
    assert _well_formed([TextDelta(text="a"), stop])
    assert _well_formed([StreamError(message="x")])
    assert not _well_formed([stop, TextDelta(text="a")])
    assert not _well_formed([stop, StreamError(message="x")])
