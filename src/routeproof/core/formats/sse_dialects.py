"""Layer 2 of SSE decoding: one dispatched event of each wire dialect -> :data:`StreamEvent` values.

:func:`map_event` turns one event (its type and its joined ``data``) into stream events, through a
small per-stream state for each dialect (:class:`AnthropicState`, :class:`OpenAIState`); an event
without the documented shape raises :class:`EventShapeError`, which the decoder in
:mod:`routeproof.core.formats.sse` (layer 1, the WHATWG event-stream rules) turns into a ``StreamError``.
Pure: no I/O, no clock. ``routeproof.core.formats.sse`` re-exports :class:`WireProtocol`.
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass, field
from typing import Any

from routeproof.core.errors import InvalidResponse
from routeproof.core.formats.normalize import FieldReader, anthropic_usage, openai_usage, with_service_tier
from routeproof.core.formats.wire import as_json_object, compact_json, deterministic_tool_id, finish_reason_for
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

__all__ = [
    "INCOMPLETE",
    "AnthropicState",
    "BlockKind",
    "EventShapeError",
    "OpenAIState",
    "WireProtocol",
    "anthropic_event",
    "map_event",
    "openai_event",
    "reported_usage",
]

INCOMPLETE = "stream incomplete"
"""How every StreamError for a stream that ended before its terminator begins."""


class WireProtocol(enum.Enum):
    """The two streaming dialects routeproof decodes."""

    ANTHROPIC = "anthropic"
    OPENAI = "openai"


class EventShapeError(Exception):
    """The current event does not have the documented shape (becomes a StreamError)."""


def _get(payload: dict[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    value = payload.get(key)
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
        raise EventShapeError(f"{where}.{key} has the wrong type: {repr(value)[:80]}")
    return value


def _tool_args_complete(parts: list[str]) -> bool:
    return as_json_object("".join(parts) or "{}") is not None


# --- Anthropic ------------------------------------------------------------------------------------


class BlockKind(enum.Enum):
    """What an open content block carries while a stream is decoded."""

    TEXT = "text"
    TOOL = "tool"
    THINKING = "thinking"  # thinking and redacted thinking: relayed as ThinkingDelta, signatures exact
    IGNORED = "ignored"  # nothing to relay
    OPAQUE = "opaque"  # a block type not modelled (server tools): relayed as OpaqueBlock pieces, as sent


@dataclass(slots=True)
class AnthropicState:
    """One Anthropic stream's open content blocks, its usage so far and its stop reason."""

    blocks: dict[int, tuple[BlockKind, str, list[str]]] = field(default_factory=dict)  # index -> (kind, id, json)
    usage: dict[str, Any] = field(default_factory=dict)
    stop_reason: str | None = None
    usage_reported: bool = False  # a message_delta carried the final (cumulative) usage


def _merge_usage(into: dict[str, Any], usage: dict[str, Any]) -> None:
    """Later usage counts replace earlier ones, but a ``null`` count never erases a known one
    (``message_delta`` may repeat ``cache_read_input_tokens: null`` after ``message_start`` gave it)."""
    into.update((key, value) for key, value in usage.items() if value is not None)


_KNOWN_DELTAS = frozenset({"text_delta", "citations_delta", "input_json_delta", "thinking_delta", "signature_delta"})
"""The delta types this code reads; one of them in a block it does not fit is a malformed stream."""


