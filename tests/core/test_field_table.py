"""The field table: its lookup rules, a row for every installed-SDK request field, and rows that say what the
translation really does."""

from __future__ import annotations

from typing import Any

import pytest

from routeproof.core.errors import TranslationError
from routeproof.core.formats.field_table import ROWS, FieldRow, Treatment, field_pattern, treatment_of
from routeproof.core.formats.translate import parse_anthropic_request, parse_openai_request
from routeproof.core.formats.translate_emit import _dropped_by_target, _to_anthropic, _to_bedrock, _to_openai
from routeproof.core.messages import WireFormat, WireOrigin


def test_same_protocol_is_verbatim() -> None:
    """A field sent out in its own protocol goes verbatim, whatever it is."""
    row = treatment_of(WireFormat.OPENAI_CHAT, "no_such_field", WireFormat.OPENAI_CHAT)
    assert (row.treatment, row.note) == (Treatment.VERBATIM, "same protocol")


def test_unknown_field_to_other_protocol_is_refused() -> None:
    """A field with no row for another protocol is refused, naming the target protocol."""
    row = treatment_of(WireFormat.OPENAI_CHAT, "no_such_field", WireFormat.ANTHROPIC_MESSAGES)
    assert row.treatment is Treatment.REFUSED
    assert row.note == "no mapping to anthropic-messages in this version"


def test_field_row_names_bad_values() -> None:
    """A row with an empty field or an unknown treatment is refused at construction, naming it."""
    with pytest.raises(ValueError, match=r"FieldRow\.field"):
        FieldRow(
            source=WireFormat.OPENAI_CHAT, field="", target=WireFormat.OPENAI_CHAT, treatment=Treatment.DROPPED, note=""
        )
    bad: Any = "eaten"
    with pytest.raises(ValueError, match=r"FieldRow\.treatment"):
        FieldRow(source=WireFormat.OPENAI_CHAT, field="x", target=WireFormat.OPENAI_CHAT, treatment=bad, note="")


def test_wire_origin_checks_headers() -> None:
    """WireOrigin takes lower-case (name, value) str pairs and names a bad one."""
    by_value: Any = "openai-chat"
    assert WireOrigin(protocol=by_value, body_json="{}").protocol is WireFormat.OPENAI_CHAT
    with pytest.raises(ValueError, match="lower-case"):
        WireOrigin(protocol=WireFormat.OPENAI_CHAT, body_json="{}", headers=(("X-A", "b"),))
    short: Any = (("x-a",),)
    with pytest.raises(TypeError, match=r"headers\[0\]"):
        WireOrigin(protocol=WireFormat.OPENAI_CHAT, body_json="{}", headers=short)


# --- the rows against the installed SDKs and against what the translation does ----------------------

_OAI, _ANT, _BED = WireFormat.OPENAI_CHAT, WireFormat.ANTHROPIC_MESSAGES, WireFormat.BEDROCK_CONVERSE
_TARGETS = {_OAI: (_ANT, _BED), _ANT: (_OAI, _BED)}


def _typed_dict_keys(*types: type) -> set[str]:
    """Every key of the TypedDicts ``types`` (their bases' keys included)."""
    keys: set[str] = set()
    for typed in types:
        for base in typed.__mro__:
            keys |= set(getattr(base, "__annotations__", {}))
    return keys


def _sdk_fields() -> dict[WireFormat, set[str]]:
    from anthropic.types import message_create_params as anthropic_params
    from openai.types.chat import completion_create_params as openai_params

    return {
        _OAI: _typed_dict_keys(openai_params.CompletionCreateParamsBase, openai_params.CompletionCreateParamsStreaming),
        _ANT: _typed_dict_keys(anthropic_params.MessageCreateParamsBase, anthropic_params.MessageCreateParamsStreaming),
    }


@pytest.mark.parametrize("source", [_OAI, _ANT], ids=lambda w: w.value)
def test_every_sdk_request_field_has_a_row_per_target(source: WireFormat) -> None:
    """Each field of the installed SDK's request TypedDict has a decided row for every other target protocol."""
    rows = {(row.field, row.target) for row in ROWS if row.source is source}
    missing = sorted(
        f"{field} -> {target.value}"
        for field in _sdk_fields()[source]
        for target in _TARGETS[source]
        if (field, target) not in rows
    )
    assert missing == []


def test_every_row_is_unique_and_decided() -> None:
    """No (source, field, target) has two rows, no row is VERBATIM across protocols, and every note says why."""
    keys = [(row.source, row.field, row.target) for row in ROWS]
    assert len(keys) == len(set(keys))
    assert all(row.treatment is not Treatment.VERBATIM and row.note for row in ROWS)


def test_an_indexed_path_finds_its_pattern_row() -> None:
    """A parse path with indices (messages[3].name) is looked up as its pattern (messages[].name)."""
    assert field_pattern("messages[3].content[1:]") == "messages[].content[]"
    row = treatment_of(_OAI, "messages[3].name", _ANT)
    assert (row.field, row.treatment) == ("messages[].name", Treatment.DROPPED)


