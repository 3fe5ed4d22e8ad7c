"""Round-trip laws over the whole content model (Hypothesis): same protocol byte-exact, signatures and
cache markers included; and the emitted bodies' content-model pieces land where each protocol expects."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings

from routeproof.core.formats.translate import (
    dropped_by_target,
    parse_anthropic_request,
    parse_openai_request,
    request_to_anthropic,
)
from routeproof.core.formats.translate_emit import _to_anthropic, _to_bedrock, _to_openai
from routeproof.core.messages import WireFormat
from tests.core.strategies_format import anthropic_full_requests

_BIG_TREES = settings(suppress_health_check=[HealthCheck.too_slow])
"""A whole-model tree is large by design (images, documents, thinking in every turn): generation is slow."""


def _keys(value: object) -> list[str]:
    """Every dict key in a JSON value, at any depth."""
    if isinstance(value, dict):
        return [*value, *(k for v in value.values() for k in _keys(v))]
    if isinstance(value, list):
        return [k for v in value for k in _keys(v)]
    return []


@_BIG_TREES
@given(anthropic_full_requests())
def test_anthropic_neutral_anthropic_is_byte_exact_over_the_whole_model(body: dict[str, Any]) -> None:
    """Parse then print in the same protocol gives the same JSON text: signatures, cache markers, documents."""
    assert json.dumps(_to_anthropic(*parse_anthropic_request(body))) == json.dumps(body)


@_BIG_TREES
@given(anthropic_full_requests())
def test_every_signature_and_cache_marker_reaches_bedrock(body: dict[str, Any]) -> None:
    """Each thinking signature is a reasoningContent signature, and each cache marker is one cachePoint."""
    req, _ = parse_anthropic_request(body)
    if any(b["type"] == "image" and b["source"]["type"] == "url" for m in body["messages"] for b in m["content"]):
        return  # an http image is refused by Converse (tested in test_field_table)
    if any(b["type"] == "document" and b["source"]["type"] == "url" for m in body["messages"] for b in m["content"]):
        return
    out = _to_bedrock(req)
    blocks = [b for m in out["messages"] for b in m["content"]]
    signatures = [b["signature"] for m in body["messages"] for b in m["content"] if b["type"] == "thinking"]
    assert [b["reasoningContent"]["reasoningText"]["signature"] for b in blocks if "reasoningText" in b.get(
        "reasoningContent", {})] == signatures  # fmt: skip
    marked = sum("cache_control" in b for m in body["messages"] for b in m["content"])
    assert sum("cachePoint" in b for b in blocks) == marked


@_BIG_TREES
@given(anthropic_full_requests())
def test_what_openai_cannot_take_is_named_never_silent(body: dict[str, Any]) -> None:
    """Sent to OpenAI, thinking blocks, cache markers and top_k are left out and named by dropped_by_target."""
    req, extras = parse_anthropic_request(body)
    dropped = dropped_by_target(req, WireFormat.OPENAI_CHAT)
    blocks = [b for m in body["messages"] for b in m["content"]]
    assert ("thinking_blocks" in dropped) == any(b["type"] in ("thinking", "redacted_thinking") for b in blocks)
    assert ("top_k" in dropped) == ("top_k" in body)
    try:
        out = _to_openai(req, extras)
    except Exception:
        return
    # the caller's own JSON (a tool's schema, a tool call's input) may use any key, "cache_control" included
    own = {**out, "tools": [{**t, "function": {**t["function"], "parameters": {}}} for t in out.get("tools", [])]}
    keys = set(_keys(own))
    assert "cache_control" not in keys
    assert "signature" not in keys
    again, _ = parse_openai_request(out)
    assert again.user == req.user
    assert again.parallel_tool_calls == req.parallel_tool_calls
    assert request_to_anthropic(again, extras.model)["model"] == extras.model