def anthropic_event(state: AnthropicState, payload: dict[str, Any]) -> list[StreamEvent]:
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
            state.blocks[index] = (BlockKind.TEXT, "", [])
            text = _get(block, "text", str, "content_block")
            return [TextDelta(text=text)] if text else []
        if block.get("type") == "tool_use":
            tool_id, name = _get(block, "id", str, "content_block"), _get(block, "name", str, "content_block")
            initial = block.get("input") or {}
            parts = [compact_json(initial)] if initial else []
            state.blocks[index] = (BlockKind.TOOL, tool_id, parts)
            start: list[StreamEvent] = [ToolUseStart(id=tool_id, name=name)]
            return start + [ToolUseDelta(id=tool_id, partial_json=p) for p in parts]
        if block.get("type") == "thinking":
            state.blocks[index] = (BlockKind.THINKING, "", [])
            text, signature = block.get("thinking", ""), block.get("signature", "")
            if not isinstance(text, str) or not isinstance(signature, str):
                raise EventShapeError(f"thinking block {block!r} has a non-string thinking or signature")
            return [ThinkingDelta(thinking=text, signature=signature)]
        if block.get("type") == "redacted_thinking":
            state.blocks[index] = (BlockKind.THINKING, "", [])
            return [ThinkingDelta(redacted_data=_get(block, "data", str, "content_block"))]
        state.blocks[index] = (BlockKind.OPAQUE, "", [])  # server tools, newer types: carried as sent
        return [OpaqueBlock(start_json=compact_json(block))]
    if kind in ("content_block_delta", "content_block_stop"):
        index = _get(payload, "index", int, kind)
        if index not in state.blocks:
            raise EventShapeError(f"{kind} for unknown block index {index}")
        block_kind, tool_id, parts = state.blocks[index]
        if kind == "content_block_stop":
            if block_kind is BlockKind.TOOL and not _tool_args_complete(parts):
                return [StreamError(message=f"tool call {tool_id!r} arguments are not a JSON object")]
            return [] if block_kind is BlockKind.IGNORED else [BlockStop()]  # an opaque block closes too
        delta = _get(payload, "delta", dict, kind)
        if block_kind is BlockKind.TEXT and delta.get("type") == "text_delta":
            return [TextDelta(text=_get(delta, "text", str, "delta"))]
        if block_kind is BlockKind.TEXT and delta.get("type") == "citations_delta":  # carried, as sent
            return [TextDelta(text="", citation_json=compact_json(_get(delta, "citation", dict, "delta")))]
        if block_kind is BlockKind.TOOL and delta.get("type") == "input_json_delta":
            piece = _get(delta, "partial_json", str, "delta")
            parts.append(piece)
            return [ToolUseDelta(id=tool_id, partial_json=piece)]
        if block_kind is BlockKind.THINKING and delta.get("type") == "thinking_delta":
            return [ThinkingDelta(thinking=_get(delta, "thinking", str, "delta"))]
        if block_kind is BlockKind.THINKING and delta.get("type") == "signature_delta":
            return [ThinkingDelta(signature=_get(delta, "signature", str, "delta"))]
        if block_kind is BlockKind.IGNORED:
            return []
        if block_kind is BlockKind.OPAQUE or delta.get("type") not in _KNOWN_DELTAS:
            # a delta type newer than this code (Anthropic adds them: citations_delta, signature_delta)
            # is carried as sent to a caller of its protocol, as a newer block type is, not a malformed stream
            return [OpaqueBlock(delta_json=compact_json(delta))]
        raise EventShapeError(f"delta {delta.get('type')!r} does not fit a {block_kind.value} block")
    if kind == "message_delta":
        delta = _get(payload, "delta", dict, kind)
        if delta.get("stop_reason") is not None:
            state.stop_reason = _get(delta, "stop_reason", str, "delta")
        if payload.get("usage") is not None:
            _merge_usage(state.usage, _get(payload, "usage", dict, kind))
            state.usage_reported = True
        return []
    if kind == "message_stop":
        if state.stop_reason is None:
            return [StreamError(message="message_stop without a stop_reason")]
        usage = anthropic_usage(state.usage, FieldReader(ProviderKind.ANTHROPIC))
        return [MessageStop(stop_reason=finish_reason_for(state.stop_reason), usage=usage)]
    return []  # ping and event types added later: Anthropic asks clients to ignore them


# --- OpenAI --------------------------------------------------------------------------------------------


@dataclass(slots=True)
class OpenAIState:
    """One OpenAI stream's tool calls by index, its open block, finish reason, refusal and usage."""

    tools: dict[int, tuple[str, list[str]]] = field(default_factory=dict)  # tool index -> (id, arguments)
    open_block: tuple[BlockKind, int] | None = None  # (TEXT, 0) or (TOOL, index)
    finish: FinishReason | None = None
    refusal: bool = False
    usage: Usage | None = None
    service_tier: object = None  # the chunks' top-level service_tier: it prices the usage


def _switch_block(state: OpenAIState, block: tuple[BlockKind, int]) -> list[StreamEvent]:
    if state.open_block == block:
        return []
    closing: list[StreamEvent] = [BlockStop()] if state.open_block is not None else []
    state.open_block = block
    return closing


