"""Normalising response bodies: whole responses compared exactly, and every malformed field's exact reason."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

from routeproof.core.blocks import RedactedThinkingBlock, ThinkingBlock
from routeproof.core.formats.normalize import (
    FieldReader,
    normalize_anthropic,
    normalize_bedrock_converse,
    normalize_openai,
)
from routeproof.core.formats.wire import deterministic_tool_id
from routeproof.core.types import (
    CacheState,
    CacheStatus,
    Choice,
    FinishReason,
    ProviderKind,
    ProviderResponse,
    ToolCall,
    Usage,
)
from routeproof.errors import InvalidResponse

ANTHROPIC: dict[str, Any] = {
    "id": "m1",
    "model": "claude",
    "content": [
        {"type": "text", "text": "a"},
        {"type": "thinking", "thinking": "hm"},
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
                    {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}},
                    {"type": "function", "function": {"name": "g", "arguments": "{}"}},
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
BEDROCK: dict[str, Any] = {
    "output": {
        "message": {
            "role": "assistant",
            "content": [
                {"text": "a"},
                {"toolUse": {"toolUseId": "t", "name": "f", "input": {"k": 1}}},
                {"text": "b"},
                {"reasoningContent": {}},
            ],
        }
    },
    "stopReason": "tool_use",
    "usage": {"inputTokens": 3, "outputTokens": 4, "cacheReadInputTokens": 5, "cacheWriteInputTokens": 6},
}


def _response(
    *,
    provider: ProviderKind,
    model: str,
    rid: str,
    text: str,
    calls: tuple[ToolCall, ...],
    finish: FinishReason,
    usage: Usage,
    cache: CacheState,
    thinking: tuple[ThinkingBlock, ...] = (),
) -> ProviderResponse:
    choice = Choice(index=0, content=text, tool_calls=calls, finish_reason=finish, thinking=thinking)
    return ProviderResponse(
        id=rid, usage=usage, choices=(choice,), finish_reason=finish, cache_state=cache, provider=provider, model=model
    )


def test_anthropic_body_normalises_exactly() -> None:
    """Text blocks are joined, thinking kept in Choice.thinking, tool input compacted, usage and cache state kept."""
    assert normalize_anthropic(ANTHROPIC) == _response(
        thinking=(ThinkingBlock(thinking="hm"),),
        provider=ProviderKind.ANTHROPIC,
        model="claude",
        rid="m1",
        text="ab",
        calls=(ToolCall(id="t", name="f", arguments_json='{"k":[1]}'),),
        finish=FinishReason.TOOL_CALLS,
        usage=Usage(prompt_tokens=1, completion_tokens=2, cached_input_tokens=3, cache_creation_tokens=4),
        cache=CacheState(status=CacheStatus.HIT, saved_tokens=3),
    )


def test_openai_body_normalises_exactly() -> None:
    """Cached and written prompt tokens are split out of prompt_tokens; a missing tool id is the deterministic one."""
    calls = (
        ToolCall(id="call_1", name="f", arguments_json='{"a":1}'),
        ToolCall(id=deterministic_tool_id("ollama", 0, 1), name="g", arguments_json="{}"),
    )
    usage = Usage(prompt_tokens=4, completion_tokens=3, cached_input_tokens=4, cache_creation_tokens=2)
    assert normalize_openai(OPENAI, provider=ProviderKind.OLLAMA) == _response(
        provider=ProviderKind.OLLAMA,
        model="gpt",
        rid="c1",
        text="hi",
        calls=calls,
        finish=FinishReason.TOOL_CALLS,
        usage=usage,
        cache=CacheState(status=CacheStatus.HIT, saved_tokens=4),
    )


def test_bedrock_body_normalises_exactly() -> None:
    """Bedrock text is joined, toolUse kept, the four usage counts read, id and model from the caller."""
    assert normalize_bedrock_converse(BEDROCK, response_id="rid", model="m") == _response(
        provider=ProviderKind.BEDROCK,
        model="m",
        rid="rid",
        text="ab",
        calls=(ToolCall(id="t", name="f", arguments_json='{"k":1}'),),
        finish=FinishReason.TOOL_CALLS,
        usage=Usage(prompt_tokens=3, completion_tokens=4, cached_input_tokens=5, cache_creation_tokens=6),
        cache=CacheState(status=CacheStatus.HIT, saved_tokens=5),
    )


def test_cache_writes_alone_are_a_miss_and_no_cache_is_none() -> None:
    """Only cache-creation tokens: a MISS; no cache tokens: NONE."""
    body = copy.deepcopy(BEDROCK)
    body["usage"] = {"inputTokens": 3, "outputTokens": 4, "cacheWriteInputTokens": 6}
    assert normalize_bedrock_converse(body).cache_state == CacheState(status=CacheStatus.MISS)
    body["usage"] = {"inputTokens": 3, "outputTokens": 4}
    assert normalize_bedrock_converse(body).cache_state == CacheState()
    assert normalize_bedrock_converse(body).usage == Usage(prompt_tokens=3, completion_tokens=4)


@pytest.mark.parametrize(
    ("stop", "finish"),
    [
        ("end_turn", FinishReason.STOP),
        ("max_tokens", FinishReason.LENGTH),
        ("guardrail_intervened", FinishReason.CONTENT_FILTER),
        ("weird", FinishReason.OTHER),
    ],
)
def test_bedrock_stop_reasons(stop: str, finish: FinishReason) -> None:
    """Bedrock stopReason maps through its own table; an unknown one is OTHER."""
    assert normalize_bedrock_converse(BEDROCK | {"stopReason": stop}).finish_reason is finish


def test_openai_refusal_is_the_answer_and_a_content_filter() -> None:
    """A refusal with no content becomes the text; with content the content stays; either way CONTENT_FILTER."""
    body = copy.deepcopy(OPENAI)
    message = body["choices"][0]["message"]
    message.update(content=None, refusal="no", tool_calls=None)
    response = normalize_openai(body)
    assert (response.choices[0].content, response.finish_reason) == ("no", FinishReason.CONTENT_FILTER)
    message.update(content="yes")
    assert normalize_openai(body).choices[0].content == "yes"


def test_openai_null_usage_and_null_details_are_zero() -> None:
    """usage null is all zeros; prompt_tokens_details null is no cache."""
    assert normalize_openai(OPENAI | {"usage": None}).usage == Usage()
    usage = {"prompt_tokens": 5, "completion_tokens": 1, "prompt_tokens_details": None}
    assert normalize_openai(OPENAI | {"usage": usage}).usage == Usage(prompt_tokens=5, completion_tokens=1)


def _reason(call: Callable[[], object], provider: ProviderKind) -> str:
    with pytest.raises(InvalidResponse) as caught:
        call()
    assert caught.value.provider is provider
    return caught.value.reason


def _set(body: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    changed = copy.deepcopy(body)
    node: Any = changed
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return changed


_NNI = " must be a non-negative integer, got "


def _json_nan_message() -> str:
    """This Python's own json error text for a NaN (3.13 appends ``: nan`` to 3.11's text)."""
    try:
        json.dumps(float("nan"), allow_nan=False)
    except ValueError as exc:
        return str(exc)
    raise AssertionError("json.dumps accepted NaN with allow_nan=False")


_NAN = _json_nan_message()
_ARGS = "choices[0].message.tool_calls[0].function.arguments"
_A_CASES = [
    (("content",), 5, "content must be an array, got int"),
    (("content", 0), 5, "content[0] must be an object, got int"),
    (("content", 0, "type"), 5, "content[0].type must be a string, got int"),
    (("content", 0, "text"), 5, "content[0].text must be a string, got int"),
    (("content", 2, "id"), 5, "content[2].id must be a string, got int"),
    (("content", 2, "name"), 5, "content[2].name must be a string, got int"),
    (("content", 2, "input"), 5, "content[2].input must be an object, got int"),
    (("content", 2, "input"), {"x": float("nan")}, "content[2].input is not representable as JSON: " + _NAN),
    (("model",), 5, "model must be a string, got int"),
    (("id",), 5, "id must be a string, got int"),
    (("stop_reason",), 5, "stop_reason must be a string, got int"),
    (("usage",), 5, "usage must be an object, got int"),
    (("usage", "input_tokens"), -1, "usage.input_tokens" + _NNI + "-1"),
    (("usage", "output_tokens"), True, "usage.output_tokens" + _NNI + "True"),
    (("usage", "cache_read_input_tokens"), "x", "usage.cache_read_input_tokens" + _NNI + "'x'"),
    (("usage", "cache_creation_input_tokens"), 1.5, "usage.cache_creation_input_tokens" + _NNI + "1.5"),
]


@pytest.mark.parametrize(("path", "value", "reason"), _A_CASES)
def test_anthropic_malformed_fields_name_their_path(path: tuple[Any, ...], value: Any, reason: str) -> None:
    """Each malformed Anthropic field is an InvalidResponse for Anthropic naming the field's path."""
    assert _reason(lambda: normalize_anthropic(_set(ANTHROPIC, path, value)), ProviderKind.ANTHROPIC) == reason


