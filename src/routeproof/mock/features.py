"""What a mock answer adds when the request asks for it: thinking with signatures, cache and
reasoning usage, log probabilities. Pure functions over the shapes' default answers.

=====================================  ==========================================================
the request carries                    the default answer adds
=====================================  ==========================================================
Anthropic ``thinking`` (enabled /      a first ``thinking`` block with ``MOCK_SIGNATURE`` (streamed:
adaptive)                              ``thinking_delta`` pieces, then one ``signature_delta``)
Bedrock ``additionalModelRequest       a first ``reasoningContent`` block, ``reasoningText`` with
Fields.thinking`` (enabled/adaptive)   ``MOCK_SIGNATURE`` (streamed: text deltas, then the signature)
Anthropic ``cache_control`` anywhere   ``cache_read_input_tokens`` / ``cache_creation_input_tokens``
(system, message blocks, tools)        (``MOCK_CACHE_READ_TOKENS`` / ``MOCK_CACHE_WRITE_TOKENS``)
OpenAI ``reasoning_effort``, or an     ``completion_tokens_details.reasoning_tokens`` =
o-series / gpt-5 model                 ``MOCK_REASONING_TOKENS`` (plain and in the streamed usage)
OpenAI ``prompt_cache_key``            ``prompt_tokens_details.cached_tokens`` = ``MOCK_CACHE_READ_TOKENS``
OpenAI ``logprobs: true``              ``choices[].logprobs.content`` per text piece, with
                                       ``top_logprobs`` alternatives (plain and on each chunk)
OpenAI ``service_tier``                the answer's ``service_tier`` (``auto`` answered as
                                       ``default``, as OpenAI does; on every chunk)
OpenAI ``seed``                        ``system_fingerprint`` = ``MOCK_FINGERPRINT`` (on every chunk)
OpenAI ``web_search_options``          ``message.annotations``: one ``url_citation`` of the text
                                       (streamed: a ``delta.annotations`` chunk after the text)
OpenAI ``modalities`` with ``audio``   ``message.audio`` (its transcript is the text, ``content``
                                       null; streamed: ``delta.audio`` pieces instead of content)
=====================================  ==========================================================

A scripted body or stream (``Scripted.body`` / ``stream_events``) is sent as scripted, never enriched.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from routeproof.mock.script import Shape

__all__ = [
    "MOCK_ANNOTATION",
    "MOCK_AUDIO_DATA",
    "MOCK_CACHE_READ_TOKENS",
    "MOCK_CACHE_WRITE_TOKENS",
    "MOCK_FINGERPRINT",
    "MOCK_REASONING_TOKENS",
    "MOCK_SIGNATURE",
    "MOCK_THINKING",
    "Asks",
    "asked",
    "enrich_body",
    "enrich_stream",
]

MOCK_THINKING = "The user greets me; a short answer will do."
MOCK_SIGNATURE = "EqQBCkYIBRgCKkBtb2NrLXNpZ25hdHVyZS1yb3V0ZXByb29mLW1vY2s="
"""The signature of the mock's thinking block: opaque, byte-exact, what a client must send back."""
MOCK_CACHE_READ_TOKENS = 16
MOCK_CACHE_WRITE_TOKENS = 4
MOCK_REASONING_TOKENS = 5
_THINKING_PIECES = ("The user greets me; ", "a short answer will do.")
MOCK_FINGERPRINT = "fp_mock0001"
"""The ``system_fingerprint`` of an OpenAI answer to a request with a ``seed``."""
MOCK_ANNOTATION: dict[str, Any] = {
    "type": "url_citation",
    "url_citation": {"url": "https://mock.example/hello", "title": "Hello", "start_index": 0, "end_index": 5},
}
"""The URL citation of an OpenAI answer to a request with ``web_search_options``."""
MOCK_AUDIO_DATA = "UklGRiQAAABXQVZF"
"""The base64 audio of an OpenAI answer to a request whose ``modalities`` include ``audio``."""
_AUDIO_ID = "audio_mock_1"
_AUDIO_EXPIRES_AT = 1_700_003_600
_REASONING_MODEL = re.compile(r"^(o\d+|gpt-5)")


