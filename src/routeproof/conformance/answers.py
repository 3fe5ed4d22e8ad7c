"""Expand a case's ``answer`` shorthand into mock steps: the same logical answer in each wire shape.

A case step is a mock step (the keys of ``routeproof.mock.Scripted``) plus, optionally,
``answer: {text, pieces, tool, end, after_pieces}``: the runner turns it into the shape's body (a
non-streamed call) or its stream items and ``cut_after_items``/``cut_mode`` (a streamed call).

``end`` is how a streamed answer ends (after ``after_pieces`` pieces, default all of them):
``complete`` (the documented end events), ``cut`` (connection reset), ``cut_mid_event`` (half an
event, then a reset), ``no_end_event`` (clean EOF without the end event), ``error_event`` (an
in-band error event, then a clean EOF), ``malformed_event`` (an event that is not JSON, then the
rest), ``stall`` (the socket stays open and silent).

An ``openai`` provider's answer is also rendered in OpenAI's Responses API shape (a ``response``
object, or its typed events with their sequence numbers; the in-band error is the API's ``error``
event), as the step's ``on_responses``: the mock performs it when the request is ``POST
/v1/responses``. A gateway that forwards a Responses request to the provider's own Responses API is
then answered as OpenAI would answer it, and one that rewrites it to Chat Completions gets the Chat
rendering: the same logical answer, whichever the implementation chose.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from email.utils import formatdate
from typing import Any

from routeproof.mock.responses import output_item, response_body, stream_parts

__all__ = ["END_MODES", "expand_step"]

END_MODES = ("complete", "cut", "cut_mid_event", "no_end_event", "error_event", "malformed_event", "stall")
TOOL_NAME = "lookup"
_USAGE_IN, _USAGE_OUT = 12, 8


def expand_step(step: Mapping[str, Any], *, protocol: str, stream: bool, model: str) -> dict[str, Any]:
    """The mock step (control-API JSON) for one case step."""
    out = {k: v for k, v in step.items() if k != "answer"}
    if "headers" in out:
        out["headers"] = {k: _header_value(str(v)) for k, v in out["headers"].items()}
    answer = step.get("answer")
    if answer is None:
        return out
    if protocol == "openai":
        out["on_responses"] = {**out, **_answer_fields(answer, "responses", stream, model)}
    return {**out, **_answer_fields(answer, protocol, stream, model)}


def _answer_fields(answer: Mapping[str, Any], protocol: str, stream: bool, model: str) -> dict[str, Any]:
    """The mock step's fields (body, or stream events and their cut) for ``answer`` in one wire shape."""
    out: dict[str, Any] = {}
    text = str(answer.get("text", "ok"))
    tool = bool(answer.get("tool", False))
    pieces = [str(p) for p in answer.get("pieces", [text])]
    if not stream:
        out["body"] = _body(protocol, model, "".join(pieces), tool)
        return out
    end = str(answer.get("end", "complete"))
    after = int(answer.get("after_pieces", len(pieces)))
    head, deltas, tail, error, broken = _stream(protocol, model, pieces, tool)
    if protocol == "responses":  # the in-band error continues the sequence numbers of what was sent
        error = {**error, "data": {**error["data"], "sequence_number": len(head) + after}}
    items: list[Any] = [*head, *deltas[:after]]
    if end == "complete":
        items = [*head, *deltas, *tail]
    elif end in {"cut", "stall"}:
        out["cut_after_items"] = len(items)
        out["cut_mode"] = "reset" if end == "cut" else "stall"
    elif end == "cut_mid_event":
        nxt = deltas[after] if after < len(deltas) else tail[0]
        raw = _sse(nxt) if protocol != "bedrock" else None
        if raw is not None:
            items.append(raw[: len(raw) // 2])
        out["cut_after_items"] = len(items)
        out["cut_mode"] = "reset"
    elif end == "no_end_event":
        pass
    elif end == "error_event":
        items.append(error)
    elif end == "malformed_event":
        items = [*items, broken, *deltas[after:], *tail]
    else:
        raise ValueError(f"unknown answer end {end!r}; known: {END_MODES!r}")
    out["stream_events"] = items
    return out


def _header_value(value: str) -> str:
    """``@http-date+Ns`` becomes the HTTP-date N seconds from now (a Retry-After date); others stay."""
    if value.startswith("@http-date+") and value.endswith("s"):
        return formatdate(time.time() + float(value[len("@http-date+") : -1]), usegmt=True)
    return value


def _sse(event: Any) -> str | None:
    if isinstance(event, str):
        return event
    name = event.get("event")
    data = event.get("data")
    text = data if isinstance(data, str) else json.dumps(data)
    return (f"event: {name}\n" if name is not None else "") + f"data: {text}\n\n"


def _body(protocol: str, model: str, text: str, tool: bool) -> dict[str, Any]:
    args = {"query": text}
    if protocol == "responses":
        return _response_object(model, text, tool)
    if protocol == "openai":
        message: dict[str, Any] = {"role": "assistant", "content": text}
        if tool:
            fn = {"name": TOOL_NAME, "arguments": json.dumps(args)}
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "call_1", "type": "function", "function": fn}],
            }
        return {
            "id": "chatcmpl-conformance",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if tool else "stop"}],
            "usage": {
                "prompt_tokens": _USAGE_IN,
                "completion_tokens": _USAGE_OUT,
                "total_tokens": _USAGE_IN + _USAGE_OUT,
            },
        }
    if protocol == "anthropic":
        block: dict[str, Any] = (
            {"type": "tool_use", "id": "toolu_1", "name": TOOL_NAME, "input": args}
            if tool
            else {"type": "text", "text": text}
        )
        return {
            "id": "msg_conformance",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [block],
            "stop_reason": "tool_use" if tool else "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": _USAGE_IN, "output_tokens": _USAGE_OUT},
        }
    content: dict[str, Any] = (
        {"toolUse": {"toolUseId": "tooluse_1", "name": TOOL_NAME, "input": args}} if tool else {"text": text}
    )
    return {
        "output": {"message": {"role": "assistant", "content": [content]}},
        "stopReason": "tool_use" if tool else "end_turn",
        "usage": {"inputTokens": _USAGE_IN, "outputTokens": _USAGE_OUT, "totalTokens": _USAGE_IN + _USAGE_OUT},
        "metrics": {"latencyMs": 1},
    }


