"""Anthropic Messages <-> OpenAI Chat Completions (and -> Bedrock Converse), requests and responses.

Requests go through one neutral form, :class:`~routeproof.core.types.ChatRequest` plus a few wire
extras (model, stream, top_p, tool_choice). Parsing a wire body into it and printing it back out is
what makes the round-trip laws hold (seed 003, ``format_translation``): roles exact, text
byte-identical, tool arguments JSON-semantically equal (canonical :func:`compact_json` text),
tool ids preserved (or made by :func:`deterministic_tool_id` where the wire has none), stop reasons
by one table (:mod:`routeproof.core.formats.wire`).

The round-trip law: on the canonical form, ``parse(emit(r)) == r`` in both directions. The
canonical form normalises what each provider documents as equivalent or requires: consecutive turns
of the same role form one turn (Anthropic merges them; an OpenAI run ``tool, tool, user`` is one
Anthropic user turn with two ``tool_result`` blocks and a text block); a string content is the same
as a list with one text part; in an assistant turn text blocks come before tool_use blocks (OpenAI
carries a turn as one message: content, then tool_calls), and in a user turn tool_result blocks come
before text (OpenAI's tool messages must directly follow the calls; Anthropic asks for tool results
first too); the OpenAI max-tokens field is ``max_completion_tokens`` (``max_tokens`` is read as the
same thing). An ``is_error`` tool result travels to OpenAI as the content parts
``[IS_ERROR_MARKER, content]`` and is read back as ``is_error``. Content with no equivalent on the
other side is left out and named (:func:`dropped_by_target`), or raises :class:`TranslationError`
naming it where leaving it out would change the answer; a request field the content model does not
carry is recorded in ``WireExtras.untranslated`` by the parse (never silently lost).

This module is the public request API and re-exports the rest; the work is split by direction:
:mod:`~routeproof.core.formats.translate_parse` (wire -> neutral), :mod:`~routeproof.core.formats.translate_emit`
(neutral -> wire), :mod:`~routeproof.core.formats.translate_response` (responses) and
:mod:`~routeproof.core.formats.translate_common` (typed readers shared by all three).
"""

from __future__ import annotations

from typing import Any

import icontract

from routeproof.core.capabilities import ModelCapabilities, kind_default
from routeproof.core.errors import TranslationError  # named by the ``:raises:`` lines, which CrossHair resolves here
from routeproof.core.formats.translate_common import (
    IS_ERROR_MARKER,
    RequestParts,
    WireExtras,
    _merge_turns,
    is_o_series,
)
from routeproof.core.formats.translate_emit import _dropped_by_target, _to_anthropic, _to_bedrock, _to_openai
from routeproof.core.formats.translate_parse import (
    _anthropic_request_parts,
    _openai_request_parts,
    _parse_anthropic_request,
    _parse_openai_request,
)
from routeproof.core.formats.translate_response import anthropic_response_to_openai, openai_response_to_anthropic
from routeproof.core.formats.wire import (
    ANTHROPIC_TO_OPENAI_STOP,
    OPENAI_TO_ANTHROPIC_STOP,
    STOP_REASON_TO_FINISH,
    finish_reason_for,
)
from routeproof.core.messages import WireFormat
from routeproof.core.types import ChatRequest, Message, ProviderKind, Role, ToolResultBlock, ToolUseBlock

__all__ = [
    "ANTHROPIC_TO_OPENAI_STOP",
    "IS_ERROR_MARKER",
    "OPENAI_TO_ANTHROPIC_STOP",
    "STOP_REASON_TO_FINISH",
    "RequestParts",
    "TranslationError",
    "WireExtras",
    "anthropic_request_to_openai",
    "anthropic_response_to_openai",
    "dropped_by_target",
    "finish_reason_for",
    "is_o_series",
    "openai_request_sound",
    "openai_request_to_anthropic",
    "openai_response_to_anthropic",
    "parse_anthropic_request",
    "parse_openai_request",
    "read_anthropic_request",
    "read_openai_request",
    "request_to_anthropic",
    "request_to_bedrock_converse",
    "request_to_openai",
]

# --- the public request API --------------------------------------------------------------------------


def _message_count(body: dict[str, Any]) -> int:
    messages = body.get("messages")
    return len(messages) if isinstance(messages, list) else -1


def _turn_count(messages: tuple[Message, ...]) -> int:
    """How many turns ``messages`` are: a run of consecutive same-role messages is one turn."""
    return sum(1 for i, m in enumerate(messages) if i == 0 or messages[i - 1].role is not m.role)


@icontract.ensure(lambda req, model, result: result["model"] == model)
@icontract.ensure(lambda req, result: _message_count(result) == _turn_count(req.messages))
def request_to_anthropic(req: ChatRequest, model: str, *, structured_output: bool = True) -> dict[str, Any]:
    """The JSON body of ``POST /v1/messages`` for ``req`` sent to ``model``.

    A JSON ``response_format`` becomes ``output_config.format``; with ``structured_output=False``
    (a model without it) a forced tool instead (see :mod:`~routeproof.core.formats.translate_emit`).

    :raises TranslationError: when the input is not the documented shape or has no equivalent.
    """
    extras = WireExtras(model=model, top_p=req.top_p, tool_choice=req.tool_choice)
    return _to_anthropic(req, extras, structured_output=structured_output)