@dataclass(frozen=True, slots=True, kw_only=True)
class Asks:
    """The answer features a request asks for."""

    thinking: bool = False
    cache: bool = False
    reasoning: bool = False
    logprobs: bool = False
    top_logprobs: int = 0
    service_tier: str | None = None  # the tier the answer reports
    fingerprint: bool = False
    annotations: bool = False
    audio: bool = False


def _has_cache_marker(body: Mapping[str, Any]) -> bool:
    places: list[object] = [body.get("system"), body.get("tools")]
    messages = body.get("messages")
    if isinstance(messages, list):
        places += [m.get("content") for m in messages if isinstance(m, Mapping)]
    return any(
        isinstance(item, Mapping) and "cache_control" in item
        for place in places
        if isinstance(place, list)
        for item in place
    )


def asked(shape: Shape, body: object) -> Asks:
    """What ``body`` (a request of ``shape``) asks the answer to carry."""
    if not isinstance(body, Mapping):
        return Asks()
    if shape is Shape.ANTHROPIC:
        thinking = body.get("thinking")
        on = isinstance(thinking, Mapping) and thinking.get("type") in ("enabled", "adaptive")
        return Asks(thinking=on, cache=_has_cache_marker(body))
    if shape is Shape.BEDROCK:
        extra = body.get("additionalModelRequestFields")
        thinking = extra.get("thinking") if isinstance(extra, Mapping) else None
        return Asks(thinking=isinstance(thinking, Mapping) and thinking.get("type") in ("enabled", "adaptive"))
    model = str(body.get("model", "")).rsplit("/", 1)[-1]
    top = body.get("top_logprobs")
    tier = body.get("service_tier")
    modalities = body.get("modalities")
    return Asks(
        reasoning="reasoning_effort" in body or _REASONING_MODEL.match(model) is not None,
        cache="prompt_cache_key" in body,
        logprobs=body.get("logprobs") is True,
        top_logprobs=top if isinstance(top, int) and not isinstance(top, bool) and top > 0 else 0,
        service_tier=("default" if tier == "auto" else tier) if isinstance(tier, str) else None,
        fingerprint="seed" in body,
        annotations="web_search_options" in body,
        audio=isinstance(modalities, list) and "audio" in modalities,
    )


def _logprob_entries(text: str, top: int) -> list[dict[str, Any]]:
    tokens = re.findall(r"\s*\S+\s*?(?=\s|$)|\s+$", text) or [text]  # spell the text exactly, as real tokens do
    out = []
    for i, token in enumerate(tokens):
        alternatives = [
            {"token": f"{token.strip()}{'!' * k}", "logprob": -0.5 * k - 0.01 * i, "bytes": None}
            for k in range(1, top + 1)
        ]
        out.append({"token": token, "logprob": -0.01 * i, "bytes": list(token.encode()), "top_logprobs": alternatives})
    return out


def _anthropic_usage(usage: dict[str, Any], asks: Asks) -> dict[str, Any]:
    if asks.cache:
        return {**usage, "cache_read_input_tokens": MOCK_CACHE_READ_TOKENS,
                "cache_creation_input_tokens": MOCK_CACHE_WRITE_TOKENS}  # fmt: skip
    return usage


def _openai_usage(usage: object, asks: Asks) -> object:
    if not isinstance(usage, dict):
        return usage
    out = dict(usage)
    if asks.reasoning:
        out["completion_tokens_details"] = {"reasoning_tokens": MOCK_REASONING_TOKENS}
    if asks.cache:  # OpenAI counts the cached tokens inside prompt_tokens
        prompt = int(out.get("prompt_tokens", 0)) + MOCK_CACHE_READ_TOKENS
        out["prompt_tokens"] = prompt
        out["total_tokens"] = prompt + int(out.get("completion_tokens", 0))
        out["prompt_tokens_details"] = {"cached_tokens": MOCK_CACHE_READ_TOKENS}
    return out


