"""Provider response normalisation: AC 15, usage/cache meaning, InvalidResponse naming field and provider."""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from routeproof.core.formats.normalize import normalize_anthropic, normalize_bedrock_converse, normalize_openai
from routeproof.core.formats.translate import anthropic_response_to_openai, openai_response_to_anthropic
from routeproof.core.types import CacheState, CacheStatus, FinishReason, ProviderKind, ProviderResponse, ToolCall, Usage
from routeproof.errors import InvalidResponse, TranslationError
from tests.core.strategies_format import json_values

ANTHROPIC = {
    "id": "msg_1", "type": "message", "role": "assistant", "model": "m",
    "content": [{"type": "text", "text": "Paris: "}, {"type": "text", "text": "18°C"},
                {"type": "tool_use", "id": "t1", "name": "get_weather", "input": {"city": "Paris", "n": 1.5}}],
    "stop_reason": "tool_use", "stop_sequence": None,
    "usage": {"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 90,
              "cache_creation_input_tokens": 0},
    "unknown_future_field": {"x": 1},
}  # fmt: skip
_WEATHER_CALL = {
    "id": "t1",
    "type": "function",
    "function": {"name": "get_weather", "arguments": '{"city": "Paris", "n": 1.5}'},
}
OPENAI_MESSAGE = {"role": "assistant", "content": "Paris: 18°C", "refusal": None, "tool_calls": [_WEATHER_CALL]}
OPENAI_CHOICE = {"index": 0, "logprobs": None, "finish_reason": "tool_calls", "message": OPENAI_MESSAGE}
OPENAI = {
    "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m", "system_fingerprint": "fp",
    "choices": [OPENAI_CHOICE],
    "usage": {"prompt_tokens": 100, "completion_tokens": 5, "total_tokens": 105,
              "prompt_tokens_details": {"cached_tokens": 90}},
}  # fmt: skip
BEDROCK = {
    "output": {"message": {"role": "assistant", "content": [
        {"text": "Paris: 18°C"},
        {"toolUse": {"toolUseId": "t1", "name": "get_weather", "input": {"city": "Paris", "n": 1.5}}}]}},
    "stopReason": "tool_use",
    "usage": {"inputTokens": 10, "outputTokens": 5, "totalTokens": 105, "cacheReadInputTokens": 90,
              "cacheWriteInputTokens": 0},
    "metrics": {"latencyMs": 300},
}  # fmt: skip


def _neutral(response: ProviderResponse) -> ProviderResponse:
    return dataclasses.replace(response, id="", provider=None)


def test_ac15_three_shapes_normalise_to_equal_responses() -> None:
    """AC 15: one answer in Anthropic, OpenAI and Bedrock shape normalises equal apart from id and provider."""
    a = normalize_anthropic(ANTHROPIC)
    o = normalize_openai(OPENAI)
    b = normalize_bedrock_converse(BEDROCK, response_id="req-1", model="m")
    assert _neutral(a) == _neutral(o) == _neutral(b)
    assert a.usage == Usage(prompt_tokens=10, completion_tokens=5, cached_input_tokens=90)
    assert a.cache_state == CacheState(status=CacheStatus.HIT, saved_tokens=90)
    assert a.choices[0].tool_calls == (
        ToolCall(id="t1", name="get_weather", arguments_json='{"city":"Paris","n":1.5}'),
    )
    assert (a.provider, o.provider, b.provider, b.id) == (
        ProviderKind.ANTHROPIC,
        ProviderKind.OPENAI,
        ProviderKind.BEDROCK,
        "req-1",
    )
    assert a.finish_reason is FinishReason.TOOL_CALLS


def test_openai_compatible_provider_label_and_missing_tool_ids() -> None:
    """OpenAI-shaped bodies from Ollama keep their provider; a tool call without id gets a blake3 id."""
    message = {**OPENAI_MESSAGE, "tool_calls": [{"function": {"name": "f", "arguments": "{}"}}]}
    body = {**OPENAI, "choices": [{**OPENAI_CHOICE, "message": message}]}
    response = normalize_openai(body, provider=ProviderKind.OLLAMA)
    assert response.provider is ProviderKind.OLLAMA
    assert response.choices[0].tool_calls[0].id.startswith("toolu_rp")