def _openai_choice(state: OpenAIState, choice: dict[str, Any]) -> list[StreamEvent]:
    if choice.get("index", 0) != 0:
        raise EventShapeError(f"choice index {choice.get('index')!r}: routeproof streams one choice")
    events: list[StreamEvent] = []
    delta = choice.get("delta") or {}
    if not isinstance(delta, dict):
        raise EventShapeError("choices[0].delta must be an object")
    logprobs = choice.get("logprobs")
    if logprobs is not None and not isinstance(logprobs, dict):
        raise EventShapeError("choices[0].logprobs must be an object")
    for key in ("content", "refusal"):
        text = delta.get(key)
        if text is not None and not isinstance(text, str):
            raise EventShapeError(f"delta.{key} must be a string")
        if text:
            state.refusal = state.refusal or key == "refusal"
            events += _switch_block(state, (BlockKind.TEXT, 0))
            lp = None if logprobs is None else _logprobs_text(logprobs)
            events.append(TextDelta(text=text, logprobs_json=lp, refusal=key == "refusal"))
            logprobs = None  # one chunk's logprobs go with its first piece of text
    if delta.get("audio") is not None and not events:
        # audio output (its transcript and data) is content: it commits the stream and, relayed to an
        # OpenAI caller (core/formats/relay.py), goes at once; the neutral events have no audio (empty text)
        events += _switch_block(state, (BlockKind.TEXT, 0))
        events.append(TextDelta(text=""))
    calls = delta.get("tool_calls") or []
    if not isinstance(calls, list):
        raise EventShapeError("delta.tool_calls must be an array")
    for raw in calls:
        call = raw if isinstance(raw, dict) else {}
        index = _get(call, "index", int, "tool_calls[]")
        function = call.get("function") or {}
        if not isinstance(function, dict):
            raise EventShapeError("tool_calls[].function must be an object")
        if index not in state.tools:
            tool_id = call.get("id") or deterministic_tool_id("openai", 0, index)
            if not isinstance(tool_id, str):
                raise EventShapeError("tool_calls[].id must be a string")
            state.tools[index] = (tool_id, [])
            events += _switch_block(state, (BlockKind.TOOL, index))
            events.append(ToolUseStart(id=tool_id, name=_get(function, "name", str, "tool_calls[].function")))
        tool_id, parts = state.tools[index]
        piece = function.get("arguments")
        if piece is not None and not isinstance(piece, str):
            raise EventShapeError("tool_calls[].function.arguments must be a string")
        if piece:
            parts.append(piece)
            events.append(ToolUseDelta(id=tool_id, partial_json=piece))
    finish = choice.get("finish_reason")
    if finish is not None:
        if not isinstance(finish, str):
            raise EventShapeError("finish_reason must be a string")
        if state.open_block is not None:
            events.append(BlockStop())
            state.open_block = None
        for tool_id, parts in state.tools.values():
            if not _tool_args_complete(parts):
                return [*events, StreamError(message=f"tool call {tool_id!r} arguments are not a JSON object")]
        state.finish = FinishReason.CONTENT_FILTER if state.refusal else finish_reason_for(finish)
    return events


def _logprobs_text(logprobs: dict[str, Any]) -> str:
    try:
        return compact_json(logprobs)
    except ValueError as exc:  # NaN or Infinity: not JSON
        raise EventShapeError(f"choices[0].logprobs is not JSON: {exc}") from exc


def openai_event(state: OpenAIState, data: str) -> list[StreamEvent]:
    if data.strip() == "[DONE]":
        if state.finish is None:
            return [StreamError(message=f"{INCOMPLETE}: [DONE] before any finish_reason")]
        return [MessageStop(stop_reason=state.finish, usage=state.usage or Usage())]
    payload = _json_object(data)
    if "error" in payload:
        error = payload["error"]
        detail = error.get("message") if isinstance(error, dict) else error
        return [StreamError(message=f"provider error: {detail}")]
    if payload.get("service_tier") is not None:
        state.service_tier = payload["service_tier"]
    if payload.get("usage") is not None:
        usage = openai_usage(payload["usage"], FieldReader(ProviderKind.OPENAI))
        state.usage = with_service_tier(usage, state.service_tier)
    events: list[StreamEvent] = []
    choices = payload.get("choices") or []
    if not isinstance(choices, list):
        raise EventShapeError("choices must be an array")
    for choice in choices:
        if not isinstance(choice, dict):
            raise EventShapeError("choices[] must be an object")
        events += _openai_choice(state, choice)
    return events


def _json_object(data: str) -> dict[str, Any]:
    try:
        payload = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise EventShapeError(f"malformed event JSON: {data[:80]!r}") from exc
    if not isinstance(payload, dict):
        raise EventShapeError(f"event data is not a JSON object: {data[:80]!r}")
    return payload


def reported_usage(protocol: WireProtocol, anthropic: AnthropicState, openai: OpenAIState) -> Usage | None:
    """The final usage the provider reported so far (what it bills), or None before it arrived.

    Anthropic's is the cumulative usage of its ``message_delta`` (``message_start``'s output count
    is a placeholder); OpenAI's is the ``usage`` chunk sent before ``[DONE]``. A stream cut after
    it and before its terminator is billed this usage (``core/stream_rules.settle_stream``).
    """
    if protocol is WireProtocol.OPENAI:
        return openai.usage
    if not anthropic.usage_reported:
        return None
    try:
        return anthropic_usage(anthropic.usage, FieldReader(ProviderKind.ANTHROPIC))
    except (InvalidResponse, ValueError):  # unreadable counts: the worst case is booked instead
        return None


def map_event(
    protocol: WireProtocol, anthropic: AnthropicState, openai: OpenAIState, event_type: str, data: str
) -> list[StreamEvent]:
    if protocol is WireProtocol.OPENAI:
        return openai_event(openai, data)
    payload = _json_object(data)
    payload.setdefault("type", event_type)
    return anthropic_event(anthropic, payload)
