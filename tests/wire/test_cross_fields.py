"""``core.cross_fields``: the caller's fields judged by the field table alone (no gateway)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from routeproof.core.formats.cross_fields import (
    bedrock_refusals,
    caller_fields_plan,
    judge_caller_fields,
    with_emitter_drops,
)
from routeproof.core.formats.translate import parse_anthropic_request, parse_openai_request
from routeproof.core.messages import WireFormat, WireOrigin
from routeproof.core.types import ChatRequest

_OAI, _ANT, _BED = WireFormat.OPENAI_CHAT, WireFormat.ANTHROPIC_MESSAGES, WireFormat.BEDROCK_CONVERSE
HI: Any = [{"role": "user", "content": "hi"}]


def _judge(source: WireFormat, body: dict[str, Any]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    parse = parse_openai_request if source is _OAI else parse_anthropic_request
    plan = judge_caller_fields(source, _BED, body, parse(body)[1].untranslated)
    return plan.dropped, tuple(name for name, _ in plan.refused)


def test_top_level_nested_and_parsed_out_fields_are_each_judged_once() -> None:
    """A DROPPED top-level key, a nested row found by presence, a path the parse left out."""
    body = {
        "model": "m", "max_completion_tokens": 9, "seed": 1, "verbosity": "low",
        "messages": [{"role": "user", "content": "hi", "name": "bob"}],
        "tools": [{"type": "function", "function": {"name": "f", "parameters": {}, "strict": True}}],
    }  # fmt: skip
    assert _judge(_OAI, body) == (("seed", "verbosity", "tools[].function.strict", "messages[].name"), ())


def test_a_refused_field_is_refused_not_dropped_and_carries_the_rows_reason() -> None:
    """``audio`` and an audio input part: refused with the table's reasons."""
    part = {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}}
    content = [{"type": "text", "text": "hear this"}, part]
    body = {"model": "m", "max_tokens": 9, "audio": {}, "messages": [{"role": "user", "content": content}]}
    plan = judge_caller_fields(_OAI, _BED, body, parse_openai_request(body)[1].untranslated)
    reasons = dict(plan.refused)
    assert reasons["audio"] == "Bedrock Converse has no audio output"
    assert reasons["messages[].content[].input_audio"] == "Converse takes no audio input"
    assert not set(plan.dropped) & set(reasons)


def test_an_unknown_form_of_a_translated_field_is_refused() -> None:
    """``thinking`` of a type the content model does not know: not carried, so refused, not lost."""
    body = {"model": "m", "max_tokens": 9, "messages": HI, "thinking": {"type": "sometimes"}}
    assert _judge(_ANT, body) == ((), ("thinking",))


def test_an_unknown_nested_field_has_no_row_and_is_refused() -> None:
    """A key the parse does not know inside a message: no mapping in this version."""
    body = {"model": "m", "max_tokens": 9, "messages": [{"role": "user", "content": "hi", "mood": "x"}]}
    assert _judge(_ANT, body) == ((), ("messages[].mood",))


def test_same_protocol_judges_nothing() -> None:
    """Same protocol is verbatim: nothing dropped, nothing refused."""
    plan = judge_caller_fields(_OAI, _OAI, {"seed": 1, "audio": {}}, ())
    assert (plan.dropped, plan.refused) == ((), ())


def test_emitter_drops_are_added_under_the_callers_names_once() -> None:
    """``user`` from Anthropic is ``metadata``; a path ending in the name covers it; new ones follow."""
    assert with_emitter_drops(_ANT, ("metadata",), ("user",)) == ("metadata",)
    assert with_emitter_drops(_ANT, ("system[].cache_control.ttl",), ("cache_control.ttl",)) == (
        "system[].cache_control.ttl",
    )
    assert with_emitter_drops(_OAI, ("seed",), ("seed", "tool_choice")) == ("seed", "tool_choice")


def test_a_request_built_in_python_reports_the_emitters_drops() -> None:
    """No origin: the emitter's neutral names (a library user's seed to Bedrock is named, not lost)."""
    req = ChatRequest(messages=parse_openai_request({"model": "m", "messages": HI})[0].messages, seed=3)
    plan = caller_fields_plan(req, req, _BED)
    assert (plan.dropped, plan.refused) == (("seed",), ())


def test_the_origin_untranslated_paths_are_used_when_recorded() -> None:
    """The gateway records the parse's left-out paths on the origin; they are judged as recorded."""
    body = {"model": "m", "max_tokens": 9, "messages": HI}
    req, _ = parse_anthropic_request(body)
    origin = WireOrigin(protocol=_ANT, body_json=json.dumps(body), untranslated=("messages[0].mood",))
    plan = caller_fields_plan(replace(req, origin=origin), req, _BED)
    assert plan.refused == (("messages[].mood", "no mapping to bedrock-converse in this version"),)


def test_bedrock_refusals_name_the_table_row_or_the_emitters_field() -> None:
    """The gateway's pre-routing check: a REFUSED row, else the emitter's refusal (n > 1), else none."""
    body = {"model": "m", "max_tokens": 9, "messages": HI, "n": 2}
    req, _ = parse_openai_request(body)
    with_origin = replace(req, origin=WireOrigin(protocol=_OAI, body_json=json.dumps(body)))
    assert [name for name, _ in bedrock_refusals(with_origin)] == ["n=2"]
    body = {**body, "n": 1, "response_format": {"type": "json_object"}}
    req, _ = parse_openai_request(body)
    with_origin = replace(req, origin=WireOrigin(protocol=_OAI, body_json=json.dumps(body)))
    assert [name for name, _ in bedrock_refusals(with_origin)] == ["response_format"]
    plain, _ = parse_openai_request({"model": "m", "max_tokens": 9, "messages": HI})
    assert bedrock_refusals(plain) == ()
