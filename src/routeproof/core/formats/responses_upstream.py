"""OpenAI's Responses API as an upstream: its ``response`` object and its typed SSE stream, read.

A verbatim Responses call (``core/responses_route.py``) is still a routed call: the ledger books its
usage, the kernel sees its outcome, the stream rules see its first content event. So the answer is
read into routeproof's neutral values, and OpenAI's own bytes travel with them for the gateway to
relay unchanged (ids, every event, every field):

- a plain answer: :func:`normalize_responses` (the shell keeps the body as ``wire_body_json``);
- a stream: :class:`ResponsesStreamDecoder` yields the neutral events the router's rules need, each
  a ``Wire*`` subclass carrying the SSE frames it stands for, plus the frames since the previous one:

  =============================================  ================================================
  OpenAI's event                                 neutral event (carrying the frames)
  =============================================  ================================================
  ``response.output_text.delta``                 ``TextDelta``
  ``response.output_item.added`` (function_call) ``ToolUseStart`` (the item's ``call_id``, name)
  ``response.function_call_arguments.delta``     ``ToolUseDelta``
  ``response.output_item.done`` (message, call)  ``BlockStop``
  ``response.completed`` / ``response.incomplete`` ``MessageStop`` (its finish and usage)
  ``response.failed``, ``error``                 ``StreamError`` (its message)
  anything else (``response.created``, ...)      no event: its frame goes with the next one
  =============================================  ================================================

  So ``response.created`` is not content: a stream cut after it and before the first delta fails
  over like any stream cut before its first token.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import icontract

from routeproof.core.errors import InvalidResponse
from routeproof.core.types import (
    BlockStop,
    Choice,
    FinishReason,
    MessageStop,
    ProviderResponse,
    StreamError,
    StreamEvent,
    TextDelta,
    ToolCall,
    ToolUseDelta,
    ToolUseStart,
    Usage,
)

__all__ = [
    "INCOMPLETE_STREAM",
    "ResponsesStreamDecoder",
    "WireBlockStop",
    "WireFrame",
    "WireMessageStop",
    "WireTextDelta",
    "WireToolUseDelta",
    "WireToolUseStart",
    "normalize_responses",
    "responses_usage_of",
    "wire_frames",
]

WireFrame = tuple[str, str]
"""One SSE event as OpenAI sent it: its ``event`` name and its ``data`` text."""

INCOMPLETE_STREAM = "stream incomplete: the Responses stream ended without response.completed"


@dataclass(frozen=True, slots=True, kw_only=True)
class WireTextDelta(TextDelta):
    """A ``TextDelta`` read from OpenAI's Responses stream, with the frames it stands for."""

    wire: tuple[WireFrame, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class WireToolUseStart(ToolUseStart):
    """A ``ToolUseStart`` read from OpenAI's Responses stream, with the frames it stands for."""

    wire: tuple[WireFrame, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class WireToolUseDelta(ToolUseDelta):
    """A ``ToolUseDelta`` read from OpenAI's Responses stream, with the frames it stands for."""

    wire: tuple[WireFrame, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class WireBlockStop(BlockStop):
    """A ``BlockStop`` read from OpenAI's Responses stream, with the frames it stands for."""

    wire: tuple[WireFrame, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class WireMessageStop(MessageStop):
    """A ``MessageStop`` read from OpenAI's Responses stream, with the frames it stands for."""

    wire: tuple[WireFrame, ...] = ()


_WIRE = (WireTextDelta, WireToolUseStart, WireToolUseDelta, WireBlockStop, WireMessageStop)


@icontract.ensure(lambda event, result: result is None or isinstance(event, _WIRE))
def wire_frames(event: StreamEvent) -> tuple[WireFrame, ...] | None:
    """The OpenAI frames ``event`` carries, or None when it was not read from a Responses stream."""
    return event.wire if isinstance(event, _WIRE) else None


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _usage(raw: object) -> Usage:
    usage: Mapping[str, Any] = raw if isinstance(raw, dict) else {}
    details_in = usage.get("input_tokens_details")
    details_out = usage.get("output_tokens_details")
    cached = _int(details_in.get("cached_tokens")) if isinstance(details_in, dict) else 0
    output = _int(usage.get("output_tokens"))
    reasoning = _int(details_out.get("reasoning_tokens")) if isinstance(details_out, dict) else 0
    prompt = _int(usage.get("input_tokens"))
    cached = min(cached, prompt)
    return Usage(
        prompt_tokens=prompt - cached,
        cached_input_tokens=cached,
        completion_tokens=output,
        reasoning_tokens=min(reasoning, output),
    )


@icontract.ensure(lambda result: result.prompt_tokens >= 0 and result.completion_tokens >= 0)
def responses_usage_of(raw: object) -> Usage:
    """A Responses ``usage`` object as routeproof's ``Usage`` (cached input counted apart, as everywhere)."""
    return _usage(raw)


_INCOMPLETE_REASONS = {"max_output_tokens": FinishReason.LENGTH, "content_filter": FinishReason.CONTENT_FILTER}


def _finish(response: Mapping[str, Any], has_calls: bool) -> FinishReason:
    status = response.get("status")
    if status == "incomplete":
        details = response.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, dict) else None
        return _INCOMPLETE_REASONS.get(str(reason), FinishReason.OTHER)
    if status != "completed":
        raise InvalidResponse(f"openai responses: status {status!r} is not completed or incomplete")
    return FinishReason.TOOL_CALLS if has_calls else FinishReason.STOP


def _normalize(body: object) -> ProviderResponse:
    if not isinstance(body, dict) or body.get("object") != "response":
        raise InvalidResponse(f"openai responses: not a response object: {str(body)[:80]!r}")
    output = body.get("output")
    if not isinstance(output, list):
        raise InvalidResponse(f"openai responses: output must be an array, got {repr(output)[:80]}")
    text: list[str] = []
    refusal: list[str] = []
    calls: list[ToolCall] = []
    for item in output:
        if not isinstance(item, dict):
            raise InvalidResponse(f"openai responses: an output item must be an object, got {repr(item)[:80]}")
        if item.get("type") == "message":
            for part in item.get("content") or ():
                if isinstance(part, dict) and part.get("type") == "output_text":
                    text.append(str(part.get("text", "")))
                elif isinstance(part, dict) and part.get("type") == "refusal":
                    refusal.append(str(part.get("refusal", "")))
        elif item.get("type") == "function_call":
            calls.append(
                ToolCall(
                    id=str(item.get("call_id", "")),
                    name=str(item.get("name", "")),
                    arguments_json=str(item.get("arguments", "{}")),
                )
            )
    finish = _finish(body, bool(calls))
    choice = Choice(
        content="".join(text) or "".join(refusal),
        tool_calls=tuple(calls),
        finish_reason=finish,
        refusal="".join(refusal) or None,
    )
    return ProviderResponse(
        id=str(body.get("id", "")),
        usage=_usage(body.get("usage")),
        choices=(choice,),
        finish_reason=finish,
        model=str(body.get("model") or ""),
    )


@icontract.ensure(lambda result: len(result.choices) == 1)
def normalize_responses(body: object) -> ProviderResponse:
    """OpenAI's ``response`` object as a ProviderResponse (text, function calls, finish, usage).

    :raises InvalidResponse: naming what is wrong when the body is not a completed or incomplete response.
    """
    return _normalize(body)


class ResponsesStreamDecoder:
    """A sans-I/O decoder of OpenAI's typed Responses SSE stream (see the module doc).

    Bytes in (split anywhere); neutral events out, each carrying its frames. After a ``MessageStop``
    or a ``StreamError`` nothing more is returned; a body that ends before ``response.completed``
    (or ``response.incomplete``) ends in a ``StreamError`` starting ``"stream incomplete"``.
    """

    def __init__(self) -> None:
        self._text = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._buffer = ""
        self._pending: list[WireFrame] = []
        self._calls: dict[str, str] = {}  # output item id -> its call_id
        self._done = False

    def feed(self, chunk: bytes) -> list[StreamEvent]:
        """The events completed by ``chunk``."""
        return self._take(self._text.decode(chunk))

    def finish(self) -> list[StreamEvent]:
        """The end of the body: a StreamError unless the stream's terminal event was seen."""
        events = self._take(self._text.decode(b"", final=True) + "\n\n")
        if not self._done:
            self._done = True
            events.append(StreamError(message=INCOMPLETE_STREAM))
        return events

    def _take(self, text: str) -> list[StreamEvent]:
        if self._done:
            return []
        self._buffer += text
        if self._buffer.endswith("\r"):  # a CR whose LF may come in the next chunk
            ready, self._buffer = self._buffer[:-1], "\r"
        else:
            ready, self._buffer = self._buffer, ""
        ready = ready.replace("\r\n", "\n").replace("\r", "\n")
        *frames, rest = ready.split("\n\n")
        self._buffer = rest + self._buffer
        events: list[StreamEvent] = []
        for frame in frames:
            if self._done:
                break
            event = self._frame(frame)
            if event is not None:
                events.append(event)
        return events

    def _frame(self, frame: str) -> StreamEvent | None:
        name, data = "", []
        for line in frame.split("\n"):
            if line.startswith(":") or not line:
                continue
            key, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if key == "event":
                name = value
            elif key == "data":
                data.append(value)
        if not data:
            return None
        text = "\n".join(data)
        try:
            payload = json.loads(text)
        except ValueError:
            return self._end(StreamError(message=f"openai responses: event data is not JSON: {text[:80]!r}"))
        if not isinstance(payload, dict):
            return self._end(StreamError(message=f"openai responses: event data is not an object: {text[:80]!r}"))
        self._pending.append((name or str(payload.get("type", "")), text))
        return self._map(payload)

    def _wire(self) -> tuple[WireFrame, ...]:
        frames, self._pending = tuple(self._pending), []
        return frames

    def _end(self, event: StreamError) -> StreamError:
        self._done = True
        return event

    def _map(self, payload: Mapping[str, Any]) -> StreamEvent | None:
        kind = payload.get("type")
        item = payload.get("item")
        item_type = item.get("type") if isinstance(item, dict) else None
        if kind == "response.output_text.delta":
            return WireTextDelta(text=str(payload.get("delta", "")), wire=self._wire())
        if kind == "response.output_item.added" and item_type == "function_call" and isinstance(item, dict):
            call_id = str(item.get("call_id", ""))
            self._calls[str(item.get("id", ""))] = call_id
            return WireToolUseStart(id=call_id, name=str(item.get("name", "")), wire=self._wire())
        if kind == "response.function_call_arguments.delta":
            call_id = self._calls.get(str(payload.get("item_id", "")), "")
            return WireToolUseDelta(id=call_id, partial_json=str(payload.get("delta", "")), wire=self._wire())
        if kind == "response.output_item.done" and item_type in ("message", "function_call"):
            return WireBlockStop(wire=self._wire())
        if kind in ("response.completed", "response.incomplete"):
            response = payload.get("response")
            body: Mapping[str, Any] = response if isinstance(response, dict) else {}
            try:
                finish = _finish(body, bool(self._calls))
            except InvalidResponse as exc:
                return self._end(StreamError(message=str(exc)))
            self._done = True
            return WireMessageStop(stop_reason=finish, usage=_usage(body.get("usage")), wire=self._wire())
        if kind in ("response.failed", "error"):
            response = payload.get("response")
            error = response.get("error") if isinstance(response, dict) else payload
            message = error.get("message") if isinstance(error, dict) else None
            return self._end(StreamError(message=f"openai responses: {kind}: {message or 'no message'}"))
        return None
