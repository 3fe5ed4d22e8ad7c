"""Responses and streams in the Anthropic Messages shape, from routeproof's neutral values."""

from __future__ import annotations

import json
from typing import Any

from routeproof.core.blocks import ThinkingBlock
from routeproof.core.types import (
    BlockStop,
    FinishReason,
    MessageStop,
    OpaqueBlock,
    ProviderResponse,
    StreamError,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolUseDelta,
    ToolUseStart,
    Usage,
)

__all__ = ["AnthropicStream", "message", "usage_json"]

_STOP = {
    FinishReason.STOP: "end_turn",
    FinishReason.LENGTH: "max_tokens",
    FinishReason.TOOL_CALLS: "tool_use",
    FinishReason.CONTENT_FILTER: "refusal",
    FinishReason.OTHER: "end_turn",
}


def usage_json(usage: Usage) -> dict[str, Any]:
    """Anthropic usage: cache reads and writes are counted apart from ``input_tokens``, as here."""
    return {
        "input_tokens": usage.prompt_tokens,
        "output_tokens": usage.completion_tokens,
        "cache_creation_input_tokens": usage.cache_creation_tokens,
        "cache_read_input_tokens": usage.cached_input_tokens,
    }


def message(resp: ProviderResponse) -> dict[str, Any]:
    """A ``message`` object for a routed answer."""
    choice = resp.choices[0]
    content: list[dict[str, Any]] = [
        {"type": "thinking", "thinking": b.thinking, "signature": b.signature}
        if isinstance(b, ThinkingBlock)
        else {"type": "redacted_thinking", "data": b.data}
        for b in choice.thinking
    ]  # first, signatures byte-exact: the client sends them back on its next turn
    if choice.content:
        content.append({"type": "text", "text": choice.content})
    content.extend(
        {"type": "tool_use", "id": c.id, "name": c.name, "input": json.loads(c.arguments_json)}
        for c in choice.tool_calls
    )
    return {
        "id": resp.id,
        "type": "message",
        "role": "assistant",
        "model": resp.model,
        "content": content,
        "stop_reason": _STOP[resp.finish_reason],
        "stop_sequence": None,
        "usage": usage_json(resp.usage),
    }


def _sse(event: str, payload: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: ".encode() + json.dumps(payload, separators=(",", ":")).encode() + b"\n\n"


class AnthropicStream:
    """Encodes one stream's events as Messages SSE: ``message_start`` .. ``message_stop``.

    Text arrives without block boundaries, so a text block is opened at the first text delta and
    closed by the next ``BlockStop``, tool call or the end. Input tokens are known only at the end:
    ``message_start`` carries 0 and ``message_delta`` the real usage. A ``StreamError`` becomes an
    ``error`` event (the Anthropic SDKs raise it) and no ``message_stop`` follows.
    """

    def __init__(self, *, response_id: str, model: str) -> None:
        self._id = response_id
        self._model = model
        self._index = -1
        self._open = False
        self._started = False
        self._text_block = False
        self._thinking_block = False

    def _start(self) -> bytes:
        self._started = True
        start: dict[str, Any] = {
            "id": self._id, "type": "message", "role": "assistant", "model": self._model, "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": usage_json(Usage()),
        }  # fmt: skip
        return _sse("message_start", {"type": "message_start", "message": start}) + _sse("ping", {"type": "ping"})

    def _close(self) -> bytes:
        if not self._open:
            return b""
        self._open = False
        return _sse("content_block_stop", {"type": "content_block_stop", "index": self._index})

    def _open_block(self, block: dict[str, Any]) -> bytes:
        out = self._close()
        self._index += 1
        self._open = True
        return out + _sse(
            "content_block_start", {"type": "content_block_start", "index": self._index, "content_block": block}
        )

    def _delta(self, delta: dict[str, Any]) -> bytes:
        return _sse("content_block_delta", {"type": "content_block_delta", "index": self._index, "delta": delta})

    def _thinking(self, event: ThinkingDelta) -> bytes:
        """A thinking block's pieces: the first opens the block (a redacted one whole), then
        ``thinking_delta`` and ``signature_delta`` as the provider sent them."""
        out = b""
        if event.redacted_data is not None:
            self._text_block = self._thinking_block = False
            return self._open_block({"type": "redacted_thinking", "data": event.redacted_data})
        if not (self._open and self._thinking_block):
            out += self._open_block({"type": "thinking", "thinking": "", "signature": ""})
            self._text_block, self._thinking_block = False, True
        if event.thinking:
            out += self._delta({"type": "thinking_delta", "thinking": event.thinking})
        if event.signature:
            out += self._delta({"type": "signature_delta", "signature": event.signature})
        return out

    def encode(self, event: StreamEvent) -> bytes:
        """The bytes for one event (possibly none)."""
        out = b""
        if not self._started and not isinstance(event, StreamError):
            out += self._start()
        if isinstance(event, TextDelta):
            if not (self._open and self._text_block):
                out += self._open_block({"type": "text", "text": ""})
                self._text_block, self._thinking_block = True, False
            if event.citation_json is not None:  # a citation of this text block, as the provider sent it
                out += self._delta({"type": "citations_delta", "citation": json.loads(event.citation_json)})
            else:
                out += self._delta({"type": "text_delta", "text": event.text})
        elif isinstance(event, ThinkingDelta):
            out += self._thinking(event)
        elif isinstance(event, OpaqueBlock):  # a server tool's block (or a newer type), as the provider sent it
            if event.start_json is not None:
                out += self._open_block(json.loads(event.start_json))
                self._text_block = self._thinking_block = False
            if event.delta_json is not None:
                out += self._delta(json.loads(event.delta_json))
        elif isinstance(event, ToolUseStart):
            out += self._open_block({"type": "tool_use", "id": event.id, "name": event.name, "input": {}})
            self._text_block = self._thinking_block = False
        elif isinstance(event, ToolUseDelta):
            out += self._delta({"type": "input_json_delta", "partial_json": event.partial_json})
        elif isinstance(event, BlockStop):
            out += self._close()
        elif isinstance(event, MessageStop):
            out += self._close()
            delta = {"stop_reason": _STOP[event.stop_reason], "stop_sequence": None}
            out += _sse("message_delta", {"type": "message_delta", "delta": delta, "usage": usage_json(event.usage)})
            out += _sse("message_stop", {"type": "message_stop"})
        elif isinstance(event, StreamError):
            out += _sse("error", {"type": "error", "error": {"type": "api_error", "message": event.message}})
        return out