def enrich_body(shape: Shape, asks: Asks, body: dict[str, Any]) -> dict[str, Any]:
    """The default plain answer ``body`` with what ``asks`` wants added."""
    if shape is Shape.ANTHROPIC:
        out = dict(body)
        if asks.thinking:
            thinking = {"type": "thinking", "thinking": MOCK_THINKING, "signature": MOCK_SIGNATURE}
            out["content"] = [thinking, *body.get("content", [])]
        out["usage"] = _anthropic_usage(dict(body.get("usage", {})), asks)
        return out
    if shape is Shape.BEDROCK:
        return _bedrock_body(asks, body)
    if "choices" not in body:
        return body
    out = {**body, **_openai_top(asks), "usage": _openai_usage(body.get("usage"), asks)}
    if asks.annotations or asks.audio:
        out["choices"] = [{**c, "message": _openai_message(asks, c.get("message") or {})} for c in body["choices"]]
    if asks.logprobs:
        choices = []
        for choice in body["choices"]:
            text = (choice.get("message") or {}).get("content") or ""
            entries = _logprob_entries(text, asks.top_logprobs) if text else []  # a tool call has no tokens
            choices.append({**choice, "logprobs": {"content": entries, "refusal": None}})
        out["choices"] = choices
    return out


def _openai_top(asks: Asks) -> dict[str, Any]:
    """The top-level fields an OpenAI answer (and each of its chunks) adds for ``asks``."""
    top: dict[str, Any] = {}
    if asks.service_tier is not None:
        top["service_tier"] = asks.service_tier
    if asks.fingerprint:
        top["system_fingerprint"] = MOCK_FINGERPRINT
    return top


def _openai_message(asks: Asks, message: dict[str, Any]) -> dict[str, Any]:
    out = dict(message)
    text = message.get("content")
    if asks.annotations and text:
        out["annotations"] = [MOCK_ANNOTATION]
    if asks.audio and text:
        out["content"] = None
        out["audio"] = {"id": _AUDIO_ID, "data": MOCK_AUDIO_DATA, "expires_at": _AUDIO_EXPIRES_AT, "transcript": text}
    return out


def _bedrock_body(asks: Asks, body: dict[str, Any]) -> dict[str, Any]:
    if not asks.thinking:
        return body
    message = dict(body["output"]["message"])
    reasoning = {"reasoningContent": {"reasoningText": {"text": MOCK_THINKING, "signature": MOCK_SIGNATURE}}}
    message["content"] = [reasoning, *message.get("content", [])]
    return {**body, "output": {**body["output"], "message": message}}


def _bedrock_stream(asks: Asks, events: tuple[dict[str, Any], ...]) -> tuple[dict[str, Any], ...]:
    if not asks.thinking:
        return events
    reasoning: list[dict[str, Any]] = [
        {"event": "contentBlockDelta", "data": {"delta": {"reasoningContent": {"text": p}}, "contentBlockIndex": 0}}
        for p in _THINKING_PIECES
    ]
    signature = {"reasoningContent": {"signature": MOCK_SIGNATURE}}
    reasoning.append({"event": "contentBlockDelta", "data": {"delta": signature, "contentBlockIndex": 0}})
    reasoning.append({"event": "contentBlockStop", "data": {"contentBlockIndex": 0}})
    out: list[dict[str, Any]] = []
    for original in events:
        event, data = original, original.get("data")
        if isinstance(data, dict) and isinstance(data.get("contentBlockIndex"), int):
            if reasoning:  # before the first content block
                out += reasoning
                reasoning = []
            event = {**original, "data": {**data, "contentBlockIndex": data["contentBlockIndex"] + 1}}
        out.append(event)
    return tuple(out)


def _shift(event: dict[str, Any]) -> dict[str, Any]:
    data = event.get("data")
    if isinstance(data, dict) and isinstance(data.get("index"), int):
        return {**event, "data": {**data, "index": data["index"] + 1}}
    return event


