"""Shared pieces of the translators: wire extras, the o-series test and typed readers.

Every reader turns a malformed value into a :class:`TranslationError` naming the field path, so
the parse and response modules never raise KeyError, TypeError or IndexError on foreign input.
Internal to ``translate*``; the public names are re-exported by :mod:`routeproof.core.formats.translate`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from routeproof.core.errors import TranslationError
from routeproof.core.formats.wire import as_json_object, compact_json
from routeproof.core.types import ChatRequest, Message

_O_SERIES = re.compile(r"^o\d+(-|$)")

IS_ERROR_MARKER = "[tool error]"
"""The first text part of an OpenAI tool message that carries an ``is_error`` tool result.

OpenAI has no error flag on tool messages. routeproof sends an error result as the content parts
``[IS_ERROR_MARKER, content]`` (the model reads it as an error report) and reads exactly that shape
back as ``is_error=True``; a non-error result is always sent as a plain string, so the encoding is
one-to-one on what routeproof emits."""
_ANTHROPIC_REQUEST_KEYS = frozenset(
    {
        "model", "max_tokens", "system", "messages", "tools", "temperature", "top_p", "top_k", "stop_sequences",
        "stream", "tool_choice", "metadata", "thinking", "output_config", "service_tier",
    }
)  # fmt: skip
"""The top-level Anthropic request keys the neutral request carries (others: ``WireExtras.untranslated``)."""
_OPENAI_REQUEST_KEYS = frozenset(
    {
        "model", "messages", "max_tokens", "max_completion_tokens", "tools", "temperature", "top_p", "stop",
        "stream", "stream_options", "tool_choice", "user", "seed", "n", "parallel_tool_calls", "logprobs",
        "top_logprobs", "frequency_penalty", "presence_penalty", "service_tier", "response_format",
        "reasoning_effort",
    }
)  # fmt: skip
"""The top-level OpenAI request keys the neutral request carries (others: ``WireExtras.untranslated``)."""

_KEYS_TYPE_TEXT = frozenset({"type", "text"})
_KEYS_TYPE_ID_NAME_INPUT = frozenset({"type", "id", "name", "input"})
_KEYS_TYPE_TOOL_USE_ID_CONTENT_IS_ERROR = frozenset({"type", "tool_use_id", "content", "is_error"})
_KEYS_ROLE_CONTENT = frozenset({"role", "content"})
_KEYS_NAME_DESCRIPTION_INPUT_SCHEMA = frozenset({"name", "description", "input_schema"})
_KEYS_ID_TYPE_FUNCTION = frozenset({"id", "type", "function"})
_KEYS_NAME_ARGUMENTS = frozenset({"name", "arguments"})
_KEYS_ROLE_CONTENT_TOOL_CALLS = frozenset({"role", "content", "tool_calls"})
_KEYS_ROLE_CONTENT_TOOL_CALL_ID = frozenset({"role", "content", "tool_call_id"})
_KEYS_NAME_DESCRIPTION_PARAMETERS = frozenset({"name", "description", "parameters"})


@dataclass(frozen=True, slots=True, kw_only=True)
class WireExtras:
    """What a wire request carries besides the ChatRequest: tool_choice is kept in Anthropic form."""

    model: str = ""
    stream: bool | None = None
    top_p: float | None = None
    tool_choice: tuple[str, str] | None = None  # (type, tool name or "")
    # What the parse did not carry: top-level keys ("verbosity") and block paths
    # ("messages[2].content[0]" for a whole block, "tools[1].function.x" for a key), in body order.
    # Same protocol: sent verbatim from ChatRequest.origin; another: looked up in core/formats/field_table.py.
    untranslated: tuple[str, ...] = ()
    output_cap_given: bool = True  # False: the OpenAI body set no cap (ChatRequest.max_tokens is the default)


def is_o_series(model: str) -> bool:
    """Whether ``model`` is an OpenAI reasoning model (o1, o3-mini, openai/o4-mini...)."""
    return _O_SERIES.match(model.rsplit("/", 1)[-1]) is not None


# --- small typed readers: every malformed value becomes a TranslationError naming it ------------


def _obj(value: object, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise TranslationError(f"{where} must be an object, got {type(value).__name__}")
    return value


def _list(value: object, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise TranslationError(f"{where} must be an array, got {type(value).__name__}")
    # A list subclass may redefine len() (CrossHair found email.header._Accumulator): read its items.
    return value if type(value) is list else list(iter(value))


def _str(value: object, where: str) -> str:
    if not isinstance(value, str):
        raise TranslationError(f"{where} must be a string, got {type(value).__name__}")
    return value


def _num(value: object, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TranslationError(f"{where} must be a number, got {type(value).__name__}")
    return value


def _int(value: object, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise TranslationError(f"{where} must be a non-negative integer, got {value!r}")
    return value


def _opt_int(value: object, where: str) -> int:
    """An optional count: absent or null is 0; any other non-count raises (``False`` is not 0)."""
    return 0 if value is None else _int(value, where)


def _extra_keys(body: dict[str, Any], allowed: frozenset[str], where: str, sink: list[str]) -> None:
    """Record every key of ``body`` outside ``allowed`` as ``where.key`` (``key`` at the top level)."""
    for key in body:
        if key not in allowed:
            sink.append(f"{where}.{key}" if where else key)


def _only_keys(body: dict[str, Any], allowed: frozenset[str], where: str) -> None:
    for key in body:
        if key not in allowed:
            raise TranslationError(f"{where}.{key} has no equivalent in the other format")


def _args_json(value: object, where: str) -> str:
    try:
        return compact_json(_obj(value, where))
    except (ValueError, RecursionError) as exc:
        raise TranslationError(f"{where} is not representable as JSON: {exc}") from exc


def _parsed_args(text: str, where: str) -> dict[str, Any]:
    parsed = as_json_object(text)
    if parsed is None:
        raise TranslationError(f"{where} is not a JSON object: {text[:80]!r}")
    return parsed


def _merge_turns(messages: list[Message]) -> tuple[Message, ...]:
    merged: list[Message] = []
    for message in messages:
        if merged and merged[-1].role is message.role:
            merged[-1] = Message(role=message.role, content=merged[-1].content + message.content)
        else:
            merged.append(message)
    return tuple(merged)


def _request(messages: list[Message], **fields: Any) -> ChatRequest:
    try:
        return ChatRequest(messages=_merge_turns(messages), **fields)
    except ValueError as exc:
        raise TranslationError(str(exc)) from exc


@dataclass(frozen=True, slots=True)
class RequestParts:
    """A wire request read but not yet built: its turns, the ChatRequest fields it sets, its extras.

    :meth:`build` makes the one ChatRequest with fields the caller adds (the gateway: the alias, the
    origin, the output reservation), so a request that needs them is built once, not built and then
    copied with ``dataclasses.replace`` (which builds and checks it again).
    """

    messages: list[Message]
    fields: dict[str, Any]
    extras: WireExtras

    def build(self, **given: Any) -> ChatRequest:
        """The ChatRequest, ``given`` fields replacing the parse's. :raises TranslationError: as the parse."""
        return _request(self.messages, **(self.fields | given if given else self.fields))


def _opt_bool(value: object, where: str) -> bool | None:
    if value is not None and not isinstance(value, bool):
        raise TranslationError(f"{where} must be a boolean")
    return value