_M = ("choices", 0, "message")
_T = (*_M, "tool_calls", 0)
_O_CASES = [
    (("choices",), [], "choices is empty"),
    (("choices",), 5, "choices must be an array, got int"),
    (("choices", 0), 5, "choices[0] must be an object, got int"),
    (_M, 5, "choices[0].message must be an object, got int"),
    ((*_M, "content"), 5, "choices[0].message.content must be a string, got int"),
    (("choices", 0, "finish_reason"), 5, "choices[0].finish_reason must be a string, got int"),
    ((*_M, "tool_calls"), 5, "choices[0].message.tool_calls must be an array, got int"),
    (_T, 5, "choices[0].message.tool_calls[0] must be an object, got int"),
    ((*_T, "function"), 5, "choices[0].message.tool_calls[0].function must be an object, got int"),
    ((*_T, "id"), 5, "choices[0].message.tool_calls[0].id must be a string, got int"),
    ((*_T, "function", "name"), 5, "choices[0].message.tool_calls[0].function.name must be a string, got int"),
    ((*_T, "function", "arguments"), 5, _ARGS + " must be a string, got int"),
    (
        (*_T, "function", "arguments"),
        "[1]",
        "choices[0].message.tool_calls[0].function.arguments is not the JSON text of an object: " + repr("[1]"),
    ),
    (("model",), 5, "model must be a string, got int"),
    (("id",), 5, "id must be a string, got int"),
    (("usage",), 5, "usage must be an object, got int"),
    (("usage", "prompt_tokens_details"), 5, "usage.prompt_tokens_details must be an object, got int"),
    (
        ("usage", "prompt_tokens_details", "cached_tokens"),
        "x",
        "usage.prompt_tokens_details.cached_tokens" + _NNI + "'x'",
    ),
    (
        ("usage", "prompt_tokens_details", "cache_write_tokens"),
        -2,
        "usage.prompt_tokens_details.cache_write_tokens" + _NNI + "-2",
    ),
    (("usage", "prompt_tokens"), None, "usage.prompt_tokens" + _NNI + "None"),
    (("usage", "completion_tokens"), "3", "usage.completion_tokens" + _NNI + "'3'"),
    (("usage", "prompt_tokens"), 5, "usage.prompt_tokens=5 is smaller than its cached part 4 + 2"),
]


