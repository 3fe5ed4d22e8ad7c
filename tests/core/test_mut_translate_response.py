"""Response translation both ways: whole bodies compared exactly, and each malformed field's exact reason."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from routeproof.core.formats.translate_response import anthropic_response_to_openai, openai_response_to_anthropic
from routeproof.core.formats.wire import deterministic_tool_id
from routeproof.errors import TranslationError

ANTHROPIC: dict[str, Any] = {
    "id": "m1",
    "model": "claude",
    "content": [
        {"type": "text", "text": "a"},
        {"type": "tool_use", "id": "t", "name": "f", "input": {"k": [1]}},
        {"type": "text", "text": "b"},
    ],
    "stop_reason": "tool_use",
    "usage": {"input_tokens": 1, "output_tokens": 2, "cache_read_input_tokens": 3, "cache_creation_input_tokens": 4},
}
OPENAI: dict[str, Any] = {
    "id": "c1",
    "model": "gpt",
    "choices": [
        {
            "index": 0,
            "finish_reason": "tool_calls",
            "message": {
                "role": "assistant",
                "content": "hi",
                "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}
                ],
            },
        }
    ],
    "usage": {
        "prompt_tokens": 10,
        "completion_tokens": 3,
        "prompt_tokens_details": {"cached_tokens": 4, "cache_write_tokens": 2},
    },
}


def test_anthropic_to_openai_whole_body() -> None:
    """Texts joined, tool calls in OpenAI form, stop mapped, prompt = input + cache read + cache write."""
    assert anthropic_response_to_openai(ANTHROPIC) == {
        "id": "m1",
        "object": "chat.completion",
        "created": 0,
        "model": "claude",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": "ab",
                    "tool_calls": [
                        {"id": "t", "type": "function", "function": {"name": "f", "arguments": '{"k":[1]}'}}
                    ],
                },
                "finish_reason": "tool_calls",
                "logprobs": None,
            }
        ],
        "usage": {
            "prompt_tokens": 8,
            "completion_tokens": 2,
            "total_tokens": 10,
            "prompt_tokens_details": {"cached_tokens": 3, "cache_write_tokens": 4},
        },
    }


def test_anthropic_to_openai_without_text_or_cache() -> None:
    """No text block gives content null and no tool_calls key without calls; no cache write, no such key."""
    body = {
        "id": "m",
        "model": "c",
        "content": [],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    result = anthropic_response_to_openai(body)
    assert result["choices"][0]["message"] == {"role": "assistant", "content": None}
    assert result["usage"]["prompt_tokens_details"] == {"cached_tokens": 0}


def test_openai_to_anthropic_whole_body() -> None:
    """Text then tool_use blocks, stop mapped, input = prompt - cached - written."""
    assert openai_response_to_anthropic(OPENAI) == {
        "id": "c1",
        "type": "message",
        "role": "assistant",
        "model": "gpt",
        "content": [
            {"type": "text", "text": "hi"},
            {"type": "tool_use", "id": "call_1", "name": "f", "input": {"a": 1}},
        ],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {
            "input_tokens": 4,
            "output_tokens": 3,
            "cache_creation_input_tokens": 2,
            "cache_read_input_tokens": 4,
        },
    }


def test_openai_to_anthropic_without_content_calls_or_details() -> None:
    """Null content and no tool calls give an empty content list; no details means no cache tokens."""
    body = copy.deepcopy(OPENAI)
    body["choices"][0]["message"] = {"role": "assistant", "content": None}
    body["choices"][0]["finish_reason"] = "stop"
    body["usage"] = {"prompt_tokens": 5, "completion_tokens": 1}
    result = openai_response_to_anthropic(body)
    assert result["content"] == []
    assert result["usage"] == {
        "input_tokens": 5,
        "output_tokens": 1,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }


def _set(body: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    changed = copy.deepcopy(body)
    node: Any = changed
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return changed


def _reason(call: Callable[[], object]) -> str:
    with pytest.raises(TranslationError) as caught:
        call()
    return str(caught.value)


_NNI = " must be a non-negative integer, got "
_A_CASES = [
    (("content",), 5, "content must be an array, got int"),
    (("content", 0), 5, "content[0] must be an object, got int"),
    (("content", 0, "text"), 5, "content[0].text must be a string, got int"),
    (("content", 1, "name"), 5, "content[1].name must be a string, got int"),
    (("content", 1, "id"), 5, "content[1].id must be a string, got int"),
    (("content", 1, "input"), 5, "content[1].input must be an object, got int"),
    (("content", 0, "type"), "server_tool_use", "content[0] of type 'server_tool_use' has no OpenAI equivalent"),
    (("stop_reason",), "pause_turn", "stop_reason 'pause_turn' has no OpenAI equivalent"),
    (("stop_reason",), 5, "stop_reason 5 has no OpenAI equivalent"),
    (("usage",), 5, "usage must be an object, got int"),
    (("usage", "cache_read_input_tokens"), "x", "usage.cache_read_input_tokens" + _NNI + "'x'"),
    (("usage", "cache_creation_input_tokens"), "x", "usage.cache_creation_input_tokens" + _NNI + "'x'"),
    (("usage", "input_tokens"), -1, "usage.input_tokens" + _NNI + "-1"),
    (("usage", "output_tokens"), None, "usage.output_tokens" + _NNI + "None"),
    (("id",), 5, "id must be a string, got int"),
    (("model",), 5, "model must be a string, got int"),
]


@pytest.mark.parametrize(("path", "value", "reason"), _A_CASES)
def test_anthropic_to_openai_errors_name_the_field(path: tuple[Any, ...], value: Any, reason: str) -> None:
    """Each malformed or untranslatable Anthropic field is a TranslationError naming it."""
    assert _reason(lambda: anthropic_response_to_openai(_set(ANTHROPIC, path, value))).endswith(reason)


def test_a_body_that_is_not_an_object_is_named() -> None:
    """The whole body must be an object, named as the Anthropic or OpenAI response."""
    assert _reason(lambda: anthropic_response_to_openai(5)).endswith("anthropic response must be an object, got int")
    assert _reason(lambda: openai_response_to_anthropic(5)).endswith("openai response must be an object, got int")


_M = ("choices", 0, "message")
_O_CASES = [
    (("choices",), 5, "choices must be an array, got int"),
    (("choices",), [], "choices has 0 entries; Anthropic returns one message"),
    (("choices", 0), 5, "choices[0] must be an object, got int"),
    (_M, 5, "choices[0].message must be an object, got int"),
    ((*_M, "content"), 5, "choices[0].message.content must be a string, got int"),
    (("choices", 0, "finish_reason"), "weird", "finish_reason 'weird' has no Anthropic equivalent"),
    (("choices", 0, "finish_reason"), 5, "finish_reason 5 has no Anthropic equivalent"),
    (("usage",), 5, "usage must be an object, got int"),
    (("usage", "prompt_tokens_details"), 5, "usage.prompt_tokens_details must be an object, got int"),
    (
        ("usage", "prompt_tokens_details", "cached_tokens"),
        "x",
        "usage.prompt_tokens_details.cached_tokens" + _NNI + "'x'",
    ),
    (
        ("usage", "prompt_tokens_details", "cache_write_tokens"),
        "x",
        "usage.prompt_tokens_details.cache_write_tokens" + _NNI + "'x'",
    ),
    (("usage", "prompt_tokens"), "x", "usage.prompt_tokens" + _NNI + "'x'"),
    (("usage", "prompt_tokens"), 5, "usage.prompt_tokens is smaller than its cached part (4 + 2)"),
    (("usage", "completion_tokens"), -3, "usage.completion_tokens" + _NNI + "-3"),
    (("id",), 5, "id must be a string, got int"),
    (("model",), 5, "model must be a string, got int"),
]


@pytest.mark.parametrize(("path", "value", "reason"), _O_CASES)
def test_openai_to_anthropic_errors_name_the_field(path: tuple[Any, ...], value: Any, reason: str) -> None:
    """Each malformed or untranslatable OpenAI field is a TranslationError naming it."""
    assert _reason(lambda: openai_response_to_anthropic(_set(OPENAI, path, value))).endswith(reason)


def test_prompt_tokens_equal_to_the_cached_part_translate_to_zero_input() -> None:
    """prompt_tokens exactly cached + written gives input_tokens 0."""
    assert openai_response_to_anthropic(_set(OPENAI, ("usage", "prompt_tokens"), 6))["usage"]["input_tokens"] == 0


def test_two_choices_are_refused() -> None:
    """Anthropic has one message: two choices are a TranslationError counting them."""
    body = copy.deepcopy(OPENAI)
    body["choices"] = body["choices"] * 2
    assert _reason(lambda: openai_response_to_anthropic(body)).endswith(
        "choices has 2 entries; Anthropic returns one message"
    )


def _openai_call_response(tool_calls: object) -> dict[str, Any]:
    message = {"role": "assistant", "content": None, "tool_calls": tool_calls}
    return {
        "id": "x",
        "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1},
    }


def test_an_openai_call_without_an_id_gets_the_deterministic_id_of_message_zero() -> None:
    """A response's call without an id is named deterministic_tool_id('openai', 0, its index)."""
    calls = [{"type": "function", "function": {"name": "f", "arguments": "{}"}}]
    content = openai_response_to_anthropic(_openai_call_response(calls))["content"]
    assert content == [{"type": "tool_use", "id": deterministic_tool_id("openai", 0, 0), "name": "f", "input": {}}]


