"""The OpenAI shape's ``POST /v1/responses``: OpenAI's Responses API, with its state kept in memory.

What the real service does, at the scale a test needs (its public API reference, "Create a model
response" and "Streaming events"):

- a ``response`` object, or (``"stream": true``) typed SSE events: ``response.created``,
  ``response.in_progress``, per output item ``response.output_item.added`` / ``.done``, a
  message's ``response.content_part.added`` / ``.done`` and ``response.output_text.delta`` /
  ``.done``, a function call's ``response.function_call_arguments.delta`` / ``.done``, then
  ``response.completed``; every event with its ``sequence_number``;
- ``store`` (default true) keeps the response, so a later request's ``previous_response_id``
  continues it: the answer then repeats what the user said earlier (``Earlier you said: ...``),
  which only a kept conversation can know; an unknown ``previous_response_id`` is OpenAI's 400
  (``param: previous_response_id``), and a ``reasoning`` input item whose id it never issued is its
  404 ("Item with id ... not found", ``param: input``);
- with function tools, and no ``function_call_output`` as the last input item, the model calls the
  first tool with ``DEFAULT_TOOL_INPUT``; otherwise it answers ``DEFAULT_TEXT``.

The scripting of the mock (errors, cuts, scripted bodies or events) applies as on every route.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from routeproof.mock.shapes import (
    _TEXT_PIECES,
    _TOOL_PIECES,
    DEFAULT_INPUT_TOKENS,
    DEFAULT_OUTPUT_TOKENS,
    DEFAULT_TEXT,
    DEFAULT_TOOL_INPUT,
    RequestView,
)

__all__ = [
    "RESPONSES_PATHS",
    "ResponsesBook",
    "ResponsesTurn",
    "StreamParts",
    "UnknownPrevious",
    "is_responses_path",
    "output_item",
    "response_body",
    "responses_view",
    "stream_parts",
]

RESPONSES_PATHS = ("/v1/responses", "/responses")
"""Where the OpenAI shape serves the Responses API (with and without the ``/v1`` prefix)."""


def is_responses_path(target: str) -> bool:
    """Whether a request target is the Responses endpoint (any query string ignored)."""
    return target.split("?", 1)[0] in RESPONSES_PATHS


class UnknownPrevious(Exception):
    """The request names state the service does not hold; ``status`` and ``answer`` are OpenAI's.

    ``previous_response_id`` naming no stored response: 400, ``param: previous_response_id``. A
    ``reasoning`` input item whose id the service never issued (a reasoning item another gateway
    made up, say): 404, ``param: input``, "Item with id ... not found" as the service says it."""

    def __init__(self, response_id: object, *, item: bool = False) -> None:
        super().__init__(response_id)
        self.status = 404 if item else 400
        if item:
            message = (
                f"Item with id {response_id!r} not found. Items are not persisted when `store` is set to false. "
                "Try again with `store` set to true, or remove this item from your input."
            )
            error = {"message": message, "type": "invalid_request_error", "param": "input", "code": None}
        else:
            error = {
                "message": f"Previous response with id {response_id!r} not found.",
                "type": "invalid_request_error",
                "param": "previous_response_id",
                "code": "previous_response_not_found",
            }
        self.answer = {"error": error}


def _user_texts(items: list[Any]) -> list[str]:
    out: list[str] = []
    for item in items:
        if not isinstance(item, dict) or item.get("role") != "user":
            continue
        content = item.get("content")
        if isinstance(content, str):
            out.append(content)
        elif isinstance(content, list):
            out += [p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)]
    return out


def _items(raw: object) -> list[Any]:
    if isinstance(raw, str):
        return [{"type": "message", "role": "user", "content": raw}]
    return list(raw) if isinstance(raw, list) else []


def output_item(*, item_id: str, tool_name: str | None, text: str, done: bool) -> dict[str, Any]:
    """One output item: a ``function_call`` of ``tool_name`` with ``text`` as its arguments, or a
    ``message`` whose ``output_text`` is ``text`` (``done``: completed, else in progress and empty)."""
    status = "completed" if done else "in_progress"
    if tool_name is not None:
        return {
            "id": f"fc_{item_id}", "type": "function_call", "status": status,
            "call_id": f"call_{item_id}", "name": tool_name, "arguments": text if done else "",
        }  # fmt: skip
    content = [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}] if done else []
    return {"id": f"msg_{item_id}", "type": "message", "status": status, "role": "assistant", "content": content}


def response_body(
    *, response_id: str, request: Mapping[str, Any], item: dict[str, Any], done: bool = True
) -> dict[str, Any]:
    """The ``response`` object answering ``request`` with the completed ``item`` (``done``: completed,
    with output and usage; else in progress, no output yet)."""
    usage = {
        "input_tokens": DEFAULT_INPUT_TOKENS, "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": DEFAULT_OUTPUT_TOKENS, "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": DEFAULT_INPUT_TOKENS + DEFAULT_OUTPUT_TOKENS,
    }  # fmt: skip
    return {
        "id": response_id,
        "object": "response",
        "created_at": int(time.time()),
        "status": "completed" if done else "in_progress",
        "model": str(request.get("model", "mock-model")),
        "output": [item] if done else [],
        "error": None,
        "incomplete_details": None,
        "usage": usage if done else None,
        "store": request.get("store") is not False,
        "previous_response_id": request.get("previous_response_id"),
        "background": False,
        "truncation": "disabled",
        "instructions": request.get("instructions"),
        "tools": request.get("tools") or [],
        "tool_choice": request.get("tool_choice") or "auto",
        "temperature": request.get("temperature", 1.0),
        "top_p": request.get("top_p", 1.0),
        "parallel_tool_calls": request.get("parallel_tool_calls") is not False,
        "metadata": request.get("metadata") or {},
        "max_output_tokens": request.get("max_output_tokens"),
        "text": request.get("text") or {"format": {"type": "text"}},
        "reasoning": request.get("reasoning") or {"effort": None, "summary": None},
        "user": request.get("user"),
    }


StreamParts = tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]
"""A typed event stream as (head, one delta per piece, tail): a script can cut it after any delta."""


def stream_parts(
    *, response_id: str, request: Mapping[str, Any], item_id: str, tool_name: str | None, pieces: tuple[str, ...]
) -> StreamParts:
    """The typed SSE events (mock stream items) answering with ``pieces`` of text (or of a call's
    arguments), numbered 0, 1, 2, ... in the order they are sent."""
    seq = iter(range(1 << 30))

    def ev(kind: str, **fields: Any) -> dict[str, Any]:
        return {"event": kind, "data": {"type": kind, "sequence_number": next(seq), **fields}}

    whole = "".join(pieces)
    done = output_item(item_id=item_id, tool_name=tool_name, text=whole, done=True)
    opening = output_item(item_id=item_id, tool_name=tool_name, text="", done=False)
    where = {"item_id": opening["id"], "output_index": 0}
    head = [
        ev("response.created", response=response_body(response_id=response_id, request=request, item=done, done=False)),
        ev(
            "response.in_progress",
            response=response_body(response_id=response_id, request=request, item=done, done=False),
        ),
        ev("response.output_item.added", output_index=0, item=opening),
    ]
    if tool_name is not None:
        deltas = [ev("response.function_call_arguments.delta", **where, delta=p) for p in pieces]
        close = [ev("response.function_call_arguments.done", **where, arguments=whole)]
    else:
        empty = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
        head.append(ev("response.content_part.added", **where, content_index=0, part=empty))
        deltas = [ev("response.output_text.delta", **where, content_index=0, delta=p, logprobs=[]) for p in pieces]
        close = [
            ev("response.output_text.done", **where, content_index=0, text=whole, logprobs=[]),
            ev("response.content_part.done", **where, content_index=0, part={**empty, "text": whole}),
        ]
    tail = [
        *close,
        ev("response.output_item.done", output_index=0, item=done),
        ev("response.completed", response=response_body(response_id=response_id, request=request, item=done)),
    ]
    return head, deltas, tail


@dataclass(frozen=True, slots=True, kw_only=True)
class ResponsesTurn:
    """One Responses request's answer: its ``response`` object and its stream events."""

    response_id: str
    serial: int
    request: Mapping[str, Any]
    history: tuple[Any, ...]  # the stored conversation it continues (input and output items)
    tool_name: str | None

    def _text(self) -> str:
        earlier = _user_texts(list(self.history))
        return DEFAULT_TEXT if not earlier else f"{DEFAULT_TEXT} Earlier you said: {' | '.join(earlier)}"

    def _pieces(self) -> tuple[str, ...]:
        if self.tool_name is not None:
            return _TOOL_PIECES
        text = self._text()
        return (*_TEXT_PIECES, text[len(DEFAULT_TEXT) :]) if text != DEFAULT_TEXT else _TEXT_PIECES

    def body(self) -> dict[str, Any]:
        """The completed ``response`` object."""
        whole = DEFAULT_TOOL_INPUT if self.tool_name is not None else self._text()
        item = output_item(item_id=f"mock_{self.serial}", tool_name=self.tool_name, text=whole, done=True)
        return response_body(response_id=self.response_id, request=self.request, item=item)

    def events(self) -> tuple[dict[str, object], ...]:
        """The typed SSE events of the streamed answer, as mock stream items."""
        head, deltas, tail = stream_parts(
            response_id=self.response_id, request=self.request, item_id=f"mock_{self.serial}",
            tool_name=self.tool_name, pieces=self._pieces(),
        )  # fmt: skip
        return (*head, *deltas, *tail)


