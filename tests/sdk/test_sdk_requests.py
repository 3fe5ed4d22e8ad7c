"""The official SDKs' request types as the oracle: every body routeproof emits validates against them.

Hypothesis conversations (both shapes, streamed and not, several models) go through the emitters
the providers use (capabilities fitted first) and are validated with pydantic against
``anthropic.types.MessageCreateParams*`` and ``openai.types.chat.CompletionCreateParams*``. The
SDKs type message lists as lazy ``Iterable``s, so every iterator pydantic returns is consumed (that is
when its items are validated); unknown top-level keys are checked by name.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

anthropic = pytest.importorskip("anthropic", reason="the anthropic SDK is the test oracle (test extra)")
openai = pytest.importorskip("openai", reason="the openai SDK is the test oracle (test extra)")

from anthropic.types import message_create_params  # noqa: E402 - after the importorskip above
from openai.types.chat import completion_create_params  # noqa: E402 - after the importorskip above
from pydantic import TypeAdapter  # noqa: E402 - the SDKs bring pydantic

from routeproof.core.capabilities import fit_request  # noqa: E402
from routeproof.core.formats.translate import parse_anthropic_request, request_to_anthropic, request_to_openai  # noqa: E402
from routeproof.core.types import ChatRequest, Message, ProviderKind  # noqa: E402
from routeproof.providers.capabilities import shipped_capabilities  # noqa: E402
from tests.core.strategies_format import anthropic_requests  # noqa: E402

ANTHROPIC_PLAIN = TypeAdapter(message_create_params.MessageCreateParamsNonStreaming)
ANTHROPIC_STREAM = TypeAdapter(message_create_params.MessageCreateParamsStreaming)
OPENAI_PLAIN = TypeAdapter(completion_create_params.CompletionCreateParamsNonStreaming)
OPENAI_STREAM = TypeAdapter(completion_create_params.CompletionCreateParamsStreaming)

# anthropic 2.x no longer types temperature/top_p (deprecated for the newest models); the API still
# takes them for the others, so they are the only top-level keys allowed beyond the SDK's.
ANTHROPIC_LEGACY_KEYS = frozenset({"temperature", "top_p"})

ANTHROPIC_MODELS = ("claude-sonnet-4-5", "claude-opus-4-7")
OPENAI_MODELS = ("gpt-4o", "gpt-5.4-mini", "o3", "o4-mini")


def _force(value: Any) -> Any:
    """Consume every lazily validated iterator pydantic returned, so each item is validated."""
    if isinstance(value, dict):
        return {k: _force(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_force(v) for v in value]
    if hasattr(value, "__next__"):
        return [_force(v) for v in value]
    return value


def _validate(adapter: TypeAdapter[Any], body: dict[str, Any], allowed_extra: frozenset[str] = frozenset()) -> None:
    _force(adapter.validate_python(body))
    known = set(adapter.core_schema.get("schema", adapter.core_schema).get("fields", {}))
    assert known, "the SDK request type lists its fields"
    assert set(body) <= known | allowed_extra, sorted(set(body) - known - allowed_extra)


def _anthropic_body(req: ChatRequest, model: str, *, stream: bool) -> dict[str, Any]:
    caps = shipped_capabilities().lookup(ProviderKind.ANTHROPIC, model)
    body = request_to_anthropic(fit_request(req, caps).request, model)
    if stream:
        body["stream"] = True
    return body


def _openai_body(req: ChatRequest, model: str, *, stream: bool) -> dict[str, Any]:
    caps = shipped_capabilities().lookup(ProviderKind.OPENAI, model)
    body = request_to_openai(fit_request(req, caps).request, model, capabilities=caps)
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    return body


@settings(max_examples=150, deadline=None)
@given(anthropic_requests(), st.booleans(), st.randoms(use_true_random=False))
def test_every_emitted_body_validates_against_the_sdk_request_types(
    body: dict[str, Any], stream: bool, rng: Any
) -> None:
    """150 conversations x {anthropic, openai} x models, streamed or not: each body is a valid SDK request."""
    req, _ = parse_anthropic_request(body)
    turns = tuple(Message(role=m.role, content=tuple(rng.sample(m.content, len(m.content)))) for m in req.messages)
    shuffled = ChatRequest(
        messages=turns,
        max_tokens=req.max_tokens, system=req.system, tools=req.tools, temperature=req.temperature,
        stop_sequences=req.stop_sequences,
    )  # fmt: skip
    for model in ANTHROPIC_MODELS:
        _validate(ANTHROPIC_STREAM if stream else ANTHROPIC_PLAIN, _anthropic_body(req, model, stream=stream),
                  ANTHROPIC_LEGACY_KEYS)  # fmt: skip
    for model in OPENAI_MODELS:
        _validate(OPENAI_STREAM if stream else OPENAI_PLAIN, _openai_body(shuffled, model, stream=stream))


def test_the_oracle_rejects_a_body_the_api_would_reject() -> None:
    """The validation has teeth: a tool message with a non-text part and an unknown top-level key both fail."""
    bad_part = {"model": "gpt-4o", "messages": [{"role": "tool", "tool_call_id": "t", "content": [{"type": "x"}]}]}
    with pytest.raises(Exception, match="validation error"):
        _validate(OPENAI_PLAIN, bad_part)
    with pytest.raises(AssertionError, match="max_tokenz"):
        _validate(OPENAI_PLAIN, {"model": "gpt-4o", "messages": [], "max_tokenz": 1})