def test_a_malformed_openai_call_is_named_by_its_path() -> None:
    """A tool call that is not an object is refused as choices[0].message.tool_calls[i]."""
    with pytest.raises(TranslationError, match=r"^choices\[0\]\.message\.tool_calls\[0\] must be an object, got int$"):
        openai_response_to_anthropic(_openai_call_response([1]))


def test_thinking_and_refusals_cross_in_each_callers_shape() -> None:
    """Anthropic thinking text is OpenAI's reasoning_content (redacted left out); an OpenAI refusal is an
    Anthropic text block with stop_reason refusal, and an Anthropic refusal is OpenAI's message.refusal."""
    thinking = [{"type": "thinking", "thinking": "hm", "signature": "s"}, {"type": "redacted_thinking", "data": "x"}]
    answer = anthropic_response_to_openai({**ANTHROPIC, "content": [*thinking, *ANTHROPIC["content"]]})
    assert answer["choices"][0]["message"]["reasoning_content"] == "hm"
    refused = _set(_set(OPENAI, (*_M, "refusal"), "no"), (*_M, "content"), None)
    back = openai_response_to_anthropic(refused)
    assert (back["content"][0], back["stop_reason"]) == ({"type": "text", "text": "no"}, "refusal")
    declined = {**ANTHROPIC, "content": [{"type": "text", "text": "no"}], "stop_reason": "refusal"}
    message = anthropic_response_to_openai(declined)["choices"][0]
    assert (message["message"]["refusal"], message["finish_reason"]) == ("no", "content_filter")


def test_a_forced_tool_answer_becomes_the_json_text_answer() -> None:
    """The forced json_answer tool's call (structured output by a tool) is turned back into the content."""
    from routeproof.core.formats.translate_response import forced_tool_answer
    from routeproof.core.types import Choice, FinishReason, ProviderResponse, ToolCall, Usage

    call = ToolCall(id="t", name="json_answer", arguments_json='{"a":1}')
    other = ToolCall(id="u", name="search", arguments_json="{}")
    answer = ProviderResponse(
        id="r",
        usage=Usage(),
        choices=(Choice(tool_calls=(call,), finish_reason=FinishReason.TOOL_CALLS),),
        finish_reason=FinishReason.TOOL_CALLS,
    )
    text = forced_tool_answer(answer, "json_answer")
    assert (text.choices[0].content, text.choices[0].tool_calls, text.finish_reason) == (
        '{"a":1}',
        (),
        FinishReason.STOP,
    )
    mixed = replace(answer, choices=(Choice(tool_calls=(call, other), finish_reason=FinishReason.TOOL_CALLS),))
    assert forced_tool_answer(mixed, "json_answer").choices[0].tool_calls == (other,)
    assert forced_tool_answer(mixed, "nope") == mixed