_Stream = tuple[list[Any], list[Any], list[Any], Any, Any]


def _stream(protocol: str, model: str, pieces: list[str], tool: bool) -> _Stream:
    """(head events, one event per piece, tail events, an in-band error event, a malformed event)."""
    if protocol == "openai":
        return _openai_stream(model, pieces, tool)
    if protocol == "anthropic":
        return _anthropic_stream(model, pieces, tool)
    if protocol == "responses":
        return _responses_stream(model, pieces, tool)
    return _bedrock_stream(pieces, tool)


_RESPONSE = {"response_id": "resp_conformance", "item_id": "conformance"}


def _response_object(model: str, text: str, tool: bool) -> dict[str, Any]:
    """OpenAI's Responses API ``response`` object (the mock's own rendering, ``mock/responses.py``)
    answering ``text``, or a call of the tool with ``{"query": text}`` as the other shapes render it."""
    tool_name = TOOL_NAME if tool else None
    whole = json.dumps({"query": text}) if tool else text
    item = output_item(item_id=_RESPONSE["item_id"], tool_name=tool_name, text=whole, done=True)
    return response_body(response_id=_RESPONSE["response_id"], request={"model": model}, item=item)


def _responses_stream(model: str, pieces: list[str], tool: bool) -> _Stream:
    """OpenAI's Responses API typed events for the answer (the mock's own, ``mock/responses.py``),
    numbered in the order they are sent; the in-band error is the API's ``error`` event."""
    head, deltas, tail = stream_parts(
        **_RESPONSE, request={"model": model}, tool_name=TOOL_NAME if tool else None, pieces=tuple(pieces)
    )
    error = {"event": "error", "data": {"type": "error", "code": "server_error",
                                        "message": "scripted in-band error: overloaded", "param": None}}  # fmt: skip
    broken = 'event: response.output_text.delta\ndata: {"type": "response.output_text.delta", "delta": "tru\n\n'
    return list(head), list(deltas), list(tail), error, broken