@pytest.mark.parametrize(("path", "value", "reason"), _O_CASES)
def test_openai_malformed_fields_name_their_path(path: tuple[Any, ...], value: Any, reason: str) -> None:
    """Each malformed OpenAI field is an InvalidResponse for the calling provider naming the field's path."""
    body = _set(OPENAI, path, value)
    assert _reason(lambda: normalize_openai(body, provider=ProviderKind.VLLM), ProviderKind.VLLM) == reason


def test_openai_refusal_of_the_wrong_type_names_its_path() -> None:
    """A non-string refusal (with no content) names choices[0].message.refusal."""
    body = _set(_set(OPENAI, (*_M, "content"), None), (*_M, "refusal"), 5)
    assert (
        _reason(lambda: normalize_openai(body), ProviderKind.OPENAI)
        == "choices[0].message.refusal must be a string, got int"
    )


def test_prompt_tokens_equal_to_the_cached_part_is_allowed() -> None:
    """prompt_tokens exactly cached + written leaves zero plain prompt tokens."""
    body = _set(OPENAI, ("usage", "prompt_tokens"), 6)
    assert normalize_openai(body).usage.prompt_tokens == 0


_B = ("output", "message", "content")
_B_CASES = [
    (("output",), 5, "output must be an object, got int"),
    (("output", "message"), 5, "output.message must be an object, got int"),
    (_B, 5, "output.message.content must be an array, got int"),
    ((*_B, 0), 5, "output.message.content[0] must be an object, got int"),
    ((*_B, 0, "text"), 5, "output.message.content[0].text must be a string, got int"),
    ((*_B, 1, "toolUse"), 5, "output.message.content[1].toolUse must be an object, got int"),
    ((*_B, 1, "toolUse", "toolUseId"), 5, "output.message.content[1].toolUse.toolUseId must be a string, got int"),
    ((*_B, 1, "toolUse", "name"), 5, "output.message.content[1].toolUse.name must be a string, got int"),
    ((*_B, 1, "toolUse", "input"), 5, "output.message.content[1].toolUse.input must be an object, got int"),
    (("usage",), 5, "usage must be an object, got int"),
    (("stopReason",), 5, "stopReason must be a string, got int"),
    (("usage", "inputTokens"), -1, "usage.inputTokens" + _NNI + "-1"),
    (("usage", "outputTokens"), "x", "usage.outputTokens" + _NNI + "'x'"),
    (("usage", "cacheReadInputTokens"), "x", "usage.cacheReadInputTokens" + _NNI + "'x'"),
    (("usage", "cacheWriteInputTokens"), "x", "usage.cacheWriteInputTokens" + _NNI + "'x'"),
]


