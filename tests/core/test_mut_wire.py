"""The format layer's small helpers: stop-reason tables, canonical JSON, tool ids, JSON-object parsing."""

from __future__ import annotations

import pytest

from routeproof.core.formats.wire import (
    ANTHROPIC_TO_OPENAI_STOP,
    BEDROCK_STOP_TO_FINISH,
    OPENAI_TO_ANTHROPIC_STOP,
    as_json_object,
    compact_json,
    deterministic_tool_id,
    finish_reason_for,
)
from routeproof.core.types import FinishReason


@pytest.mark.parametrize(
    ("reason", "finish"),
    [
        ("end_turn", FinishReason.STOP),
        ("stop_sequence", FinishReason.STOP),
        ("stop", FinishReason.STOP),
        ("max_tokens", FinishReason.LENGTH),
        ("length", FinishReason.LENGTH),
        ("model_context_window_exceeded", FinishReason.LENGTH),
        ("tool_use", FinishReason.TOOL_CALLS),
        ("tool_calls", FinishReason.TOOL_CALLS),
        ("function_call", FinishReason.TOOL_CALLS),
        ("refusal", FinishReason.CONTENT_FILTER),
        ("content_filter", FinishReason.CONTENT_FILTER),
        ("pause_turn", FinishReason.OTHER),
        ("", FinishReason.OTHER),
    ],
)
def test_finish_reason_for_each_documented_reason(reason: str, finish: FinishReason) -> None:
    """Each Anthropic/OpenAI stop reason maps to its FinishReason; an unknown one is OTHER."""
    assert finish_reason_for(reason) is finish


def test_stop_tables_translate_both_ways() -> None:
    """The Anthropic<->OpenAI tables agree with each other on the reasons both have."""
    assert ANTHROPIC_TO_OPENAI_STOP["tool_use"] == "tool_calls"
    assert OPENAI_TO_ANTHROPIC_STOP["function_call"] == "tool_use"
    assert BEDROCK_STOP_TO_FINISH["guardrail_intervened"] is FinishReason.CONTENT_FILTER
    for openai, anthropic in OPENAI_TO_ANTHROPIC_STOP.items():
        assert finish_reason_for(openai) is finish_reason_for(anthropic)


def test_compact_json_is_key_ordered_spaceless_and_keeps_non_ascii() -> None:
    """compact_json keeps key order, uses no whitespace and writes non-ASCII characters as themselves."""
    assert compact_json({"b": [1, 2.5], "a": "é🌍"}) == '{"b":[1,2.5],"a":"é🌍"}'


def test_compact_json_rejects_nan() -> None:
    """NaN has no JSON spelling: compact_json raises ValueError."""
    with pytest.raises(ValueError, match="not JSON compliant"):
        compact_json({"x": float("nan")})


def test_deterministic_tool_id_is_stable_and_separates_its_parts() -> None:
    """The id is a fixed function of (provider, message index, tool index); '1','23' differs from '12','3'."""
    assert deterministic_tool_id("openai", 0, 2) == "toolu_rp8747a0a7c59f84dbb4266b1f"
    assert deterministic_tool_id("p", 1, 23) == "toolu_rp5d6c3873f65733120ca46714"
    assert deterministic_tool_id("p", 12, 3) == "toolu_rp51b0a2b6db3e661961b21ddd"


def test_as_json_object_accepts_only_an_object() -> None:
    """A JSON object parses to a dict; arrays, scalars, bad JSON and NaN/Infinity give None."""
    assert as_json_object('{"a": {"b": 1}}') == {"a": {"b": 1}}
    for text in ("[1]", "1", '"s"', "null", "{", "", '{"x": NaN}', '{"x": Infinity}', '{"x": -Infinity}'):
        assert as_json_object(text) is None, text


def test_as_json_object_of_absurd_nesting_is_none() -> None:
    """JSON nested deeper than Python can decode is None, not a RecursionError."""
    assert as_json_object("[" * 100_000 + "]" * 100_000) is None
    assert as_json_object('{"a":' * 100_000 + "1" + "}" * 100_000) is None
