"""Anthropic Messages responses <-> OpenAI chat.completion responses (non-streamed).

Stop reasons go through the one table in :mod:`routeproof.core.formats.wire`; usage keeps its meaning
(OpenAI ``prompt_tokens`` includes cached tokens, Anthropic ``input_tokens`` does not). A thinking
block's text becomes OpenAI's ``reasoning_content`` (a redacted one, encrypted, is left out); an
OpenAI refusal becomes an Anthropic text block with ``stop_reason: "refusal"`` and back. Several
choices, or a block type with no equivalent, raise :class:`TranslationError`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import icontract

from routeproof.core.errors import TranslationError
from routeproof.core.formats.translate_common import _args_json, _int, _list, _obj, _opt_int, _parsed_args, _str
from routeproof.core.formats.translate_parse import _openai_tool_calls
from routeproof.core.formats.wire import ANTHROPIC_TO_OPENAI_STOP, OPENAI_TO_ANTHROPIC_STOP
from routeproof.core.types import FinishReason, ProviderResponse

__all__ = ["anthropic_response_to_openai", "forced_tool_answer", "openai_response_to_anthropic"]

# --- responses ---------------------------------------------------------------------------------------


def _anthropic_response_to_openai(body: object) -> dict[str, Any]:
    response = _obj(body, "anthropic response")
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    reasoning: list[str] = []
    for i, raw in enumerate(_list(response.get("content"), "content")):
        block = _obj(raw, f"content[{i}]")
        if block.get("type") == "text":
            texts.append(_str(block.get("text"), f"content[{i}].text"))
        elif block.get("type") == "thinking":  # OpenAI has no thinking block: its text as reasoning_content
            reasoning.append(_str(block.get("thinking"), f"content[{i}].thinking"))
        elif block.get("type") == "redacted_thinking":
            continue  # encrypted: nothing a Chat Completions caller can read or send back
        elif block.get("type") == "tool_use":
            arguments = _args_json(block.get("input"), f"content[{i}].input")
            function = {"name": _str(block.get("name"), f"content[{i}].name"), "arguments": arguments}
            calls.append({"id": _str(block.get("id"), f"content[{i}].id"), "type": "function", "function": function})
        else:
            raise TranslationError(f"content[{i}] of type {block.get('type')!r} has no OpenAI equivalent")
    stop = response.get("stop_reason")
    if not isinstance(stop, str) or stop not in ANTHROPIC_TO_OPENAI_STOP:
        raise TranslationError(f"stop_reason {stop!r} has no OpenAI equivalent")
    usage = _obj(response.get("usage"), "usage")
    cache_read = _opt_int(usage.get("cache_read_input_tokens"), "usage.cache_read_input_tokens")
    cache_write = _opt_int(usage.get("cache_creation_input_tokens"), "usage.cache_creation_input_tokens")
    prompt = _int(usage.get("input_tokens"), "usage.input_tokens") + cache_read + cache_write
    completion = _int(usage.get("output_tokens"), "usage.output_tokens")
    details: dict[str, int] = {"cached_tokens": cache_read}
    if cache_write:
        details["cache_write_tokens"] = cache_write  # OpenRouter's name; OpenAI has no such field
    message: dict[str, Any] = {"role": "assistant", "content": "".join(texts) if texts else None}
    if calls:
        message["tool_calls"] = calls
    if reasoning:  # the field OpenAI-compatible servers (vLLM, DeepSeek, OpenRouter) use for reasoning text
        message["reasoning_content"] = "".join(reasoning)
    if stop == "refusal":
        message["refusal"] = message["content"] or ""
    return {
        "id": _str(response.get("id"), "id"),
        "object": "chat.completion",
        "created": 0,  # the core has no clock; a shell that needs the time sets it
        "model": _str(response.get("model"), "model"),
        "choices": [
            {"index": 0, "message": message, "finish_reason": ANTHROPIC_TO_OPENAI_STOP[stop], "logprobs": None}
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": details,
        },
    }


def _openai_response_to_anthropic(body: object) -> dict[str, Any]:
    response = _obj(body, "openai response")
    choices = _list(response.get("choices"), "choices")
    if len(choices) != 1:
        raise TranslationError(f"choices has {len(choices)} entries; Anthropic returns one message")
    choice = _obj(choices[0], "choices[0]")
    message = _obj(choice.get("message"), "choices[0].message")
    refusal = message.get("refusal")
    content: list[dict[str, Any]] = []
    if message.get("content") is not None:
        content.append({"type": "text", "text": _str(message.get("content"), "choices[0].message.content")})
    elif refusal is not None:  # the model declined: its refusal text is the answer, stop_reason "refusal"
        content.append({"type": "text", "text": _str(refusal, "choices[0].message.refusal")})
    raw_calls = message.get("tool_calls")
    skipped: list[str] = []
    calls = _openai_tool_calls([] if raw_calls is None else raw_calls, 0, "choices[0].message.tool_calls", skipped)
    if skipped:
        raise TranslationError(f"{skipped[0]} (a custom tool call) has no Anthropic equivalent")
    for call in calls:
        tool_input = _parsed_args(call.input_json, f"tool call {call.id!r}")
        content.append({"type": "tool_use", "id": call.id, "name": call.name, "input": tool_input})
    finish = choice.get("finish_reason")
    if not isinstance(finish, str) or finish not in OPENAI_TO_ANTHROPIC_STOP:
        raise TranslationError(f"finish_reason {finish!r} has no Anthropic equivalent")
    usage = _obj(response.get("usage"), "usage")
    raw_details = usage.get("prompt_tokens_details")
    details = {} if raw_details is None else _obj(raw_details, "usage.prompt_tokens_details")
    cached = _opt_int(details.get("cached_tokens"), "usage.prompt_tokens_details.cached_tokens")
    written = _opt_int(details.get("cache_write_tokens"), "usage.prompt_tokens_details.cache_write_tokens")
    uncached = _int(usage.get("prompt_tokens"), "usage.prompt_tokens") - cached - written
    if uncached < 0:
        raise TranslationError(f"usage.prompt_tokens is smaller than its cached part ({cached} + {written})")
    return {
        "id": _str(response.get("id"), "id"),
        "type": "message",
        "role": "assistant",
        "model": _str(response.get("model"), "model"),
        "content": content,
        "stop_reason": "refusal" if refusal is not None else OPENAI_TO_ANTHROPIC_STOP[finish],
        "stop_sequence": None,
        "usage": {
            "input_tokens": uncached,
            "output_tokens": _int(usage.get("completion_tokens"), "usage.completion_tokens"),
            "cache_creation_input_tokens": written,
            "cache_read_input_tokens": cached,
        },
    }


@icontract.ensure(lambda result: len(result["choices"]) == 1 and result["object"] == "chat.completion")
def anthropic_response_to_openai(body: object) -> dict[str, Any]:
    """An Anthropic Messages response as an OpenAI chat.completion (text blocks joined in order).

    :raises TranslationError: when the input is not the documented shape or has no equivalent.
    """
    return _anthropic_response_to_openai(body)


@icontract.ensure(lambda result: result["type"] == "message" and result["role"] == "assistant")
def openai_response_to_anthropic(body: object) -> dict[str, Any]:
    """An OpenAI chat.completion with one choice as an Anthropic Messages response.

    :raises TranslationError: when the input is not the documented shape or has no equivalent.
    """
    return _openai_response_to_anthropic(body)


def _forced_tool_answer(response: ProviderResponse, tool_name: str) -> ProviderResponse:
    choices = []
    for choice in response.choices:
        forced = [call for call in choice.tool_calls if call.name == tool_name]
        if not forced:
            choices.append(choice)
            continue
        rest = tuple(call for call in choice.tool_calls if call.name != tool_name)
        text = choice.content + forced[0].arguments_json
        finish = FinishReason.TOOL_CALLS if rest else FinishReason.STOP
        choices.append(replace(choice, content=text, tool_calls=rest, finish_reason=finish))
    finish = choices[0].finish_reason if choices else response.finish_reason
    return replace(response, choices=tuple(choices), finish_reason=finish)


@icontract.ensure(
    lambda tool_name, result: all(call.name != tool_name for c in result.choices for call in c.tool_calls),
    "the forced tool's call is gone: its arguments are the answer's JSON text",
)
@icontract.ensure(lambda response, result: len(result.choices) == len(response.choices))
def forced_tool_answer(response: ProviderResponse, tool_name: str) -> ProviderResponse:
    """A JSON answer that came back as a call of the forced tool (``request_to_anthropic(...,
    structured_output=False)``, named ``JSON_TOOL_NAME`` or the schema's name) as the text answer the
    caller asked for: the call's arguments become the content, the finish reason ``stop``."""
    return _forced_tool_answer(response, tool_name)
