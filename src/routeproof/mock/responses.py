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
    "UnknownPrevious",
    "is_responses_path",
    "responses_view",
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

    def _item(self, done: bool) -> dict[str, Any]:
        status = "completed" if done else "in_progress"
        if self.tool_name is not None:
            return {
                "id": f"fc_mock_{self.serial}", "type": "function_call", "status": status,
                "call_id": f"call_mock_{self.serial}", "name": self.tool_name,
                "arguments": DEFAULT_TOOL_INPUT if done else "",
            }  # fmt: skip
        content = [{"type": "output_text", "text": self._text(), "annotations": [], "logprobs": []}] if done else []
        return {"id": f"msg_mock_{self.serial}", "type": "message", "status": status, "role": "assistant",
                "content": content}  # fmt: skip

    def body(self, *, done: bool = True) -> dict[str, Any]:
        """The ``response`` object (``done``: completed, with output and usage; else in progress)."""
        request = self.request
        usage = {
            "input_tokens": DEFAULT_INPUT_TOKENS, "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "output_tokens": DEFAULT_OUTPUT_TOKENS, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": DEFAULT_INPUT_TOKENS + DEFAULT_OUTPUT_TOKENS,
        }  # fmt: skip
        return {
            "id": self.response_id,
            "object": "response",
            "created_at": int(time.time()),
            "status": "completed" if done else "in_progress",
            "model": str(request.get("model", "mock-model")),
            "output": [self._item(True)] if done else [],
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

    def events(self) -> tuple[dict[str, object], ...]:
        """The typed SSE events of the streamed answer, as mock stream items."""
        out: list[dict[str, Any]] = []

        def emit(kind: str, **fields: Any) -> None:
            out.append({"event": kind, "data": {"type": kind, "sequence_number": len(out), **fields}})

        emit("response.created", response=self.body(done=False))
        emit("response.in_progress", response=self.body(done=False))
        item = self._item(False)
        where = {"item_id": item["id"], "output_index": 0}
        emit("response.output_item.added", output_index=0, item=item)
        if self.tool_name is not None:
            for piece in _TOOL_PIECES:
                emit("response.function_call_arguments.delta", **where, delta=piece)
            emit("response.function_call_arguments.done", **where, arguments=DEFAULT_TOOL_INPUT)
        else:
            text = self._text()
            pieces = (*_TEXT_PIECES, text[len(DEFAULT_TEXT) :]) if text != DEFAULT_TEXT else _TEXT_PIECES
            empty = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
            emit("response.content_part.added", **where, content_index=0, part=empty)
            for piece in pieces:
                emit("response.output_text.delta", **where, content_index=0, delta=piece, logprobs=[])
            emit("response.output_text.done", **where, content_index=0, text=text, logprobs=[])
            emit("response.content_part.done", **where, content_index=0, part={**empty, "text": text})
        emit("response.output_item.done", output_index=0, item=self._item(True))
        emit("response.completed", response=self.body())
        return tuple(out)


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
