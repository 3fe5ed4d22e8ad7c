"""Incremental, sans-I/O decoding of provider SSE streams into :data:`StreamEvent` values.

Bytes go in, split anywhere (inside a UTF-8 character, between ``\\r`` and ``\\n``); events come
out. Layer 1 follows the WHATWG event-stream rules (BOM, CR/LF/CRLF line ends, comments, multi-line
``data``, a field with no colon, ``id`` and ``retry``; an unterminated last event is discarded).
Layer 2 maps each dispatched event per protocol with small module functions over a per-stream state.

Guarantees: a stream that ends without its terminator (Anthropic ``message_stop``, OpenAI
``[DONE]``) ends in a ``StreamError`` whose message starts with ``"stream incomplete"``, never in a
``MessageStop``; a tool call whose accumulated arguments are not a JSON object is a ``StreamError``;
malformed event JSON is a ``StreamError``, not an exception; after a ``StreamError`` or
``MessageStop`` nothing more is emitted.
"""

from __future__ import annotations

import codecs
import enum
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import icontract

from routeproof.core.errors import InvalidResponse
from routeproof.core.normalize import FieldReader, anthropic_usage, assemble_response, openai_usage
from routeproof.core.types import (
    BlockStop,
    FinishReason,
    MessageStop,
    ProviderKind,
    ProviderResponse,
    StreamError,
    StreamEvent,
    TextDelta,
    ToolCall,
    ToolUseDelta,
    ToolUseStart,
    Usage,
)
from routeproof.core.wire import as_json_object, compact_json, deterministic_tool_id, finish_reason_for

__all__ = ["MAX_LINE_CHARS", "StreamDecoder", "WireProtocol", "fold_events"]

_EOL = re.compile(r"\r\n|\r|\n")
INCOMPLETE = "stream incomplete"
MAX_LINE_CHARS = 8 * 1024 * 1024
"""The default cap on one SSE line and on one event's data (characters): a stream over it is a StreamError."""


class WireProtocol(enum.Enum):
    """The two streaming dialects routeproof decodes."""

    ANTHROPIC = "anthropic"
    OPENAI = "openai"


class _Bad(Exception):
    """Internal: the current event does not have the documented shape (becomes a StreamError)."""