def _anthropic_stream(asks: Asks, events: tuple[dict[str, Any], ...]) -> tuple[dict[str, Any], ...]:
    def ev(name: str, **data: object) -> dict[str, Any]:
        return {"event": name, "data": {"type": name, **data}}

    out: list[dict[str, Any]] = []
    thinking_added = False
    for original in events:
        event = original
        name = event.get("event")
        raw = event.get("data")
        data: dict[str, Any] = raw if isinstance(raw, dict) else {}
        if name == "message_start" and asks.cache:
            message = dict(data.get("message", {}))
            message["usage"] = _anthropic_usage(dict(message.get("usage", {})), asks)
            event = {**event, "data": {**data, "message": message}}
        if asks.thinking and str(name).startswith("content_block"):
            if not thinking_added:
                thinking_added = True
                out.append(ev("content_block_start", index=0,
                              content_block={"type": "thinking", "thinking": "", "signature": ""}))  # fmt: skip
                out += [
                    ev("content_block_delta", index=0, delta={"type": "thinking_delta", "thinking": p})
                    for p in _THINKING_PIECES
                ]
                out.append(ev("content_block_delta", index=0,
                              delta={"type": "signature_delta", "signature": MOCK_SIGNATURE}))  # fmt: skip
                out.append(ev("content_block_stop", index=0))
            event = _shift(event)
        out.append(event)
    return tuple(out)


def _openai_chunk(asks: Asks, event: dict[str, Any]) -> dict[str, Any]:
    data = event.get("data")
    if not isinstance(data, dict):
        return event
    top = _openai_top(asks)
    if top:  # after the chunk's own fields, before its choices, as OpenAI orders them
        head = {k: v for k, v in data.items() if k not in ("choices", "usage")}
        data = {**head, **top, **{k: v for k, v in data.items() if k in ("choices", "usage")}}
    if asks.audio and data.get("choices"):
        choices = []
        for choice in data["choices"]:
            delta = dict(choice.get("delta") or {})
            if delta.get("content"):
                delta["audio"] = {"transcript": delta.pop("content")}
            elif "content" in delta:
                delta["content"] = None
            choices.append({**choice, "delta": delta})
        data = {**data, "choices": choices}
    if data.get("usage") is not None:
        data = {**data, "usage": _openai_usage(data["usage"], asks)}
    if asks.logprobs and data.get("choices"):
        choices = []
        for choice in data["choices"]:
            text = (choice.get("delta") or {}).get("content")
            entries = _logprob_entries(text, asks.top_logprobs) if text else None
            choices.append({**choice, "logprobs": {"content": entries, "refusal": None}} if entries else choice)
        data = {**data, "choices": choices}
    return {**event, "data": data}


def enrich_stream(shape: Shape, asks: Asks, events: tuple[dict[str, Any], ...]) -> tuple[dict[str, Any], ...]:
    """The default stream ``events`` with what ``asks`` wants added."""
    if shape is Shape.ANTHROPIC:
        return _anthropic_stream(asks, events)
    if shape is Shape.BEDROCK:
        return _bedrock_stream(asks, events)
    return tuple(_openai_chunk(asks, e) for e in _openai_stream(asks, events))


def _openai_stream(asks: Asks, events: tuple[dict[str, Any], ...]) -> tuple[dict[str, Any], ...]:
    """The default OpenAI stream with a chunk of annotations, or of the audio's data, after the text."""
    extra: list[dict[str, Any]] = []
    if asks.annotations:
        extra.append({"annotations": [MOCK_ANNOTATION]})
    if asks.audio:
        extra.append({"audio": {"id": _AUDIO_ID, "data": MOCK_AUDIO_DATA, "expires_at": _AUDIO_EXPIRES_AT}})
    if not extra:
        return events
    finish = next((i for i, e in enumerate(events) if _finish_of(e)), None)
    if finish is None:
        return events
    template = events[finish]["data"]
    chunks = [
        {"data": {**template, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": None}]}}
        for delta in extra
    ]
    return (*events[:finish], *chunks, *events[finish:])


def _finish_of(event: dict[str, Any]) -> bool:
    data = event.get("data")
    choices = data.get("choices") if isinstance(data, dict) else None
    return isinstance(choices, list) and any(isinstance(c, dict) and c.get("finish_reason") for c in choices)
