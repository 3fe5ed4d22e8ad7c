"""Decoding a Bedrock ConverseStream body (``application/vnd.amazon.eventstream``) into stream events.

A helper of :mod:`routeproof.providers.bedrock`, not a provider. Sans-I/O like ``core.formats.sse``: bytes in,
events out; it lives outside ``core/`` only because the binary framing is botocore's
``EventStreamBuffer`` (prelude and message CRC-32 checks included). Each framed message maps by its
``:message-type`` and ``:event-type`` headers:

==============================================  ===============================================
message                                         events
==============================================  ===============================================
``messageStart``                                none
``contentBlockStart`` ``start.toolUse``         ``ToolUseStart(id=toolUseId, name)``
``contentBlockDelta`` ``delta.text``            ``TextDelta``
``contentBlockDelta`` ``delta.toolUse.input``   ``ToolUseDelta``
``contentBlockDelta``                           ``ThinkingDelta`` (its text, its signature, or a
``delta.reasoningContent``                      redacted block's ``redactedContent``, byte-exact)
``contentBlockStop``                            ``BlockStop`` (a ``StreamError`` when the tool's
                                                accumulated input is not a JSON object)
``messageStop`` ``stopReason``                  none yet: remembered
``metadata`` ``usage``                          ``MessageStop(stop_reason, usage)`` (comes after
                                                ``messageStop``)
``:message-type`` ``exception`` / ``error``     ``StreamError("provider error: ...")``
a bad checksum or frame, a payload of the       ``StreamError("malformed ...")``
wrong shape
the end of the body before ``metadata``         ``StreamError("stream incomplete: ...")``
==============================================  ===============================================

Other event types and delta kinds (citations) are ignored. After a ``MessageStop`` or
``StreamError`` nothing more is emitted.
"""

from __future__ import annotations

import contextlib
import json
import struct
from dataclasses import dataclass, field
from typing import Any

# botocore (the ``bedrock`` extra) ships no type information; the buffer (and its error root) is all
# we use of it here. Only a BedrockProvider makes a decoder, and it refuses to be built without it.
with contextlib.suppress(ModuleNotFoundError):
    from botocore.eventstream import EventStreamBuffer, ParserError  # type: ignore[import-untyped]

from routeproof.core.formats.normalize import FieldReader
from routeproof.core.formats.sse_dialects import INCOMPLETE, BlockKind
from routeproof.core.formats.wire import BEDROCK_STOP_TO_FINISH, as_json_object
from routeproof.core.types import (
    BlockStop,
    FinishReason,
    MessageStop,
    ProviderKind,
    StreamError,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolUseDelta,
    ToolUseStart,
    Usage,
)
from routeproof.errors import InvalidResponse

__all__ = ["ConverseStreamDecoder"]


class _Bad(Exception):
    """Internal: a payload does not have the documented shape (becomes a StreamError)."""


@dataclass(slots=True)
class _State:
    blocks: dict[int, tuple[BlockKind, str, list[str]]] = field(default_factory=dict)  # index -> (kind, id, input)
    stop_reason: str | None = None


