"""Anthropic Messages <-> OpenAI Chat Completions (and -> Bedrock Converse), requests and responses.

Requests go through one neutral form, :class:`~routeproof.core.types.ChatRequest` plus a few wire
extras (model, stream, top_p, tool_choice). Parsing a wire body into it and printing it back out is
what makes the round-trip laws hold (seed 003, ``format_translation``): roles exact, text
byte-identical, tool arguments JSON-semantically equal (canonical :func:`compact_json` text),
tool ids preserved (or made by :func:`deterministic_tool_id` where the wire has none), stop reasons
by one table (:mod:`routeproof.core.wire`).

Two shape facts are normalised, as each provider documents them: consecutive turns of the same role
form one turn (Anthropic merges them; an OpenAI run ``tool, tool, user`` is one Anthropic user turn
with two ``tool_result`` blocks and a text block), and a string content is the same as a list with
one text part. Content with no equivalent on the other side raises :class:`TranslationError`
naming it: images, thinking, ``cache_control``, ``is_error`` tool results towards OpenAI, a
``refusal``, several choices, unknown fields of a request.

This module is the public request API and re-exports the rest; the work is split by direction:
:mod:`~routeproof.core.translate_parse` (wire -> neutral), :mod:`~routeproof.core.translate_emit`
(neutral -> wire), :mod:`~routeproof.core.translate_response` (responses) and
:mod:`~routeproof.core.translate_common` (typed readers shared by all three).
"""

from __future__ import annotations

from typing import Any

import icontract

from routeproof.core.translate_common import WireExtras, is_o_series
from routeproof.core.translate_emit import _to_anthropic, _to_bedrock, _to_openai
from routeproof.core.translate_parse import _parse_anthropic_request, _parse_openai_request
from routeproof.core.translate_response import anthropic_response_to_openai, openai_response_to_anthropic
from routeproof.core.types import ChatRequest, Message
from routeproof.core.wire import (
    ANTHROPIC_TO_OPENAI_STOP,
    OPENAI_TO_ANTHROPIC_STOP,
    STOP_REASON_TO_FINISH,
    finish_reason_for,
)
from routeproof.errors import TranslationError  # named by the ``:raises:`` lines, which CrossHair resolves here

__all__ = [
    "ANTHROPIC_TO_OPENAI_STOP",
    "OPENAI_TO_ANTHROPIC_STOP",
    "STOP_REASON_TO_FINISH",
    "TranslationError",
    "WireExtras",
    "anthropic_request_to_openai",
    "anthropic_response_to_openai",
    "finish_reason_for",
    "is_o_series",
    "openai_request_to_anthropic",
    "openai_response_to_anthropic",
    "parse_anthropic_request",
    "parse_openai_request",
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
def request_to_anthropic(req: ChatRequest, model: str) -> dict[str, Any]:
    """The JSON body of ``POST /v1/messages`` for ``req`` sent to ``model``.

    :raises TranslationError: when the input is not the documented shape or has no equivalent.
    """
    return _to_anthropic(req, WireExtras(model=model))


@icontract.ensure(lambda req, model, result: result["model"] == model)
@icontract.ensure(
    lambda req, result: _message_count(result) >= _turn_count(req.messages) + (req.system is not None),
    "every turn is at least one OpenAI message (tool results and text after a tool call are more)",
)
def request_to_openai(req: ChatRequest, model: str) -> dict[str, Any]:
    """The JSON body of ``POST /v1/chat/completions``; ``developer`` system role for o-series models.

    :raises TranslationError: when the input is not the documented shape or has no equivalent.
    """
    return _to_openai(req, WireExtras(model=model))


@icontract.ensure(lambda req, result: _message_count(result) == _turn_count(req.messages))
def request_to_bedrock_converse(req: ChatRequest) -> dict[str, Any]:
    """The JSON body of a Bedrock Converse call (the model id is in the URL, not the body).

    :raises TranslationError: when the input is not the documented shape or has no equivalent.
    """
    return _to_bedrock(req)


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