_TOOL_F = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
_TOOL_G = {"type": "function", "function": {"name": "g", "parameters": {"type": "object"}, "strict": True}}
_PNG_DATA_URL = "data:image/png;base64,AA=="
_BASES: dict[WireFormat, dict[str, Any]] = {
    _OAI: {
        "model": "m",
        "max_completion_tokens": 4096,
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [_TOOL_F],
    },
    _ANT: {
        "model": "m",
        "max_tokens": 4096,
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [{"name": "f", "input_schema": {"type": "object"}}],
    },
}
_SAMPLES: dict[WireFormat, dict[str, object]] = {
    _OAI: {
        "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": _PNG_DATA_URL}}]}],
        "model": "m2",
        "audio": {"voice": "alloy", "format": "wav"},
        "frequency_penalty": 0.5,
        "function_call": "auto",
        "functions": [{"name": "f"}],
        "logit_bias": {"50256": -100},
        "logprobs": True,
        "max_completion_tokens": 77,
        "max_tokens": 77,
        "metadata": {"k": "v"},
        "modalities": ["text"],
        "moderation": {"input": True},
        "n": 1,
        "parallel_tool_calls": False,
        "prediction": {"type": "content", "content": "x"},
        "presence_penalty": 0.5,
        "prompt_cache_key": "k",
        "prompt_cache_options": {},
        "prompt_cache_retention": "24h",
        "reasoning_effort": "high",
        "response_format": {"type": "json_schema", "json_schema": {"name": "a", "schema": {"type": "object"}}},
        "safety_identifier": "s",
        "seed": 1,
        "service_tier": "auto",
        "stop": ["X"],
        "store": True,
        "stream": True,
        "stream_options": {"include_usage": True},
        "temperature": 0.5,
        "tool_choice": "required",
        "tools": [_TOOL_G],
        "top_logprobs": 2,
        "top_p": 0.5,
        "user": "u",
        "verbosity": "low",
        "web_search_options": {},
    },
    _ANT: {
        "max_tokens": 77,
        "messages": [
            {"role": "user", "content": [{"type": "image", "source": {"type": "url", "url": "s3://b/a.png"}}]}
        ],
        "model": "m2",
        "cache_control": {"type": "ephemeral"},
        "container": "c",
        "diagnostics": {},
        "inference_geo": "us",
        "metadata": {"user_id": "u"},
        "output_config": {"effort": "high"},
        "service_tier": "auto",
        "speed": "fast",
        "stop_sequences": ["X"],
        "stream": True,
        "system": "s",
        "temperature": 0.5,
        "thinking": {"type": "enabled", "budget_tokens": 2048},
        "tool_choice": {"type": "any"},
        "tools": [{"name": "g", "input_schema": {"type": "object"}}],
        "top_k": 5,
        "top_p": 0.5,
        "user_profile_id": "p",
        "workspace_id": "w",
        "context_management": {},
        "mcp_servers": [],
    },
}
_NOTHING_TO_SEND = {
    ("n", _ANT),  # n=1 is the target's only mode
    ("n", _BED),
    ("stream_options", _ANT),  # its include_usage is what the target's stream always does
    ("stream_options", _BED),
    ("model", _BED),  # the Converse model id is in the URL
    ("stream", _BED),  # ConverseStream is another URL
}
"""TRANSLATED rows whose sample leaves the target body as it was (the note says why)."""


def _emit(source: WireFormat, target: WireFormat, body: dict[str, Any]) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The ``target`` body for the ``source`` wire ``body``, and what the parse and the emitter left out."""
    req, extras = (parse_openai_request if source is _OAI else parse_anthropic_request)(body)
    if target is _BED:
        return _to_bedrock(req), extras.untranslated + _dropped_by_target(req, target)
    out = _to_anthropic(req, extras) if target is _ANT else _to_openai(req, extras)
    return out, extras.untranslated + _dropped_by_target(req, target)


_TOP_LEVEL = [(row.source, row.field, row.target) for row in ROWS if "[" not in row.field and "." not in row.field]


@pytest.mark.parametrize(("source", "field", "target"), _TOP_LEVEL, ids=lambda v: getattr(v, "value", v))
def test_the_table_says_what_the_translation_does(source: WireFormat, field: str, target: WireFormat) -> None:
    """TRANSLATED changes the target body; DROPPED leaves it unchanged and is named; REFUSED is never sent."""
    row = treatment_of(source, field, target)
    base, _ = _emit(source, target, _BASES[source])
    body = {**_BASES[source], field: _SAMPLES[source][field]}
    if field == "max_tokens" and source is _OAI:  # OpenAI's max_completion_tokens wins over max_tokens
        del body["max_completion_tokens"]
        base, _ = _emit(source, target, {k: v for k, v in _BASES[source].items() if k != "max_completion_tokens"})
    if row.treatment is Treatment.REFUSED:
        try:
            _, left_out = _emit(source, target, body)
        except TranslationError:
            return
        assert field in left_out  # the shell refuses it by this row
        return
    out, left_out = _emit(source, target, body)
    if row.treatment is Treatment.DROPPED:
        assert out == base
        assert left_out  # named: the parse's untranslated fields or the emitter's drops
    elif (field, target) in _NOTHING_TO_SEND:
        assert out == base
    else:
        assert out != base
        assert field not in left_out