def _obj(value: object, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _Bad(f"{where} must be an object, got {value!r:.80}")
    return value


def _str(value: object, where: str) -> str:
    if not isinstance(value, str):
        raise _Bad(f"{where} must be a string, got {value!r:.80}")
    return value


def _index(payload: dict[str, Any], where: str) -> int:
    value = payload.get("contentBlockIndex")
    if not isinstance(value, int) or isinstance(value, bool):
        raise _Bad(f"{where}.contentBlockIndex must be an integer, got {value!r:.80}")
    return value


def _usage(raw: object) -> Usage:
    read = FieldReader(ProviderKind.BEDROCK)
    usage = read.obj(raw, "metadata.usage")
    return Usage(
        prompt_tokens=read.count(usage.get("inputTokens"), "usage.inputTokens"),
        completion_tokens=read.count(usage.get("outputTokens"), "usage.outputTokens"),
        cached_input_tokens=read.count(usage.get("cacheReadInputTokens"), "usage.cacheReadInputTokens", optional=True),
        cache_creation_tokens=read.count(
            usage.get("cacheWriteInputTokens"), "usage.cacheWriteInputTokens", optional=True
        ),
    )


def _block_start(state: _State, payload: dict[str, Any]) -> list[StreamEvent]:
    index = _index(payload, "contentBlockStart")
    start = _obj(payload.get("start"), "contentBlockStart.start")
    if "toolUse" not in start:
        state.blocks[index] = (BlockKind.IGNORED, "", [])
        return []
    tool = _obj(start["toolUse"], "contentBlockStart.start.toolUse")
    tool_id = _str(tool.get("toolUseId"), "start.toolUse.toolUseId")
    state.blocks[index] = (BlockKind.TOOL, tool_id, [])
    return [ToolUseStart(id=tool_id, name=_str(tool.get("name"), "start.toolUse.name"))]


def _block_delta(state: _State, payload: dict[str, Any]) -> list[StreamEvent]:
    index = _index(payload, "contentBlockDelta")
    delta = _obj(payload.get("delta"), "contentBlockDelta.delta")
    if "text" in delta:
        kind, _, _ = state.blocks.setdefault(index, (BlockKind.TEXT, "", []))  # text blocks have no start event
        if kind is not BlockKind.TEXT:
            raise _Bad(f"a text delta for {kind.value} block {index}")
        text = _str(delta["text"], "delta.text")
        return [TextDelta(text=text)] if text else []
    if "toolUse" in delta:
        if index not in state.blocks:
            raise _Bad(f"a toolUse delta for unknown block {index}")
        kind, tool_id, parts = state.blocks[index]
        if kind is not BlockKind.TOOL:
            raise _Bad(f"a toolUse delta for {kind.value} block {index}")
        piece = _str(_obj(delta["toolUse"], "delta.toolUse").get("input"), "delta.toolUse.input")
        parts.append(piece)
        return [ToolUseDelta(id=tool_id, partial_json=piece)] if piece else []
    if "reasoningContent" in delta:
        kind, _, _ = state.blocks.get(index, (BlockKind.IGNORED, "", []))
        if kind is BlockKind.IGNORED:  # no start event either (or one of a kind this decoder does not know)
            kind = BlockKind.THINKING
            state.blocks[index] = (kind, "", [])
        if kind is not BlockKind.THINKING:
            raise _Bad(f"a reasoningContent delta for {kind.value} block {index}")
        return [_thinking(_obj(delta["reasoningContent"], "delta.reasoningContent"))]
    return []  # citations: no place in a Choice


def _thinking(reasoning: dict[str, Any]) -> ThinkingDelta:
    """A ``reasoningContent`` delta: a piece of text, the signature, or a redacted block (base64, kept as sent)."""
    if "text" in reasoning:
        return ThinkingDelta(thinking=_str(reasoning["text"], "delta.reasoningContent.text"))
    if "signature" in reasoning:
        return ThinkingDelta(signature=_str(reasoning["signature"], "delta.reasoningContent.signature"))
    if "redactedContent" in reasoning:
        return ThinkingDelta(redacted_data=_str(reasoning["redactedContent"], "delta.reasoningContent.redactedContent"))
    raise _Bad(f"delta.reasoningContent has none of text, signature, redactedContent: {sorted(reasoning)!r}")


def _block_stop(state: _State, payload: dict[str, Any]) -> list[StreamEvent]:
    index = _index(payload, "contentBlockStop")
    kind, tool_id, parts = state.blocks.pop(index, (BlockKind.IGNORED, "", []))
    if kind is BlockKind.TOOL and as_json_object("".join(parts) or "{}") is None:
        return [StreamError(message=f"tool call {tool_id!r} input is not a JSON object")]
    return [] if kind is BlockKind.IGNORED else [BlockStop()]


def _event(state: _State, event_type: str, payload: dict[str, Any]) -> list[StreamEvent]:
    if event_type == "contentBlockStart":
        return _block_start(state, payload)
    if event_type == "contentBlockDelta":
        return _block_delta(state, payload)
    if event_type == "contentBlockStop":
        return _block_stop(state, payload)
    if event_type == "messageStop":
        state.stop_reason = _str(payload.get("stopReason"), "messageStop.stopReason")
        return []
    if event_type == "metadata":
        if state.stop_reason is None:
            return [StreamError(message="metadata before messageStop: no stop reason")]
        stop = BEDROCK_STOP_TO_FINISH.get(state.stop_reason, FinishReason.OTHER)
        return [MessageStop(stop_reason=stop, usage=_usage(payload.get("usage")))]
    return []  # messageStart and event types added later


def _payload(raw: bytes, where: str) -> dict[str, Any]:
    try:
        data = json.loads(raw) if raw else {}
    except (ValueError, RecursionError) as exc:
        raise _Bad(f"{where} payload is not JSON: {raw[:80]!r}") from exc
    return _obj(data, f"{where} payload")


def _message(state: _State, headers: dict[str, Any], raw: bytes) -> list[StreamEvent]:
    message_type = headers.get(":message-type")
    if message_type == "exception":
        name = headers.get(":exception-type", "exception")
        try:
            detail = _payload(raw, str(name)).get("message", "")
        except _Bad:
            detail = raw[:200].decode("utf-8", errors="replace")
        return [StreamError(message=f"provider error: {name}: {detail}")]
    if message_type == "error":
        return [StreamError(message=f"provider error: {headers.get(':error-code')}: {headers.get(':error-message')}")]
    if message_type != "event":
        raise _Bad(f"unknown :message-type {message_type!r}")
    event_type = str(headers.get(":event-type", ""))
    return _event(state, event_type, _payload(raw, event_type))


class ConverseStreamDecoder:
    """One ConverseStream body's decoder: ``feed`` bytes as they arrive, ``finish`` at the end. No I/O."""

    __slots__ = ("_buffer", "_done", "_state")

    def __init__(self) -> None:
        self._buffer = EventStreamBuffer()
        self._state = _State()
        self._done = False

    @property
    def done(self) -> bool:
        """Whether a MessageStop or StreamError has been emitted."""
        return self._done

    def feed(self, chunk: bytes) -> list[StreamEvent]:
        """The events completed by ``chunk``."""
        if self._done:
            return []
        self._buffer.add_data(chunk)
        events: list[StreamEvent] = []
        try:
            for message in self._buffer:
                where = str(message.headers.get(":event-type") or message.headers.get(":message-type"))
                try:
                    events += _message(self._state, message.headers, message.payload)
                except (_Bad, InvalidResponse) as exc:
                    events.append(StreamError(message=f"malformed {where} event: {exc}"))
                if events and isinstance(events[-1], MessageStop | StreamError):
                    break
        except (ParserError, ValueError, struct.error) as exc:  # bad CRC, lengths or headers
            events.append(StreamError(message=f"malformed event-stream frame: {type(exc).__name__}: {exc}"))
        if events and isinstance(events[-1], MessageStop | StreamError):
            self._done = True
        return events

    def finish(self) -> list[StreamEvent]:
        """The end of the body: a StreamError("stream incomplete...") unless the usage was seen."""
        if self._done:
            return []
        self._done = True
        return [StreamError(message=f"{INCOMPLETE}: the body ended before the metadata event")]