@pytest.mark.parametrize(("path", "value", "reason"), _B_CASES)
def test_bedrock_malformed_fields_name_their_path(path: tuple[Any, ...], value: Any, reason: str) -> None:
    """Each malformed Bedrock field is an InvalidResponse for Bedrock naming the field's path."""
    assert _reason(lambda: normalize_bedrock_converse(_set(BEDROCK, path, value)), ProviderKind.BEDROCK) == reason


def test_a_body_that_is_not_an_object_is_named_body() -> None:
    """Every normaliser names a non-object body 'body' and shows its type."""
    assert _reason(lambda: normalize_anthropic([1]), ProviderKind.ANTHROPIC) == "body must be an object, got list"
    assert _reason(lambda: normalize_openai("x"), ProviderKind.OPENAI) == "body must be an object, got str"
    assert (
        _reason(lambda: normalize_bedrock_converse(None), ProviderKind.BEDROCK)
        == "body must be an object, got NoneType"
    )


class _ShortList(list[Any]):
    """A list subclass whose len() lies."""

    def __len__(self) -> int:
        return 0


def test_a_list_subclass_is_read_by_iteration() -> None:
    """A list subclass whose len() lies is still read in full."""
    body = copy.deepcopy(ANTHROPIC)
    body["content"] = _ShortList([{"type": "text", "text": "x"}, {"type": "text", "text": "y"}])
    assert normalize_anthropic(body).choices[0].content == "xy"


def test_anthropic_cache_counts_are_optional() -> None:
    """An Anthropic usage without (or with null) cache counts has zero cache tokens."""
    body = copy.deepcopy(ANTHROPIC)
    body["usage"] = {"input_tokens": 1, "output_tokens": 2}
    assert normalize_anthropic(body).usage == Usage(prompt_tokens=1, completion_tokens=2)
    body["usage"] = {"input_tokens": 1, "output_tokens": 2, "cache_read_input_tokens": None}
    assert normalize_anthropic(body).usage == Usage(prompt_tokens=1, completion_tokens=2)


def test_bad_tool_arguments_are_quoted_up_to_80_characters() -> None:
    """Tool arguments that are not a JSON object are quoted in the reason, cut at 80 characters."""
    text = "[" + "1," * 60 + "1]"
    body = _set(OPENAI, (*_T, "function", "arguments"), text)
    reason = _reason(lambda: normalize_openai(body), ProviderKind.OPENAI)
    assert reason == f"{_ARGS} is not the JSON text of an object: {text[:80]!r}"


class _LyingList(list[int]):
    """A list subclass whose len() lies (as CrossHair's email.header._Accumulator did)."""

    def __len__(self) -> int:
        return 0


def test_reader_arr_keeps_a_list_and_copies_a_subclass() -> None:
    """A plain list is returned as is (no copy); a list subclass is read item by item into a plain list."""
    reader = FieldReader(ProviderKind.OPENAI)
    items = [1, 2]
    assert reader.arr(items, "w") is items
    copied = reader.arr(_LyingList([3, 4]), "w")
    assert type(copied) is list
    assert copied == [3, 4]


def test_reasoning_thinking_and_refusals_reach_the_response() -> None:
    """OpenAI reasoning_tokens and refusal, Anthropic signed/redacted thinking, Bedrock reasoningContent are kept."""
    openai = {
        **OPENAI,
        "usage": {**OPENAI["usage"], "completion_tokens_details": {"reasoning_tokens": 2}},
        "choices": [{**OPENAI["choices"][0], "message": {"role": "assistant", "content": None, "refusal": "no"}}],
    }
    answer = normalize_openai(openai)
    assert (answer.usage.reasoning_tokens, answer.choices[0].refusal, answer.choices[0].content) == (2, "no", "no")
    signed = {**ANTHROPIC, "content": [{"type": "thinking", "thinking": "t", "signature": "c2ln=="}]}
    redacted = {"type": "redacted_thinking", "data": "ZGF0YQ=="}
    blocks = normalize_anthropic({**signed, "content": [*signed["content"], redacted]}).choices[0].thinking
    assert blocks == (ThinkingBlock(thinking="t", signature="c2ln=="), RedactedThinkingBlock(data="ZGF0YQ=="))
    reasoning = {"reasoningContent": {"reasoningText": {"text": "t", "signature": "s"}}}
    bedrock = {**BEDROCK, "output": {"message": {"role": "assistant", "content": [reasoning]}}}
    assert normalize_bedrock_converse(bedrock).choices[0].thinking == (ThinkingBlock(thinking="t", signature="s"),)
