"""The three wire shapes: routes, auth, default answers, error bodies and stream encodings.

Default answers follow the providers' documented JSON: Anthropic Messages, OpenAI Chat Completions
and Bedrock Converse. When the request declares tools, the default answer calls the first tool with
``DEFAULT_TOOL_INPUT``; otherwise it answers ``DEFAULT_TEXT``. Usage is always
``DEFAULT_INPUT_TOKENS`` / ``DEFAULT_OUTPUT_TOKENS``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import unquote

from routeproof.mock.eventstream import encode_event, encode_exception
from routeproof.mock.script import Shape, StreamItem
from routeproof.mock.variants import (
    OPENAI_VARIANTS,
    azure_filter_annotations,
    variant_auth_present,
    variant_error,
    variant_route,
)

__all__ = [
    "DEFAULT_INPUT_TOKENS",
    "DEFAULT_OUTPUT_TOKENS",
    "DEFAULT_TEXT",
    "DEFAULT_TOOL_INPUT",
    "RequestView",
    "auth_failure_status",
    "auth_present",
    "default_body",
    "default_stream",
    "encode_stream_item",
    "error_answer",
    "malformed_body",
    "malformed_stream",
    "match_route",
    "stream_content_type",
]

DEFAULT_TEXT = "Hello from the routeproof mock."
_TEXT_PIECES = ("Hello", " from the", " routeproof mock.")
DEFAULT_TOOL_INPUT = '{"query": "routeproof mock"}'
_TOOL_PIECES = ('{"query": ', '"routeproof', ' mock"}')
DEFAULT_INPUT_TOKENS = 12
DEFAULT_OUTPUT_TOKENS = 8
_BEDROCK_PATH = re.compile(r"^/model/([^/]+)/(converse|converse-stream)$")


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestView:
    """What the shapes need to know about a request."""

    model: str
    stream: bool
    tool_name: str | None
    include_usage: bool  # OpenAI stream_options.include_usage


def match_route(shape: Shape, method: str, path: str, body: object) -> RequestView | int:
    """The request view for a provider route, or the HTTP status (404/405) when it is not one."""
    obj: Mapping[str, object] = body if isinstance(body, Mapping) else {}
    routed = variant_route(shape, path, obj) if shape in OPENAI_VARIANTS else None
    path = path.split("?", 1)[0]
    if isinstance(routed, int):
        return routed
    if routed is not None:
        model, stream = routed
    elif shape is Shape.BEDROCK:
        m = _BEDROCK_PATH.match(path)
        if m is None:
            return 404
        model, stream = unquote(m.group(1)), m.group(2) == "converse-stream"
    else:
        wanted = (
            ("/v1/messages", "/messages") if shape is Shape.ANTHROPIC else ("/v1/chat/completions", "/chat/completions")
        )
        if path not in wanted:
            return 404
        model, stream = str(obj.get("model", "mock-model")), obj.get("stream") is True
    if method != "POST":
        return 405
    options = obj.get("stream_options")
    include_usage = isinstance(options, Mapping) and options.get("include_usage") is True
    return RequestView(model=model, stream=stream, tool_name=_first_tool(shape, obj), include_usage=include_usage)


def _first_tool(shape: Shape, body: Mapping[str, object]) -> str | None:
    tools: object = body.get("tools")
    if shape is Shape.BEDROCK:
        config = body.get("toolConfig")
        tools = config.get("tools") if isinstance(config, Mapping) else None
    if not isinstance(tools, list) or not tools or not isinstance(tools[0], Mapping):
        return None
    first: Mapping[str, object] = tools[0]
    inner = {
        Shape.OPENAI: "function",
        Shape.AZURE: "function",
        Shape.GEMINI: "function",
        Shape.BEDROCK: "toolSpec",
    }.get(shape)
    if inner is not None:
        nested = first.get(inner)
        first = nested if isinstance(nested, Mapping) else {}
    name = first.get("name")
    return name if isinstance(name, str) else None


def auth_failure_status(shape: Shape) -> int:
    """The status a request without credentials gets: 403 from AWS (Bedrock), 401 elsewhere."""
    return 403 if shape is Shape.BEDROCK else 401


def auth_present(shape: Shape, headers: Mapping[str, str]) -> bool:
    """Whether the request carries the shape's credentials (the value itself is never kept).

    Anthropic accepts ``x-api-key`` or ``Authorization: Bearer`` (what the official SDK sends for an
    auth token); OpenAI a Bearer token; Bedrock a SigV4 ``Authorization``.
    """
    if shape in OPENAI_VARIANTS:
        return variant_auth_present(shape, headers)
    auth = headers.get("authorization", "")
    bearer = auth.startswith("Bearer ") and len(auth) > len("Bearer ")
    if shape is Shape.ANTHROPIC:
        return bool(headers.get("x-api-key")) or bearer
    if shape is Shape.OPENAI:
        return bearer
    return auth.startswith("AWS4-HMAC-SHA256 ")


def request_id(shape: Shape, serial: int) -> str:
    """The id a provider gives request number ``serial`` (Anthropic ``req_…``, OpenAI ``req_…``, AWS a UUID)."""
    if shape is Shape.BEDROCK:
        return f"00000000-0000-4000-8000-{serial:012d}"
    return f"req_mock{serial:016d}"


def request_id_headers(shape: Shape, rid: str) -> tuple[tuple[str, str], ...]:
    """The header(s) each API names its request id in: ``request-id`` (Anthropic), ``x-request-id``
    (OpenAI), ``x-amzn-RequestId`` (Bedrock)."""
    names = {Shape.ANTHROPIC: "request-id", Shape.OPENAI: "x-request-id", Shape.BEDROCK: "x-amzn-RequestId"}
    name = names.get(shape, "apim-request-id" if shape is Shape.AZURE else "x-request-id")
    return ((name, rid),)


_ANTHROPIC_ERRORS = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}
_BEDROCK_ERRORS = {
    400: "ValidationException",
    401: "UnrecognizedClientException",
    403: "AccessDeniedException",
    404: "ResourceNotFoundException",
    408: "ModelTimeoutException",
    424: "ModelErrorException",
    429: "ThrottlingException",
    503: "ServiceUnavailableException",
}


_OPENAI_ERRORS: dict[int, tuple[str, str | None]] = {  # status -> (type, code), as api.openai.com answers
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("invalid_request_error", "unsupported_country_region_territory"),
    404: ("invalid_request_error", "model_not_found"),
    429: ("requests", "rate_limit_exceeded"),
}


def error_answer(
    shape: Shape, status: int, message: str, *, request_id: str | None = None
) -> tuple[object, tuple[tuple[str, str], ...]]:
    """The shape's error JSON for ``status`` and any extra headers it carries.

    Anthropic: ``{"type": "error", "error": {"type", "message"}, "request_id"}``; OpenAI:
    ``{"error": {"message", "type", "param", "code"}}`` with the real type and code per status
    (429: ``requests`` / ``rate_limit_exceeded``); Bedrock: ``{"message"}`` and ``x-amzn-ErrorType``.
    """
    if shape in OPENAI_VARIANTS:
        return variant_error(shape, status, message)
    if shape is Shape.ANTHROPIC:
        kind = _ANTHROPIC_ERRORS.get(status, "api_error")
        anthropic: dict[str, object] = {"type": "error", "error": {"type": kind, "message": message}}
        if request_id is not None:
            anthropic["request_id"] = request_id
        return anthropic, ()
    if shape is Shape.OPENAI:
        kind, code = _OPENAI_ERRORS.get(status, ("invalid_request_error" if status < 500 else "server_error", None))
        return {"error": {"message": message, "type": kind, "param": None, "code": code}}, ()
    kind = _BEDROCK_ERRORS.get(status, "InternalServerException")
    return {"message": message}, (("x-amzn-ErrorType", f"{kind}:http://internal.amazon.com/coral/com.amazon.bedrock/"),)


def default_body(shape: Shape, view: RequestView) -> dict[str, object]:
    """The well-formed non-streamed answer for the shape."""
    if shape is Shape.AZURE:
        return azure_filter_annotations(default_body(Shape.OPENAI, view))
    if shape is Shape.GEMINI:
        return default_body(Shape.OPENAI, view)
    tool = view.tool_name
    if shape is Shape.ANTHROPIC:
        block: dict[str, object] = (
            {"type": "tool_use", "id": "toolu_mock_1", "name": tool, "input": json.loads(DEFAULT_TOOL_INPUT)}
            if tool
            else {"type": "text", "text": DEFAULT_TEXT}
        )
        return {
            "id": "msg_mock_1",
            "type": "message",
            "role": "assistant",
            "model": view.model,
            "content": [block],
            "stop_reason": "tool_use" if tool else "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": DEFAULT_INPUT_TOKENS, "output_tokens": DEFAULT_OUTPUT_TOKENS},
        }
    if shape is Shape.OPENAI:
        message: dict[str, object] = {"role": "assistant", "content": DEFAULT_TEXT, "refusal": None}
        if tool:
            call = {
                "id": "call_mock_1",
                "type": "function",
                "function": {"name": tool, "arguments": DEFAULT_TOOL_INPUT},
            }
            message = {"role": "assistant", "content": None, "refusal": None, "tool_calls": [call]}
        return {
            "id": "chatcmpl-mock-1",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": view.model,
            "choices": [
                {"index": 0, "message": message, "logprobs": None, "finish_reason": "tool_calls" if tool else "stop"}
            ],
            "usage": _openai_usage(),
        }
    content: dict[str, object] = (
        {"toolUse": {"toolUseId": "tooluse_mock_1", "name": tool, "input": json.loads(DEFAULT_TOOL_INPUT)}}
        if tool
        else {"text": DEFAULT_TEXT}
    )
    return {
        "output": {"message": {"role": "assistant", "content": [content]}},
        "stopReason": "tool_use" if tool else "end_turn",
        "usage": _bedrock_usage(),
        "metrics": {"latencyMs": 1},
    }


def _openai_usage() -> dict[str, int]:
    total = DEFAULT_INPUT_TOKENS + DEFAULT_OUTPUT_TOKENS
    return {"prompt_tokens": DEFAULT_INPUT_TOKENS, "completion_tokens": DEFAULT_OUTPUT_TOKENS, "total_tokens": total}


def _bedrock_usage() -> dict[str, int]:
    total = DEFAULT_INPUT_TOKENS + DEFAULT_OUTPUT_TOKENS
    return {"inputTokens": DEFAULT_INPUT_TOKENS, "outputTokens": DEFAULT_OUTPUT_TOKENS, "totalTokens": total}


def stream_content_type(shape: Shape) -> str:
    """Content-Type of a streamed answer."""
    return "application/vnd.amazon.eventstream" if shape is Shape.BEDROCK else "text/event-stream; charset=utf-8"


def encode_stream_item(shape: Shape, item: StreamItem) -> bytes:
    """Wire bytes for one stream item: raw items verbatim, mappings as an SSE or event-stream event."""
    if isinstance(item, bytes):
        return item
    if isinstance(item, str):
        return item.encode("utf-8")
    name = item.get("event")
    data = item.get("data", {})
    if shape is Shape.BEDROCK:
        if item.get("message_type") == "exception":
            return encode_exception(str(name), str(data.get("message", "")) if isinstance(data, Mapping) else str(data))
        if not isinstance(data, Mapping):
            raise ValueError(f"a Bedrock stream event needs object data, got {data!r}")
        return encode_event(str(name), data)
    text = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {name}\n" if name is not None else ""
    return (head + "".join(f"data: {line}\n" for line in text.split("\n")) + "\n").encode("utf-8")


def default_stream(shape: Shape, view: RequestView) -> tuple[dict[str, object], ...]:
    """The documented event sequence of a successful streamed answer."""
    if shape is Shape.ANTHROPIC:
        return _anthropic_stream(view)
    if shape is Shape.OPENAI or shape in OPENAI_VARIANTS:
        return _openai_stream(view)
    return _bedrock_stream(view)


def _anthropic_stream(view: RequestView) -> tuple[dict[str, object], ...]:
    def ev(name: str, **data: object) -> dict[str, object]:
        return {"event": name, "data": {"type": name, **data}}

    start_msg: dict[str, object] = {
        "id": "msg_mock_1",
        "type": "message",
        "role": "assistant",
        "model": view.model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": DEFAULT_INPUT_TOKENS, "output_tokens": 1},
    }
    events = [ev("message_start", message=start_msg), ev("ping")]
    if view.tool_name:
        block = {"type": "tool_use", "id": "toolu_mock_1", "name": view.tool_name, "input": {}}
        deltas = [{"type": "input_json_delta", "partial_json": p} for p in _TOOL_PIECES]
    else:
        block = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": p} for p in _TEXT_PIECES]
    events.append(ev("content_block_start", index=0, content_block=block))
    events += [ev("content_block_delta", index=0, delta=d) for d in deltas]
    events.append(ev("content_block_stop", index=0))
    stop = "tool_use" if view.tool_name else "end_turn"
    events.append(
        ev(
            "message_delta",
            delta={"stop_reason": stop, "stop_sequence": None},
            usage={"output_tokens": DEFAULT_OUTPUT_TOKENS},
        )
    )
    events.append(ev("message_stop"))
    return tuple(events)


def _openai_stream(view: RequestView) -> tuple[dict[str, object], ...]:
    def chunk(delta: Mapping[str, object], finish: str | None = None) -> dict[str, object]:
        data: dict[str, object] = {
            "id": "chatcmpl-mock-1",
            "object": "chat.completion.chunk",
            "created": 1_700_000_000,
            "model": view.model,
            "choices": [{"index": 0, "delta": dict(delta), "logprobs": None, "finish_reason": finish}],
        }
        if view.include_usage:
            data["usage"] = None
        return {"data": data}

    events = [chunk({"role": "assistant", "content": "" if not view.tool_name else None})]
    if view.tool_name:
        first = {
            "index": 0,
            "id": "call_mock_1",
            "type": "function",
            "function": {"name": view.tool_name, "arguments": ""},
        }
        events.append(chunk({"tool_calls": [first]}))
        events += [chunk({"tool_calls": [{"index": 0, "function": {"arguments": p}}]}) for p in _TOOL_PIECES]
    else:
        events += [chunk({"content": p}) for p in _TEXT_PIECES]
    events.append(chunk({}, "tool_calls" if view.tool_name else "stop"))
    if view.include_usage:
        final = {"id": "chatcmpl-mock-1", "object": "chat.completion.chunk", "created": 1_700_000_000}
        events.append({"data": {**final, "model": view.model, "choices": [], "usage": _openai_usage()}})
    events.append({"data": "[DONE]"})
    return tuple(events)


def _bedrock_stream(view: RequestView) -> tuple[dict[str, object], ...]:
    events: list[dict[str, object]] = [{"event": "messageStart", "data": {"role": "assistant"}}]
    if view.tool_name:
        start = {"toolUse": {"toolUseId": "tooluse_mock_1", "name": view.tool_name}}
        events.append({"event": "contentBlockStart", "data": {"start": start, "contentBlockIndex": 0}})
        deltas: list[dict[str, object]] = [{"toolUse": {"input": p}} for p in _TOOL_PIECES]
    else:
        deltas = [{"text": p} for p in _TEXT_PIECES]
    events += [{"event": "contentBlockDelta", "data": {"delta": d, "contentBlockIndex": 0}} for d in deltas]
    events.append({"event": "contentBlockStop", "data": {"contentBlockIndex": 0}})
    stop = "tool_use" if view.tool_name else "end_turn"
    events.append({"event": "messageStop", "data": {"stopReason": stop}})
    events.append({"event": "metadata", "data": {"usage": _bedrock_usage(), "metrics": {"latencyMs": 1}}})
    return tuple(events)


def malformed_body(shape: Shape, view: RequestView) -> bytes:
    """A syntactically broken JSON body: the default answer cut in the middle of a string."""
    text = json.dumps(default_body(shape, view))
    return text[: len(text) // 2].encode("utf-8")


def malformed_stream(shape: Shape, view: RequestView) -> tuple[bytes, ...]:
    """The first events of the default stream, then one broken event; the stream then simply ends."""
    good = tuple(encode_stream_item(shape, e) for e in default_stream(shape, view)[:2])
    if shape is Shape.BEDROCK:
        broken = encode_event("contentBlockDelta", {"delta": {"text": "x"}, "contentBlockIndex": 0}, corrupt_crc=True)
    elif shape is Shape.ANTHROPIC:
        broken = b'event: content_block_delta\ndata: {"type": "content_block_delta", "index": 0, "delta": {\n\n'
    else:
        broken = b'data: {"id": "chatcmpl-mock-1", "choices": [{"delta": {"content": "tru\n\n'
    return (*good, broken)