class ResponsesBook:
    """The mock's response store: each stored response's conversation (input and output items)."""

    def __init__(self) -> None:
        self._stored: dict[str, tuple[Any, ...]] = {}

    def clear(self) -> None:
        """Forget every stored response."""
        self._stored.clear()

    def keep(self, turn: ResponsesTurn) -> None:
        """Store ``turn``'s conversation under its response id, unless its request says ``store: false``."""
        if turn.request.get("store") is not False:
            inputs = _items(turn.request.get("input"))
            self._stored[turn.response_id] = (*turn.history, *inputs, *turn.body()["output"])

    def turn(self, request: Mapping[str, Any], serial: int) -> ResponsesTurn:
        """The answer to ``request`` (not yet stored: :meth:`keep`).

        :raises UnknownPrevious: ``previous_response_id`` names no stored response.
        """
        previous = request.get("previous_response_id")
        history: tuple[Any, ...] = ()
        if previous is not None:
            if previous not in self._stored:
                raise UnknownPrevious(previous)
            history = self._stored[str(previous)]
        inputs = _items(request.get("input"))
        for item in inputs:  # the mock issues no reasoning items: any such id is unknown to it
            if isinstance(item, dict) and item.get("type") == "reasoning" and item.get("encrypted_content") is None:
                raise UnknownPrevious(item.get("id"), item=True)
        tools = [t for t in request.get("tools") or () if isinstance(t, dict) and t.get("type") == "function"]
        answered = bool(inputs) and isinstance(inputs[-1], dict) and inputs[-1].get("type") == "function_call_output"
        tool_name = str(tools[0].get("name")) if tools and not answered else None
        return ResponsesTurn(
            response_id=f"resp_mock_{serial}", serial=serial, request=request, history=history, tool_name=tool_name
        )


def responses_view(request: Mapping[str, Any], turn: ResponsesTurn) -> RequestView:
    """The request view the mock's scripting sees for a Responses request."""
    return RequestView(
        model=str(request.get("model", "mock-model")),
        stream=request.get("stream") is True,
        tool_name=turn.tool_name,
        include_usage=False,
    )
