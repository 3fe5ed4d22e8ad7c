"""Answers and streams in the OpenAI Responses API shape, from routeproof's neutral values.

A plain answer is one ``response`` object. A stream is typed SSE (``event: <type>`` then ``data:``),
each event with its ``sequence_number``::

    response.created, response.in_progress
    per output item:  response.output_item.added
        reasoning:    response.content_part.added, response.reasoning_text.delta..., response.reasoning_text.done,
                      response.content_part.done
        a message:    response.content_part.added, response.output_text.delta..., response.output_text.done,
                      response.content_part.done
        a refusal:    response.content_part.added, response.refusal.delta..., response.refusal.done,
                      response.content_part.done
        a tool call:  response.function_call_arguments.delta..., response.function_call_arguments.done
                      response.output_item.done
    response.completed (or response.incomplete: cut by the output cap or a content filter)

OpenAI's refusal (a Chat answer's ``message.refusal``, a stream's ``delta.refusal``) is a message
whose part is ``{"type": "refusal", "refusal": ...}`` and the response ``completed``, as OpenAI's own
Responses API answers one: the SDK's ``responses.parse`` then reports the refusal instead of failing
to parse it as the requested JSON. (A provider's refusal stop without refusal text, Anthropic's, stays
``incomplete`` with reason ``content_filter``.)

A model's thinking (Anthropic, Bedrock) is a ``reasoning`` item whose content is its
``reasoning_text``; its signatures have no place in this shape and are named dropped
(``core/formats/answer_drops.py``).

A stream cut after its first event (``StreamError``) ends in one ``response.failed`` whose response
has ``status: "failed"`` and an ``error``, never a silent end; the SDKs' stream helpers raise on it.
The ``openai`` SDK's own types (``Response``, the ``ResponseStreamEvent`` union) are the oracle for
every body built here (``tests/responses``).

An answer from a provider with OpenAI's Responses API (``core/responses_route.py``) is relayed as
OpenAI sent it: the ``response`` object (:func:`own_response`), the typed events with their ids and
sequence numbers (:class:`ResponsesRelay`). A relayed stream cut after its first content event ends
in one ``response.failed`` that continues OpenAI's own: the same response id, the next sequence number.
"""

from __future__ import annotations

import json
from typing import Any

