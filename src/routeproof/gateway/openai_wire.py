"""Responses and streams in the OpenAI Chat Completions shape, from routeproof's neutral values.

A model's thinking (Anthropic, Bedrock) is carried as ``reasoning_content`` (the field
OpenAI-compatible servers use), on the message and streamed on the deltas; its signatures have no
place here and are named dropped (``core/formats/answer_drops.py``).
"""

from __future__ import annotations

import json
from typing import Any

from routeproof.core.formats.answer_drops import thinking_text
from routeproof.core.types import (
    FinishReason,
    MessageStop,
    ProviderResponse,
    StreamError,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolUseDelta,
    ToolUseStart,
    Usage,
)

__all__ = ["OpenAIStream", "completion", "usage_json"]

_FINISH = {
    FinishReason.STOP: "stop",
    FinishReason.LENGTH: "length",
    FinishReason.TOOL_CALLS: "tool_calls",
    FinishReason.CONTENT_FILTER: "content_filter",
    FinishReason.OTHER: "stop",
}


def usage_json(usage: Usage) -> dict[str, Any]:
    """OpenAI usage: ``prompt_tokens`` includes the cached tokens (routeproof counts them apart);
    ``completion_tokens`` includes the reasoning tokens, named in ``completion_tokens_details``."""
    prompt = usage.prompt_tokens + usage.cached_input_tokens + usage.cache_creation_tokens
    return {
        "prompt_tokens": prompt,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": prompt + usage.completion_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.cached_input_tokens},
        "completion_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
    }


def completion(resp: ProviderResponse, *, created: int) -> dict[str, Any]:
    """A ``chat.completion`` object for a routed answer."""
    choice = resp.choices[0]
    tool_calls = [
        {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments_json}}
        for c in choice.tool_calls
    ]
    message: dict[str, Any] = {"role": "assistant", "content": choice.content or None, "refusal": choice.refusal}
    reasoning = thinking_text(choice)
    if reasoning:  # the model's thinking, as OpenAI-compatible servers carry it
        message["reasoning_content"] = reasoning
    if choice.annotations_json is not None:  # an OpenAI-protocol answer's URL citations, as it gave them
        message["annotations"] = json.loads(choice.annotations_json)
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": resp.id,
        "object": "chat.completion",
        "created": created,
        "model": resp.model,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": _FINISH[resp.finish_reason]}],
        "usage": usage_json(resp.usage),
    }


def _sse(payload: object) -> bytes:
    return b"data: " + json.dumps(payload, separators=(",", ":")).encode() + b"\n\n"


class OpenAIStream:
    """Encodes one stream's events as ``chat.completion.chunk`` SSE, ending in ``data: [DONE]``.

    A ``StreamError`` (the stream was cut after its first token) becomes an ``error`` event, which
    the OpenAI SDKs raise as an APIError, and no ``[DONE]`` follows.
    """

    def __init__(self, *, response_id: str, model: str, created: int, include_usage: bool) -> None:
        self._base = {"id": response_id, "object": "chat.completion.chunk", "created": created, "model": model}
        self._include_usage = include_usage
        self._tools: dict[str, int] = {}
        self._started = False
        self._refused = False  # refusal deltas were sent: OpenAI ends such a stream with finish_reason "stop"

    def _chunk(self, delta: dict[str, Any], finish: str | None = None, logprobs: str | None = None) -> bytes:
        chunk: dict[str, Any] = {
            **self._base,
            "choices": [{"index": 0, "delta": delta, "logprobs": None if logprobs is None else json.loads(logprobs),
                         "finish_reason": finish}],
        }  # fmt: skip
        if self._include_usage:
            chunk["usage"] = None
        return _sse(chunk)

    def encode(self, event: StreamEvent) -> bytes:
        """The bytes for one event (possibly none)."""
        out = b""
        if not self._started and not isinstance(event, StreamError):
            self._started = True
            out += self._chunk({"role": "assistant", "content": ""})
        if isinstance(event, TextDelta):
            if event.refusal:  # OpenAI's own refusal, in its own field
                self._refused = True
                out += self._chunk({"refusal": event.text}, logprobs=event.logprobs_json)
            elif event.citation_json is None:  # a citation has no place here (named dropped up front)
                out += self._chunk({"content": event.text}, logprobs=event.logprobs_json)
        elif isinstance(event, ThinkingDelta):
            if event.thinking:  # a signature or redacted data has no place here (named dropped up front)
                out += self._chunk({"reasoning_content": event.thinking})
        elif isinstance(event, ToolUseStart):
            index = self._tools.setdefault(event.id, len(self._tools))
            call = {
                "index": index,
                "id": event.id,
                "type": "function",
                "function": {"name": event.name, "arguments": ""},
            }
            out += self._chunk({"tool_calls": [call]})
        elif isinstance(event, ToolUseDelta):
            index = self._tools.setdefault(event.id, len(self._tools))
            out += self._chunk({"tool_calls": [{"index": index, "function": {"arguments": event.partial_json}}]})
        elif isinstance(event, MessageStop):
            refused = self._refused and event.stop_reason is FinishReason.CONTENT_FILTER
            out += self._chunk({}, "stop" if refused else _FINISH[event.stop_reason])
            if self._include_usage:
                out += _sse({**self._base, "choices": [], "usage": usage_json(event.usage)})
            out += b"data: [DONE]\n\n"
        elif isinstance(event, StreamError):
            out += _sse({"error": {"message": event.message, "type": "server_error", "param": None, "code": None}})
        return out