def _get(payload: dict[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    value = payload.get(key)
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
        raise _Bad(f"{where}.{key} has the wrong type: {value!r:.80}")
    return value


def _tool_args_complete(parts: list[str]) -> bool:
    return as_json_object("".join(parts) or "{}") is not None


# --- Anthropic ------------------------------------------------------------------------------------


@dataclass(slots=True)
class _AnthropicState:
    blocks: dict[int, tuple[str, str, list[str]]] = field(default_factory=dict)  # index -> (kind, id, json)
    usage: dict[str, Any] = field(default_factory=dict)
    stop_reason: str | None = None


def _merge_usage(into: dict[str, Any], usage: dict[str, Any]) -> None:
    """Later usage counts replace earlier ones, but a ``null`` count never erases a known one
    (``message_delta`` may repeat ``cache_read_input_tokens: null`` after ``message_start`` gave it)."""
    into.update((key, value) for key, value in usage.items() if value is not None)


def _anthropic_event(state: _AnthropicState, payload: dict[str, Any]) -> list[StreamEvent]:
    kind = payload.get("type")
    if kind == "error":
        error = payload.get("error")
        detail = error if not isinstance(error, dict) else f"{error.get('type')}: {error.get('message')}"
        return [StreamError(message=f"provider error: {detail}")]
    if kind == "message_start":
        usage = _get(_get(payload, "message", dict, "message_start"), "usage", dict, "message")
        _merge_usage(state.usage, usage)
        return []
    if kind == "content_block_start":
        index = _get(payload, "index", int, kind)
        block = _get(payload, "content_block", dict, kind)
        if block.get("type") == "text":
            state.blocks[index] = ("text", "", [])
            text = _get(block, "text", str, "content_block")
            return [TextDelta(text=text)] if text else []
        if block.get("type") == "tool_use":
            tool_id, name = _get(block, "id", str, "content_block"), _get(block, "name", str, "content_block")
            initial = block.get("input") or {}
            parts = [compact_json(initial)] if initial else []
            state.blocks[index] = ("tool", tool_id, parts)
            start: list[StreamEvent] = [ToolUseStart(id=tool_id, name=name)]
            return start + [ToolUseDelta(id=tool_id, partial_json=p) for p in parts]
        state.blocks[index] = ("ignored", "", [])  # thinking, server tools: no place in a Choice
        return []
    if kind in ("content_block_delta", "content_block_stop"):
        index = _get(payload, "index", int, kind)
        if index not in state.blocks:
            raise _Bad(f"{kind} for unknown block index {index}")
        block_kind, tool_id, parts = state.blocks[index]
        if kind == "content_block_stop":
            if block_kind == "tool" and not _tool_args_complete(parts):
                return [StreamError(message=f"tool call {tool_id!r} arguments are not a JSON object")]
            return [] if block_kind == "ignored" else [BlockStop()]
        delta = _get(payload, "delta", dict, kind)
        if block_kind == "text" and delta.get("type") == "text_delta":
            return [TextDelta(text=_get(delta, "text", str, "delta"))]
        if block_kind == "text" and delta.get("type") == "citations_delta":
            return []  # a citation of the text already streamed: the non-streamed body keeps it apart too
        if block_kind == "tool" and delta.get("type") == "input_json_delta":
            piece = _get(delta, "partial_json", str, "delta")
            parts.append(piece)
            return [ToolUseDelta(id=tool_id, partial_json=piece)]
        if block_kind == "ignored":
            return []
        raise _Bad(f"delta {delta.get('type')!r} does not fit a {block_kind} block")
    if kind == "message_delta":
        delta = _get(payload, "delta", dict, kind)
        if delta.get("stop_reason") is not None:
            state.stop_reason = _get(delta, "stop_reason", str, "delta")
        if payload.get("usage") is not None:
            _merge_usage(state.usage, _get(payload, "usage", dict, kind))
        return []
    if kind == "message_stop":
        if state.stop_reason is None:
            return [StreamError(message="message_stop without a stop_reason")]
        usage = anthropic_usage(state.usage, FieldReader(ProviderKind.ANTHROPIC))
        return [MessageStop(stop_reason=finish_reason_for(state.stop_reason), usage=usage)]
    return []  # ping and event types added later: Anthropic asks clients to ignore them


# --- OpenAI --------------------------------------------------------------------------------------------


@dataclass(slots=True)
class _OpenAIState:
    tools: dict[int, tuple[str, list[str]]] = field(default_factory=dict)  # tool index -> (id, arguments)
    open_block: tuple[str, int] | None = None  # ("text", 0) or ("tool", index)
    finish: FinishReason | None = None
    refusal: bool = False
    usage: Usage | None = None


def _switch_block(state: _OpenAIState, block: tuple[str, int]) -> list[StreamEvent]:
    if state.open_block == block:
        return []
    closing: list[StreamEvent] = [BlockStop()] if state.open_block is not None else []
    state.open_block = block
    return closing


def _openai_choice(state: _OpenAIState, choice: dict[str, Any]) -> list[StreamEvent]:
    if choice.get("index", 0) != 0:
        raise _Bad(f"choice index {choice.get('index')!r}: routeproof streams one choice")
    events: list[StreamEvent] = []
    delta = choice.get("delta") or {}
    if not isinstance(delta, dict):
        raise _Bad("choices[0].delta must be an object")
    for key in ("content", "refusal"):
        text = delta.get(key)
        if text is not None and not isinstance(text, str):
            raise _Bad(f"delta.{key} must be a string")
        if text:
            state.refusal = state.refusal or key == "refusal"
            events += _switch_block(state, ("text", 0))
            events.append(TextDelta(text=text))
    calls = delta.get("tool_calls") or []
    if not isinstance(calls, list):
        raise _Bad("delta.tool_calls must be an array")
    for raw in calls:
        call = raw if isinstance(raw, dict) else {}
        index = _get(call, "index", int, "tool_calls[]")
        function = call.get("function") or {}
        if not isinstance(function, dict):
            raise _Bad("tool_calls[].function must be an object")
        if index not in state.tools:
            tool_id = call.get("id") or deterministic_tool_id("openai", 0, index)
            if not isinstance(tool_id, str):
                raise _Bad("tool_calls[].id must be a string")
            state.tools[index] = (tool_id, [])
            events += _switch_block(state, ("tool", index))
            events.append(ToolUseStart(id=tool_id, name=_get(function, "name", str, "tool_calls[].function")))
        tool_id, parts = state.tools[index]
        piece = function.get("arguments")
        if piece is not None and not isinstance(piece, str):
            raise _Bad("tool_calls[].function.arguments must be a string")
        if piece:
            parts.append(piece)
            events.append(ToolUseDelta(id=tool_id, partial_json=piece))
    finish = choice.get("finish_reason")
    if finish is not None:
        if not isinstance(finish, str):
            raise _Bad("finish_reason must be a string")
        if state.open_block is not None:
            events.append(BlockStop())
            state.open_block = None
        for tool_id, parts in state.tools.values():
            if not _tool_args_complete(parts):
                return [*events, StreamError(message=f"tool call {tool_id!r} arguments are not a JSON object")]
        state.finish = FinishReason.CONTENT_FILTER if state.refusal else finish_reason_for(finish)
    return events


def _openai_event(state: _OpenAIState, data: str) -> list[StreamEvent]:
    if data.strip() == "[DONE]":
        if state.finish is None:
            return [StreamError(message=f"{INCOMPLETE}: [DONE] before any finish_reason")]
        return [MessageStop(stop_reason=state.finish, usage=state.usage or Usage())]
    payload = _json_object(data)
    if "error" in payload:
        error = payload["error"]
        detail = error.get("message") if isinstance(error, dict) else error
        return [StreamError(message=f"provider error: {detail}")]
    if payload.get("usage") is not None:
        state.usage = openai_usage(payload["usage"], FieldReader(ProviderKind.OPENAI))
    events: list[StreamEvent] = []
    choices = payload.get("choices") or []
    if not isinstance(choices, list):
        raise _Bad("choices must be an array")
    for choice in choices:
        if not isinstance(choice, dict):
            raise _Bad("choices[] must be an object")
        events += _openai_choice(state, choice)
    return events


def _json_object(data: str) -> dict[str, Any]:
    try:
        payload = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise _Bad(f"malformed event JSON: {data[:80]!r}") from exc
    if not isinstance(payload, dict):
        raise _Bad(f"event data is not a JSON object: {data[:80]!r}")
    return payload


# --- the decoder ---------------------------------------------------------------------------------------


def _well_formed(result: list[StreamEvent]) -> bool:
    """At most one terminal event (MessageStop or StreamError), and only as the last one."""
    terminal = [i for i, e in enumerate(result) if isinstance(e, MessageStop | StreamError)]
    return not terminal or terminal == [len(result) - 1]


class StreamDecoder:
    """One stream's decoder: ``feed`` bytes as they arrive, ``finish`` at end of body. No I/O, no clock."""

    def __init__(self, protocol: WireProtocol, *, max_line_chars: int | None = MAX_LINE_CHARS) -> None:
        self.protocol = protocol
        self.last_event_id = ""
        self.retry_ms: int | None = None
        if max_line_chars is not None and max_line_chars < 1:
            raise ValueError(f"max_line_chars must be >= 1 or None, got {max_line_chars!r}")
        self.max_line_chars = max_line_chars
        self._utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pending: list[str] = []  # the pieces of the line not yet ended, joined once at its end
        self._pending_chars = 0
        self._data_chars = 0
        self._carry_cr = False  # the last text ended in "\r", which may be the first half of "\r\n"
        self._started = False
        self._event_type = ""
        self._data: list[str] = []
        self._done = False
        self._anthropic = _AnthropicState()
        self._openai = _OpenAIState()

    @property
    def done(self) -> bool:
        """Whether a MessageStop or StreamError has been emitted."""
        return self._done

    # The contracts sit on the text-level methods: ``feed``/``finish`` only UTF-8-decode and delegate,
    # so every call is still checked at run time, while CrossHair (whose symbolic model of the
    # incremental UTF-8 decoder raises IndexError inside its own codec code) checks the str layer.

    def feed(self, chunk: bytes) -> list[StreamEvent]:
        """The events completed by ``chunk`` (split anywhere, even inside a UTF-8 character)."""
        return self.feed_text(self._utf8.decode(chunk))

    def finish(self) -> list[StreamEvent]:
        """The end of the body: a StreamError("stream incomplete...") unless the terminator was seen."""
        return self.finish_text(self._utf8.decode(b"", final=True))

    @icontract.ensure(_well_formed)
    def feed_text(self, text: str) -> list[StreamEvent]:
        """The events completed by ``text``: the already-decoded form of :meth:`feed`.

        Use one of ``feed`` and ``feed_text`` per stream: ``feed`` may hold back the bytes of a
        split UTF-8 character that ``feed_text`` would not see.
        """
        return self._lines(text, final=False)

    @icontract.ensure(_well_formed)
    def finish_text(self, text: str = "") -> list[StreamEvent]:
        """The end of the body after its last ``text``; the already-decoded form of :meth:`finish`."""
        events = self._lines(text, final=True)
        if not self._done:
            self._done = True
            events.append(StreamError(message=f"{INCOMPLETE}: the body ended before the terminator"))
        return events

    def _lines(self, text: str, *, final: bool) -> list[StreamEvent]:
        # Linear in the stream length: only the new text is searched for line ends, and the pieces
        # of a line that spans many chunks are joined once, when it ends (never re-scanned).
        if self._done:
            return []
        if not self._started and text:
            self._started = True
            text = text.removeprefix("\ufeff")
        if self._carry_cr:
            text, self._carry_cr = "\r" + text, False
        events: list[StreamEvent] = []
        position = 0
        while not self._done:
            match = _EOL.search(text, position)
            if match is None:
                break
            if match.group() == "\r" and match.end() == len(text) and not final:
                self._carry_cr = True  # a lone trailing \r may be the first half of \r\n
                break
            events += self._ended_line(text[position : match.start()])
            position = match.end()
        if self._done:
            self._pending, self._pending_chars = [], 0
            return events
        rest = text[position : len(text) - 1 if self._carry_cr else len(text)]
        if rest:
            self._pending.append(rest)
            self._pending_chars += len(rest)
            if self.max_line_chars is not None and self._pending_chars > self.max_line_chars:
                events.append(self._too_long(self._pending_chars))
        return events

    def _too_long(self, chars: int) -> StreamError:
        self._done = True
        self._pending, self._pending_chars, self._data = [], 0, []
        return StreamError(message=f"SSE line or event longer than {self.max_line_chars} characters ({chars}+)")

    def _ended_line(self, piece: str) -> list[StreamEvent]:
        if self._pending:
            self._pending.append(piece)
            line = "".join(self._pending)
            self._pending, self._pending_chars = [], 0
        else:
            line = piece
        if self.max_line_chars is not None and len(line) > self.max_line_chars:
            return [self._too_long(len(line))]
        return self._line(line)

    def _line(self, line: str) -> list[StreamEvent]:
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return []
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            self._event_type = value
        elif name == "data":
            self._data.append(value)
            self._data_chars += len(value) + 1
            if self.max_line_chars is not None and self._data_chars > self.max_line_chars:
                return [self._too_long(self._data_chars)]
        elif name == "id" and "\0" not in value:
            self.last_event_id = value
        elif name == "retry" and value.isascii() and value.isdigit():
            self.retry_ms = int(value)
        return []

    def _dispatch(self) -> list[StreamEvent]:
        data, self._data, self._data_chars = self._data, [], 0
        event_type, self._event_type = self._event_type or "message", ""
        if not data or not "".join(data).strip():
            return []  # an event whose data is empty carries nothing (a keep-alive); WHATWG would still fire it
        try:
            events = _map_event(self.protocol, self._anthropic, self._openai, event_type, "\n".join(data))
        except (_Bad, InvalidResponse, ValueError) as exc:
            events = [StreamError(message=f"malformed {event_type} event: {exc}")]
        if events and isinstance(events[-1], MessageStop | StreamError):
            self._done = True
        return events


def _map_event(
    protocol: WireProtocol, anthropic: _AnthropicState, openai: _OpenAIState, event_type: str, data: str
) -> list[StreamEvent]:
    if protocol is WireProtocol.OPENAI:
        return _openai_event(openai, data)
    payload = _json_object(data)
    payload.setdefault("type", event_type)
    return _anthropic_event(anthropic, payload)


# --- fold ------------------------------------------------------------------------------------------------


def _fold(events: Sequence[StreamEvent], provider: ProviderKind, model: str, response_id: str) -> ProviderResponse:
    texts: list[str] = []
    tools: dict[str, tuple[str, list[str]]] = {}
    stop: MessageStop | None = None
    for event in events:
        if isinstance(event, StreamError):
            raise InvalidResponse(f"stream failed: {event.message}", provider=provider)
        if stop is not None:
            raise InvalidResponse(f"event after MessageStop: {event!r}", provider=provider)
        if isinstance(event, TextDelta):
            texts.append(event.text)
        elif isinstance(event, ToolUseStart):
            tools[event.id] = (event.name, [])
        elif isinstance(event, ToolUseDelta):
            if event.id not in tools:
                raise InvalidResponse(f"tool delta for unknown call {event.id!r}", provider=provider)
            tools[event.id][1].append(event.partial_json)
        elif isinstance(event, MessageStop):
            stop = event
    if stop is None:
        raise InvalidResponse(f"{INCOMPLETE}: no MessageStop", provider=provider)
    calls = []
    for tool_id, (name, parts) in tools.items():
        arguments = as_json_object("".join(parts) or "{}")
        if arguments is None:
            raise InvalidResponse(f"tool call {tool_id!r} arguments are not a JSON object", provider=provider)
        calls.append(ToolCall(id=tool_id, name=name, arguments_json=compact_json(arguments)))
    return assemble_response(
        provider=provider,
        model=model,
        response_id=response_id,
        text="".join(texts),
        tool_calls=tuple(calls),
        finish_reason=stop.stop_reason,
        usage=stop.usage,
    )


@icontract.ensure(lambda provider, response_id, result: result.provider is provider and result.id == response_id)
def fold_events(
    events: Sequence[StreamEvent], *, provider: ProviderKind, model: str, response_id: str = ""
) -> ProviderResponse:
    """The message a finished stream carried; InvalidResponse if it failed or never finished.

    :raises InvalidResponse: naming the field and the provider when the body is not the documented shape.
    """
    return _fold(events, provider, model, response_id)