from routeproof.core.formats.answer_drops import thinking_text
from routeproof.core.formats.responses_answer import (
    chat_answer_logprobs,
    responses_annotations,
    responses_delta_logprobs,
    responses_part_logprobs,
)
from routeproof.core.formats.responses_upstream import wire_frames
from routeproof.core.types import (
    BlockStop,
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

__all__ = ["ResponsesRelay", "ResponsesStream", "own_response", "response_object", "responses_usage"]

_INCOMPLETE = {FinishReason.LENGTH: "max_output_tokens", FinishReason.CONTENT_FILTER: "content_filter"}
"""A finish reason that makes a response ``incomplete``, and the reason it names."""


def responses_usage(usage: Usage) -> dict[str, Any]:
    """Responses usage: ``input_tokens`` includes the cached tokens (routeproof counts them apart)."""
    prompt = usage.prompt_tokens + usage.cached_input_tokens + usage.cache_creation_tokens
    reasoning = getattr(usage, "reasoning_tokens", 0)  # the content model's reasoning count, once it has one
    return {
        "input_tokens": prompt,
        "input_tokens_details": {
            "cached_tokens": usage.cached_input_tokens,
            "cache_write_tokens": usage.cache_creation_tokens,
        },
        "output_tokens": usage.completion_tokens,
        "output_tokens_details": {"reasoning_tokens": reasoning if isinstance(reasoning, int) else 0},
        "total_tokens": prompt + usage.completion_tokens,
    }


def _message_item(
    item_id: str,
    text: str,
    status: str,
    logprobs: list[dict[str, Any]] | None = None,
    annotations: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    part = {"type": "output_text", "text": text, "annotations": annotations or [], "logprobs": logprobs or []}
    return _assistant_message(item_id, status, part)


def _refusal_item(item_id: str, refusal: str, status: str) -> dict[str, Any]:
    return _assistant_message(item_id, status, {"type": "refusal", "refusal": refusal})


def _assistant_message(item_id: str, status: str, part: dict[str, Any]) -> dict[str, Any]:
    return {"id": item_id, "type": "message", "status": status, "role": "assistant", "content": [part]}


def _reasoning_item(item_id: str, text: str, status: str) -> dict[str, Any]:
    part = {"type": "reasoning_text", "text": text}
    return {"id": item_id, "type": "reasoning", "status": status, "summary": [], "content": [part]}


def _call_item(item_id: str, call_id: str, name: str, arguments: str, status: str) -> dict[str, Any]:
    return {
        "id": item_id, "type": "function_call", "status": status,
        "call_id": call_id, "name": name, "arguments": arguments,
    }  # fmt: skip


def _envelope(
    response_id: str, model: str, created_at: int, echo: dict[str, Any], *, status: str, output: list[dict[str, Any]]
) -> dict[str, Any]:
    return {
        "id": response_id,
        "object": "response",
        "created_at": created_at,
        "status": status,
        "model": model,
        "output": output,
        "error": None,
        "incomplete_details": None,
        "usage": None,
        "store": False,
        "background": False,
        "truncation": "disabled",
        "previous_response_id": None,
        **echo,
    }


def _finish(body: dict[str, Any], finish: FinishReason, usage: Usage) -> None:
    reason = _INCOMPLETE.get(finish)
    body["status"] = "completed" if reason is None else "incomplete"
    body["incomplete_details"] = None if reason is None else {"reason": reason}
    body["usage"] = responses_usage(usage)


def response_object(
    resp: ProviderResponse, *, response_id: str, created_at: int, echo: dict[str, Any]
) -> dict[str, Any]:
    """A ``response`` object for a routed answer; ``echo`` holds the request fields it repeats."""
    choice = resp.choices[0]
    refused = bool(choice.refusal) and choice.content == choice.refusal  # OpenAI's refusal, its only text
    finish = FinishReason.STOP if refused else resp.finish_reason
    status = "incomplete" if finish in _INCOMPLETE else "completed"
    output: list[dict[str, Any]] = []
    reasoning = thinking_text(choice)
    if reasoning:  # the model's thinking first, as OpenAI orders a reasoning item
        output.append(_reasoning_item(f"rs_{response_id[5:]}", reasoning, status))
    if refused:
        output.append(_refusal_item(f"msg_{response_id[5:]}", choice.content, status))
    elif choice.content:  # token logprobs of a Chat answer (the rewriting asked for them) on its text part
        logprobs = responses_part_logprobs(chat_answer_logprobs(resp.wire_body_json))
        annotations, _ = responses_annotations(choice.annotations_json)  # a search model's URL citations
        output.append(_message_item(f"msg_{response_id[5:]}", choice.content, status, logprobs, annotations))
    output += [
        _call_item(f"fc_{call.id}", call.id, call.name, call.arguments_json, "completed") for call in choice.tool_calls
    ]
    body = _envelope(response_id, resp.model, created_at, echo, status=status, output=output)
    _finish(body, finish, resp.usage)
    return body


def _sse(kind: str, payload: dict[str, Any]) -> bytes:
    return b"event: " + kind.encode() + b"\ndata: " + json.dumps(payload, separators=(",", ":")).encode() + b"\n\n"


class ResponsesStream:
    """Encodes one stream's neutral events as Responses SSE events (see the module doc).

    One output item is open at a time: text opens a message item, a tool call a ``function_call``
    item; a ``BlockStop``, the next item or the end closes it.
    """

    def __init__(self, *, response_id: str, model: str, created_at: int, echo: dict[str, Any]) -> None:
        self._id = response_id
        self._model = model
        self._created_at = created_at
        self._echo = echo
        self._seq = 0
        self._started = False
        self._output: list[dict[str, Any]] = []  # closed items, and the open one last
        self._open: dict[str, Any] | None = None
        self._calls: dict[str, int] = {}  # tool call id -> output index
        self._text_logprobs: list[dict[str, Any]] = []  # the open message's token logprobs, delta-shaped
        self._refused = False  # refusal pieces were sent: the response is completed, as OpenAI's

    def _event(self, kind: str, **fields: Any) -> bytes:
        payload = {"type": kind, "sequence_number": self._seq, **fields}
        self._seq += 1
        return _sse(kind, payload)

    def _body(self, status: str) -> dict[str, Any]:
        return _envelope(self._id, self._model, self._created_at, self._echo, status=status, output=self._output)

    def _start(self) -> bytes:
        self._started = True
        created = self._event("response.created", response=self._body("in_progress"))
        return created + self._event("response.in_progress", response=self._body("in_progress"))

    def _close(self) -> bytes:
        item, self._open = self._open, None
        if item is None:
            return b""
        index = self._output.index(item)
        out = b""
        if item["type"] in ("message", "reasoning"):
            part = item["content"][0]
            where = {"item_id": item["id"], "output_index": index, "content_index": 0}
            if part["type"] == "refusal":
                out += self._event("response.refusal.done", **where, refusal=part["refusal"])
            elif item["type"] == "message":
                out += self._event(
                    "response.output_text.done", **where, text=part["text"], logprobs=self._text_logprobs
                )
            else:
                out += self._event("response.reasoning_text.done", **where, text=part["text"])
            out += self._event("response.content_part.done", **where, part=part)
        else:
            where = {"item_id": item["id"], "output_index": index}
            out += self._event("response.function_call_arguments.done", **where, arguments=item["arguments"])
        item["status"] = "completed"
        return out + self._event("response.output_item.done", output_index=index, item=item)

    def _open_item(self, item: dict[str, Any]) -> bytes:
        out = self._close()
        self._output.append(item)
        self._open = item
        index = len(self._output) - 1
        added = {**item, "content": []} if item["type"] in ("message", "reasoning") else dict(item)
        out += self._event("response.output_item.added", output_index=index, item=added)
        if item["type"] in ("message", "reasoning"):
            part = {**item["content"][0]}
            out += self._event(
                "response.content_part.added", item_id=item["id"], output_index=index, content_index=0, part=part
            )
        return out

    def _refusal(self, event: TextDelta) -> bytes:
        """A piece of OpenAI's refusal: its text streamed in a message item's refusal part."""
        self._refused = True
        out = b""
        if self._open is None or self._open["type"] != "message" or self._open["content"][0]["type"] != "refusal":
            out += self._open_item(_refusal_item(f"msg_{self._id[5:]}_{len(self._output)}", "", "in_progress"))
        assert self._open is not None
        self._open["content"][0]["refusal"] += event.text
        where = {"item_id": self._open["id"], "output_index": len(self._output) - 1, "content_index": 0}
        return out + self._event("response.refusal.delta", **where, delta=event.text)

    def _thinking(self, event: ThinkingDelta) -> bytes:
        """A piece of thinking: its text streamed in a reasoning item (a signature or redacted data has no
        place in this shape: named dropped up front)."""
        if not event.thinking:
            return b""
        out = b""
        if self._open is None or self._open["type"] != "reasoning":
            out += self._open_item(_reasoning_item(f"rs_{self._id[5:]}_{len(self._output)}", "", "in_progress"))
        assert self._open is not None
        self._open["content"][0]["text"] += event.thinking
        where = {"item_id": self._open["id"], "output_index": len(self._output) - 1, "content_index": 0}
        return out + self._event("response.reasoning_text.delta", **where, delta=event.thinking)

    def encode(self, event: StreamEvent) -> bytes:
        """The bytes for one event (possibly none)."""
        out = b"" if self._started else self._start()
        if isinstance(event, TextDelta) and event.citation_json is not None:
            pass  # an Anthropic citation has no Responses form (named dropped up front)
        elif isinstance(event, TextDelta) and event.refusal:
            out += self._refusal(event)
        elif isinstance(event, TextDelta):
            if (
                self._open is None
                or self._open["type"] != "message"
                or self._open["content"][0]["type"] != "output_text"
            ):
                out += self._open_item(_message_item(f"msg_{self._id[5:]}_{len(self._output)}", "", "in_progress"))
                self._text_logprobs = []
            assert self._open is not None
            self._open["content"][0]["text"] += event.text
            self._open["content"][0]["logprobs"] += responses_part_logprobs(event.logprobs_json)
            pieces = responses_delta_logprobs(event.logprobs_json)  # a Chat chunk's token logprobs
            self._text_logprobs += pieces
            where = {"item_id": self._open["id"], "output_index": len(self._output) - 1, "content_index": 0}
            out += self._event("response.output_text.delta", **where, delta=event.text, logprobs=pieces)
        elif isinstance(event, ThinkingDelta):
            out += self._thinking(event)
        elif isinstance(event, ToolUseStart):
            out += self._open_item(_call_item(f"fc_{event.id}", event.id, event.name, "", "in_progress"))
            self._calls[event.id] = len(self._output) - 1
        elif isinstance(event, ToolUseDelta):
            index = self._calls.get(event.id)
            if index is not None:
                item = self._output[index]
                item["arguments"] += event.partial_json
                where = {"item_id": item["id"], "output_index": index}
                out += self._event("response.function_call_arguments.delta", **where, delta=event.partial_json)
        elif isinstance(event, BlockStop):
            out += self._close()
        elif isinstance(event, MessageStop):
            out += self._close()
            body = self._body("completed")
            refused = self._refused and event.stop_reason is FinishReason.CONTENT_FILTER
            _finish(body, FinishReason.STOP if refused else event.stop_reason, event.usage)
            kind = "response.completed" if body["status"] == "completed" else "response.incomplete"
            out += self._event(kind, response=body)
        elif isinstance(event, StreamError):
            body = self._body("failed")
            body["error"] = {"code": "server_error", "message": event.message}
            out += self._event("response.failed", response=body)
        return out


def own_response(resp: ProviderResponse) -> dict[str, Any] | None:
    """OpenAI's own ``response`` object when a provider with the Responses API answered, else None."""
    if resp.wire_body_json is None:
        return None
    own = json.loads(resp.wire_body_json)
    return own if isinstance(own, dict) and own.get("object") == "response" else None


class ResponsesRelay:
    """Relays the frames of OpenAI's own Responses stream (carried by the events,
    ``core/formats/responses_upstream.py``)
    byte for byte; a ``StreamError`` after them is one ``response.failed`` continuing the stream."""

    def __init__(self) -> None:
        self._seq = -1
        self._response: dict[str, Any] = {}
        self._failed = False

    @staticmethod
    def relays(event: StreamEvent) -> bool:
        """Whether ``event`` was read from OpenAI's Responses stream (so the stream is relayed, not encoded)."""
        return wire_frames(event) is not None

    def _track(self, data: str) -> None:
        payload = json.loads(data)
        if isinstance(payload, dict):
            seq = payload.get("sequence_number")
            self._seq = seq if isinstance(seq, int) else self._seq + 1
            if isinstance(payload.get("response"), dict):
                self._response = payload["response"]

    def encode(self, event: StreamEvent) -> bytes:
        """The bytes for one event: its OpenAI frames, or the one ``response.failed`` for a cut."""
        frames = wire_frames(event)
        out = b""
        for name, data in frames or ():
            self._track(data)
            out += b"event: " + name.encode() + b"\ndata: " + data.encode() + b"\n\n"
        if isinstance(event, StreamError) and not self._failed:
            self._failed = True
            error = {"code": "server_error", "message": event.message}
            body = {**self._response, "status": "failed", "error": error}
            self._seq += 1
            out += _sse("response.failed", {"type": "response.failed", "sequence_number": self._seq, "response": body})
        return out