@pytest.mark.parametrize(
    ("normalize", "body", "field"),
    [
        (normalize_anthropic, {k: v for k, v in ANTHROPIC.items() if k != "stop_reason"}, "stop_reason"),
        (normalize_anthropic, {**ANTHROPIC, "usage": {"input_tokens": "10", "output_tokens": 5}},
         "usage.input_tokens"),
        (normalize_openai, {**OPENAI, "choices": []}, "choices"),
        (normalize_openai,
         {**OPENAI, "usage": {"prompt_tokens": 1, "completion_tokens": 1,
                              "prompt_tokens_details": {"cached_tokens": 5}}},
         "prompt_tokens"),
        (normalize_bedrock_converse, {**BEDROCK, "output": {}}, "output.message"),
    ],
)  # fmt: skip
def test_missing_or_wrongly_typed_field_names_field_and_provider(normalize: Any, body: Any, field: str) -> None:
    """A missing or wrongly typed required field raises InvalidResponse naming the field and the provider."""
    with pytest.raises(InvalidResponse, match=field) as caught:
        normalize(body)
    assert caught.value.provider is not None


def test_invalid_tool_arguments_raise_not_empty_object() -> None:
    """OpenAI tool arguments that are not a JSON object raise InvalidResponse instead of becoming {}."""
    message = {**OPENAI_MESSAGE, "tool_calls": [{"id": "x", "function": {"name": "f", "arguments": '{"a":'}}]}
    body = {**OPENAI, "choices": [{**OPENAI_CHOICE, "message": message}]}
    with pytest.raises(InvalidResponse, match="arguments"):
        normalize_openai(body)


def test_response_translation_preserves_the_normalised_message() -> None:
    """normalize(openai_to_anthropic(anthropic_to_openai(r))) == normalize(r)."""
    assert normalize_anthropic(
        openai_response_to_anthropic(anthropic_response_to_openai(ANTHROPIC))
    ) == normalize_anthropic(ANTHROPIC)


_shapes = st.recursive(
    json_values,
    lambda c: st.dictionaries(st.sampled_from(["id", "model", "content", "choices", "message", "usage", "type",
                                               "text", "output", "stopReason", "stop_reason", "finish_reason",
                                               "tool_calls", "function", "arguments", "input_tokens",
                                               "prompt_tokens"]), c, max_size=6)
    | st.lists(c, max_size=3),
    max_leaves=20,
)  # fmt: skip


@given(_shapes)
def test_fuzz_malformed_bodies_only_raise_invalid_response_or_translation_error(body: Any) -> None:
    """Random JSON of random shape never raises KeyError/TypeError/IndexError from any normaliser or translator."""
    for call in (normalize_anthropic, normalize_openai, normalize_bedrock_converse):
        with contextlib.suppress(InvalidResponse):
            call(body)
    for translate in (anthropic_response_to_openai, openai_response_to_anthropic):
        with contextlib.suppress(TranslationError):
            translate(body)


def test_openai_usage_null_is_zero_counts_not_an_invalid_response() -> None:
    """An OpenAI(-compatible) reply with "usage": null normalises with zero usage instead of failing."""
    body = {
        "id": "c1",
        "object": "chat.completion",
        "model": "gpt-4o",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
        "usage": None,
    }
    response = normalize_openai(body)
    assert response.choices[0].content == "hi"
    assert response.usage == Usage()


def test_openai_answer_carries_its_own_text_and_the_drops_given_in_its_one_build() -> None:
    """``wire_body_json`` and ``dropped_parameters`` given to ``normalize_openai`` are on the response
    it builds, and the rest of it is what the plain normalisation gives."""
    plain = normalize_openai(OPENAI, provider=ProviderKind.OPENROUTER)
    given = normalize_openai(
        OPENAI, provider=ProviderKind.OPENROUTER, wire_body_json='{"id":"chatcmpl-1"}', dropped_parameters=("seed",)
    )
    assert (given.wire_body_json, given.dropped_parameters) == ('{"id":"chatcmpl-1"}', ("seed",))
    assert given == dataclasses.replace(plain, wire_body_json='{"id":"chatcmpl-1"}', dropped_parameters=("seed",))
    assert (plain.wire_body_json, plain.dropped_parameters) == (None, ())