def _openai_stream(model: str, pieces: list[str], tool: bool) -> _Stream:
    def chunk(delta: Mapping[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": dict(delta), "finish_reason": finish}
        return {
            "data": {
                "id": "chatcmpl-conformance",
                "object": "chat.completion.chunk",
                "created": 1_700_000_000,
                "model": model,
                "choices": [choice],
            }
        }

    head = [chunk({"role": "assistant", "content": None if tool else ""})]
    if tool:
        fn = {"name": TOOL_NAME, "arguments": ""}
        head.append(chunk({"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": fn}]}))
        deltas = [chunk({"tool_calls": [{"index": 0, "function": {"arguments": p}}]}) for p in pieces]
    else:
        deltas = [chunk({"content": p}) for p in pieces]
    usage = {"prompt_tokens": _USAGE_IN, "completion_tokens": _USAGE_OUT, "total_tokens": _USAGE_IN + _USAGE_OUT}
    final = {"id": "chatcmpl-conformance", "object": "chat.completion.chunk", "created": 1_700_000_000, "model": model}
    tail = [
        chunk({}, "tool_calls" if tool else "stop"),
        {"data": {**final, "choices": [], "usage": usage}},
        {"data": "[DONE]"},
    ]
    error = {"data": {"error": {"message": "scripted in-band error: overloaded", "type": "server_error", "code": None}}}
    broken = 'data: {"id": "chatcmpl-conformance", "choices": [{"delta": {"content": "tru\n\n'
    return head, deltas, tail, error, broken


def _anthropic_stream(model: str, pieces: list[str], tool: bool) -> _Stream:
    def ev(name: str, **data: Any) -> dict[str, Any]:
        return {"event": name, "data": {"type": name, **data}}

    start: dict[str, Any] = {
        "id": "msg_conformance",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": _USAGE_IN, "output_tokens": 1},
    }
    if tool:
        block: dict[str, Any] = {"type": "tool_use", "id": "toolu_1", "name": TOOL_NAME, "input": {}}
        deltas = [
            ev("content_block_delta", index=0, delta={"type": "input_json_delta", "partial_json": p}) for p in pieces
        ]
    else:
        block = {"type": "text", "text": ""}
        deltas = [ev("content_block_delta", index=0, delta={"type": "text_delta", "text": p}) for p in pieces]
    head = [ev("message_start", message=start), ev("content_block_start", index=0, content_block=block)]
    tail = [
        ev("content_block_stop", index=0),
        ev(
            "message_delta",
            delta={"stop_reason": "tool_use" if tool else "end_turn", "stop_sequence": None},
            usage={"output_tokens": _USAGE_OUT},
        ),
        ev("message_stop"),
    ]
    error = {
        "event": "error",
        "data": {"type": "error", "error": {"type": "overloaded_error", "message": "scripted in-band error"}},
    }
    broken = 'event: content_block_delta\ndata: {"type": "content_block_delta", "index": 0, "delta": {\n\n'
    return head, deltas, tail, error, broken


def _bedrock_stream(pieces: list[str], tool: bool) -> _Stream:
    head: list[Any] = [{"event": "messageStart", "data": {"role": "assistant"}}]
    if tool:
        start = {"toolUse": {"toolUseId": "tooluse_1", "name": TOOL_NAME}}
        head.append({"event": "contentBlockStart", "data": {"start": start, "contentBlockIndex": 0}})
        deltas = [
            {"event": "contentBlockDelta", "data": {"delta": {"toolUse": {"input": p}}, "contentBlockIndex": 0}}
            for p in pieces
        ]
    else:
        deltas = [
            {"event": "contentBlockDelta", "data": {"delta": {"text": p}, "contentBlockIndex": 0}} for p in pieces
        ]
    usage = {"inputTokens": _USAGE_IN, "outputTokens": _USAGE_OUT, "totalTokens": _USAGE_IN + _USAGE_OUT}
    tail = [
        {"event": "contentBlockStop", "data": {"contentBlockIndex": 0}},
        {"event": "messageStop", "data": {"stopReason": "tool_use" if tool else "end_turn"}},
        {"event": "metadata", "data": {"usage": usage, "metrics": {"latencyMs": 1}}},
    ]
    error = {
        "event": "modelStreamErrorException",
        "message_type": "exception",
        "data": {"message": "scripted in-band error"},
    }
    broken = {"b64": "AAAAEAAAAABnYXJiYWdlISE="}  # a prelude whose CRC is wrong
    return head, deltas, tail, error, broken