def openai_request_sound(
    req: ChatRequest, model: str, capabilities: ModelCapabilities | None, result: dict[str, Any]
) -> bool:
    """:func:`request_to_openai`'s postcondition, one predicate (each condition costs icontract about
    ten Python calls, and this runs per attempt; issue 25): the body names ``model``; every turn is at
    least one OpenAI message (tool results and text after a tool call are more); the cap is in the
    model's max-tokens field; and when every tool result answers a call of the assistant turn before
    it, OpenAI's ordering rule holds."""
    field = (capabilities or kind_default(ProviderKind.OPENAI, model)).max_tokens_field
    return (
        result["model"] == model
        and _message_count(result) >= _turn_count(req.messages) + (req.system is not None)
        and result.get(field) == req.max_tokens
        and (not _results_answer_calls(req) or _tool_messages_follow_their_calls(result["messages"]))
    )


@icontract.ensure(
    openai_request_sound,
    "the model named, every turn at least one message, the cap in the model's field, tool results after their calls",
)
def request_to_openai(req: ChatRequest, model: str, *, capabilities: ModelCapabilities | None = None) -> dict[str, Any]:
    """The JSON body of ``POST /v1/chat/completions``.

    The max-tokens field and the system role are ``capabilities``' (default: OpenAI's own for
    ``model``: ``max_completion_tokens``, the ``developer`` role for o-series ids). Nothing is left
    out here: :func:`~routeproof.core.capabilities.fit_request` does that first.

    :raises TranslationError: when the input is not the documented shape or has no equivalent.
    """
    return _to_openai(req, WireExtras(model=model, top_p=req.top_p, tool_choice=req.tool_choice), capabilities)


def _results_answer_calls(req: ChatRequest) -> bool:
    """Every tool result answers a distinct tool_use of the assistant turn right before its turn."""
    turns = _merge_turns(list(req.messages))
    for index, turn in enumerate(turns):
        results = [b.tool_use_id for b in turn.content if isinstance(b, ToolResultBlock)]
        if not results:
            continue
        previous = turns[index - 1].content if index > 0 and turns[index - 1].role is Role.ASSISTANT else ()
        calls = [b.id for b in previous if isinstance(b, ToolUseBlock)]
        if len(set(results)) != len(results) or not set(results) <= set(calls):
            return False
    return True


def _tool_messages_follow_their_calls(messages: list[dict[str, Any]]) -> bool:
    """OpenAI's ordering rule: each tool message answers a call of the nearest assistant message
    before it, with only tool messages in between, and no call is answered twice."""
    open_calls: list[str] | None = None
    for message in messages:
        if message["role"] == "tool":
            if open_calls is None or message["tool_call_id"] not in open_calls:
                return False
            open_calls.remove(message["tool_call_id"])
        else:
            calls = message.get("tool_calls") or []
            open_calls = [call["id"] for call in calls] if message["role"] == "assistant" else None
    return True


@icontract.ensure(lambda req, result: _message_count(result) == _turn_count(req.messages))
def request_to_bedrock_converse(req: ChatRequest) -> dict[str, Any]:
    """The JSON body of a Bedrock Converse call (the model id is in the URL, not the body).

    :raises TranslationError: when the input is not the documented shape or has no equivalent.
    """
    return _to_bedrock(req)


@icontract.ensure(lambda result: len(set(result)) == len(result))
def dropped_by_target(req: ChatRequest, target: WireFormat) -> tuple[str, ...]:
    """What of ``req`` the ``target`` protocol's body leaves out, by neutral name (``top_k``,
    ``cache_control``, ``thinking_blocks``, ``seed``, ...): the shell reports these as dropped.

    Same names whichever protocol the request came in; a field the parse did not carry is in
    ``WireExtras.untranslated`` instead (see :func:`routeproof.core.formats.field_table.treatment_of`).
    """
    return _dropped_by_target(req, target)


@icontract.ensure(lambda result: _turn_count(result[0].messages) == len(result[0].messages) >= 1)
def parse_anthropic_request(body: object) -> tuple[ChatRequest, WireExtras]:
    """An Anthropic Messages request body as a ChatRequest plus its wire extras.

    :raises TranslationError: when the input is not the documented shape or has no equivalent.
    """
    return _parse_anthropic_request(body)


@icontract.ensure(lambda result: _turn_count(result[0].messages) == len(result[0].messages) >= 1)
def parse_openai_request(body: object) -> tuple[ChatRequest, WireExtras]:
    """An OpenAI Chat Completions request body as a ChatRequest plus its wire extras.

    :raises TranslationError: when the input is not the documented shape or has no equivalent.
    """
    return _parse_openai_request(body)


def read_anthropic_request(body: object) -> RequestParts:
    """:func:`parse_anthropic_request` before its build: ``read_anthropic_request(body).build()`` is its
    ChatRequest, and ``build(**fields)`` the same with ``fields`` set in the one build.

    :raises TranslationError: when the input is not the documented shape or has no equivalent.
    """
    return _anthropic_request_parts(body)


def read_openai_request(body: object) -> RequestParts:
    """:func:`parse_openai_request` before its build (see :func:`read_anthropic_request`).

    :raises TranslationError: when the input is not the documented shape or has no equivalent.
    """
    return _openai_request_parts(body)


@icontract.ensure(lambda result: _message_count(result) >= 1)
def anthropic_request_to_openai(body: object) -> dict[str, Any]:
    """An Anthropic Messages request body as the equivalent OpenAI Chat Completions body.

    :raises TranslationError: when the input is not the documented shape or has no equivalent.
    """
    return _to_openai(*_parse_anthropic_request(body))


@icontract.ensure(lambda result: _message_count(result) >= 1)
def openai_request_to_anthropic(body: object) -> dict[str, Any]:
    """An OpenAI Chat Completions request body as the equivalent Anthropic Messages body.

    :raises TranslationError: when the input is not the documented shape or has no equivalent.
    """
    return _to_anthropic(*_parse_openai_request(body))
