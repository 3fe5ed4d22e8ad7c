"""Small pure helpers shared by the format layer: canonical JSON, tool ids, stop-reason tables.

Tool arguments travel as JSON text inside routeproof (``ToolUseBlock.input_json``,
``ToolCall.arguments_json``). :func:`compact_json` is the one canonical spelling: key order kept,
no whitespace, non-ASCII kept as is, so that two semantically equal objects parsed from the wire
compare equal as strings.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import blake3
import icontract

from routeproof.core.types import FinishReason

__all__ = [
    "ANTHROPIC_TO_OPENAI_STOP",
    "BEDROCK_STOP_TO_FINISH",
    "OPENAI_TO_ANTHROPIC_STOP",
    "STOP_REASON_TO_FINISH",
    "as_json_object",
    "compact_json",
    "decode_json",
    "deterministic_tool_id",
    "finish_reason_for",
]


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-standard JSON constant {name!r}")


# One encoder and one decoder, built once: ``json.dumps``/``json.loads`` with options build a new
# one per call, which was a third of the translation time. Both are stateless between calls.
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
_DECODER = json.JSONDecoder(parse_constant=_reject_constant)

ANTHROPIC_TO_OPENAI_STOP: Mapping[str, str] = MappingProxyType(
    {
        "end_turn": "stop",
        "stop_sequence": "stop",
        "max_tokens": "length",
        "tool_use": "tool_calls",
        "refusal": "content_filter",
        "model_context_window_exceeded": "length",  # Sonnet 4.5+: the context window cut the answer
    }
)
"""Anthropic ``stop_reason`` -> OpenAI ``finish_reason``: the one table both directions use."""

OPENAI_TO_ANTHROPIC_STOP: Mapping[str, str] = MappingProxyType(
    {
        "stop": "end_turn",
        "length": "max_tokens",
        "tool_calls": "tool_use",
        "function_call": "tool_use",  # the deprecated single-function form
        "content_filter": "refusal",
    }
)
"""OpenAI ``finish_reason`` -> Anthropic ``stop_reason``."""

STOP_REASON_TO_FINISH: Mapping[str, FinishReason] = MappingProxyType(
    {
        "end_turn": FinishReason.STOP,
        "stop_sequence": FinishReason.STOP,
        "stop": FinishReason.STOP,
        "max_tokens": FinishReason.LENGTH,
        "length": FinishReason.LENGTH,
        "model_context_window_exceeded": FinishReason.LENGTH,
        "tool_use": FinishReason.TOOL_CALLS,
        "tool_calls": FinishReason.TOOL_CALLS,
        "function_call": FinishReason.TOOL_CALLS,
        "refusal": FinishReason.CONTENT_FILTER,
        "content_filter": FinishReason.CONTENT_FILTER,
    }
)
"""Anthropic and OpenAI stop reasons -> routeproof's FinishReason (unknown ones are OTHER)."""

BEDROCK_STOP_TO_FINISH: Mapping[str, FinishReason] = MappingProxyType(
    {
        "end_turn": FinishReason.STOP,
        "stop_sequence": FinishReason.STOP,
        "max_tokens": FinishReason.LENGTH,
        "model_context_window_exceeded": FinishReason.LENGTH,
        "tool_use": FinishReason.TOOL_CALLS,
        "guardrail_intervened": FinishReason.CONTENT_FILTER,
        "content_filtered": FinishReason.CONTENT_FILTER,
    }
)
"""Bedrock Converse ``stopReason`` -> FinishReason."""


def _finish_reason_for(reason: str) -> FinishReason:
    return STOP_REASON_TO_FINISH.get(reason, FinishReason.OTHER)


@icontract.ensure(lambda reason, result: result is not FinishReason.OTHER or reason not in STOP_REASON_TO_FINISH)
def finish_reason_for(reason: str) -> FinishReason:
    """The FinishReason of an Anthropic or OpenAI stop reason; OTHER when the table lacks it."""
    return _finish_reason_for(reason)


def _compact_json(value: Any) -> str:
    return _ENCODER.encode(value)


def compact_json(value: Any) -> str:
    """The canonical JSON text of ``value`` (key order kept); ValueError on NaN/Infinity."""
    return _compact_json(value)


def _deterministic_tool_id(provider_id: str, message_index: int, tool_index: int) -> str:
    digest = blake3.blake3(f"{provider_id}\x00{message_index}\x00{tool_index}".encode()).hexdigest()
    return "toolu_rp" + digest[:24]


@icontract.require(lambda message_index, tool_index: message_index >= 0 and tool_index >= 0)
@icontract.ensure(lambda result: result.startswith("toolu_rp") and len(result) == 32)
def deterministic_tool_id(provider_id: str, message_index: int, tool_index: int) -> str:
    """A tool-call id made where the wire gave none: blake3 over (provider id, message idx, tool idx)."""
    return _deterministic_tool_id(provider_id, message_index, tool_index)


def decode_json(text: str) -> Any:
    """``text`` as a JSON value, with the one decoder (``json.loads`` with options builds one per call);
    ValueError on NaN/Infinity, as on any text that is not JSON."""
    return _DECODER.decode(text)


def as_json_object(text: str) -> dict[str, Any] | None:
    """``text`` parsed as a JSON object, or None when it is not valid JSON or not an object."""
    try:
        value = _DECODER.decode(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None
