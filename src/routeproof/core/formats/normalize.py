"""Each provider's documented response shape -> one :class:`ProviderResponse` (seed 000 §1.11).

Unknown fields are dropped; a missing or wrongly typed required field raises
:class:`InvalidResponse` naming the field and the provider. Anthropic ``thinking`` /
``redacted_thinking`` and Bedrock ``reasoningContent`` land in ``Choice.thinking`` (signatures
byte-exact); OpenAI's ``refusal`` in ``Choice.refusal`` and its ``reasoning_tokens`` in
``Usage.reasoning_tokens``. Block types with no place in a ``Choice`` (server-tool blocks) are dropped.

One meaning of ``Usage`` for every provider (so that AC 15 holds): ``prompt_tokens`` counts the
input tokens that were neither read from nor written to the prompt cache (Anthropic's and
Bedrock's ``input_tokens``); ``cached_input_tokens`` are cache reads and ``cache_creation_tokens``
cache writes. OpenAI's ``prompt_tokens`` includes its ``cached_tokens`` (and OpenRouter's
``cache_write_tokens``), so they are subtracted. The total input is the sum of the three.
``CacheState`` is HIT when any token was read from the cache (``saved_tokens`` = those tokens),
MISS when tokens were only written to it, NONE otherwise.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import icontract

from routeproof.core.blocks import RedactedThinkingBlock, ThinkingBlock
from routeproof.core.errors import InvalidResponse
from routeproof.core.formats.wire import BEDROCK_STOP_TO_FINISH, as_json_object, compact_json, deterministic_tool_id
from routeproof.core.formats.wire import finish_reason_for as _finish
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

__all__ = [
    "FieldReader",
    "assemble_response",
    "cache_state_for",
    "normalize_anthropic",
    "normalize_bedrock_converse",
    "normalize_openai",
]


class FieldReader:
    """Typed field access that names the provider and the field path in every InvalidResponse."""

    __slots__ = ("provider",)

    def __init__(self, provider: ProviderKind) -> None:
        self.provider = provider

    def fail(self, reason: str) -> InvalidResponse:
        return InvalidResponse(reason, provider=self.provider)

    def obj(self, value: object, where: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(f"{where} must be an object, got {type(value).__name__}")
        return value

    def arr(self, value: object, where: str) -> list[Any]:
        if not isinstance(value, list):
            raise self.fail(f"{where} must be an array, got {type(value).__name__}")
        return value if type(value) is list else list(iter(value))  # a subclass may redefine len()

    def text(self, value: object, where: str) -> str:
        if not isinstance(value, str):
            raise self.fail(f"{where} must be a string, got {type(value).__name__}")
        return value

    def count(self, value: object, where: str, *, optional: bool = False) -> int:
        if value is None and optional:
            return 0
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise self.fail(f"{where} must be a non-negative integer, got {value!r}")
        return value

    def args(self, value: object, where: str) -> str:
        try:
            return compact_json(self.obj(value, where))
        except (ValueError, RecursionError) as exc:
            raise self.fail(f"{where} is not representable as JSON: {exc}") from exc

    def args_text(self, text: object, where: str) -> str:
        parsed = as_json_object(self.text(text, where))
        if parsed is None:
            raise self.fail(f"{where} is not the JSON text of an object: {str(text)[:80]!r}")
        return self.args(parsed, where)


def _cache_state(usage: Usage) -> CacheState:
    if usage.cached_input_tokens:
        return CacheState(status=CacheStatus.HIT, saved_tokens=usage.cached_input_tokens)
    if usage.cache_creation_tokens:
        return CacheState(status=CacheStatus.MISS)
    return CacheState()


@icontract.ensure(lambda usage, result: (result.status is CacheStatus.HIT) == (usage.cached_input_tokens > 0))
def cache_state_for(usage: Usage) -> CacheState:
    """The CacheState a response with this usage reports."""
    return _cache_state(usage)


def _assemble(
    *,
    provider: ProviderKind,
    model: str,
    response_id: str,
    text: str,
    tool_calls: tuple[ToolCall, ...],
    finish_reason: FinishReason,
    usage: Usage,
    thinking: tuple[ThinkingBlock | RedactedThinkingBlock, ...] = (),
    refusal: str | None = None,
    annotations_json: str | None = None,
    wire_body_json: str | None = None,
    dropped_parameters: tuple[str, ...] = (),
) -> ProviderResponse:
    choice = Choice(
        index=0, content=text, tool_calls=tool_calls, finish_reason=finish_reason, thinking=thinking, refusal=refusal,
        annotations_json=annotations_json,
    )  # fmt: skip
    return ProviderResponse(
        id=response_id,
        usage=usage,
        choices=(choice,),
        finish_reason=finish_reason,
        cache_state=_cache_state(usage),
        provider=provider,
        model=model,
        dropped_parameters=dropped_parameters,
        wire_body_json=wire_body_json,
    )


@icontract.ensure(lambda provider, result: result.provider is provider and len(result.choices) == 1)
def assemble_response(
    *,
    provider: ProviderKind,
    model: str,
    response_id: str,
    text: str,
    tool_calls: tuple[ToolCall, ...],
    finish_reason: FinishReason,
    usage: Usage,
    thinking: tuple[ThinkingBlock | RedactedThinkingBlock, ...] = (),
    refusal: str | None = None,
) -> ProviderResponse:
    """The one-choice ProviderResponse every normaliser (and the stream fold) builds."""
    return _assemble(
        provider=provider,
        model=model,
        response_id=response_id,
        text=text,
        tool_calls=tool_calls,
        finish_reason=finish_reason,
        usage=usage,
        thinking=thinking,
        refusal=refusal,
    )


# --- Anthropic Messages -----------------------------------------------------------------------------


def anthropic_usage(raw: object, read: FieldReader) -> Usage:
    """Anthropic ``usage`` (also the streamed one): input_tokens already excludes cache traffic."""
    usage = read.obj(raw, "usage")
    written = read.count(usage.get("cache_creation_input_tokens"), "usage.cache_creation_input_tokens", optional=True)
    by_ttl = usage.get("cache_creation")  # {"ephemeral_5m_input_tokens", "ephemeral_1h_input_tokens"}, when sent
    written_1h = 0
    if by_ttl is not None:
        where = "usage.cache_creation.ephemeral_1h_input_tokens"
        written_1h = read.count(
            read.obj(by_ttl, "usage.cache_creation").get("ephemeral_1h_input_tokens"), where, optional=True
        )
        if written_1h > written:
            raise read.fail(f"{where}={written_1h!r} exceeds usage.cache_creation_input_tokens={written!r}")
    return Usage(
        service_tier=usage.get("service_tier") if isinstance(usage.get("service_tier"), str) else None,
        prompt_tokens=read.count(usage.get("input_tokens"), "usage.input_tokens"),
        completion_tokens=read.count(usage.get("output_tokens"), "usage.output_tokens"),
        cached_input_tokens=read.count(
            usage.get("cache_read_input_tokens"), "usage.cache_read_input_tokens", optional=True
        ),
        cache_creation_tokens=written,
        cache_creation_1h_tokens=written_1h,
    )


def _normalize_anthropic(body: object) -> ProviderResponse:
    read = FieldReader(ProviderKind.ANTHROPIC)
    response = read.obj(body, "body")
    texts: list[str] = []
    calls: list[ToolCall] = []
    thinking: list[ThinkingBlock | RedactedThinkingBlock] = []
    for i, raw in enumerate(read.arr(response.get("content"), "content")):
        block = read.obj(raw, f"content[{i}]")
        kind = read.text(block.get("type"), f"content[{i}].type")
        if kind == "text":
            texts.append(read.text(block.get("text"), f"content[{i}].text"))
        elif kind == "thinking":
            text = read.text(block.get("thinking"), f"content[{i}].thinking")
            signature = read.text(block.get("signature", ""), f"content[{i}].signature")
            thinking.append(ThinkingBlock(thinking=text, signature=signature))
        elif kind == "redacted_thinking":
            data = read.text(block.get("data"), f"content[{i}].data")
            if not data:
                raise read.fail(f"content[{i}].data is empty")
            thinking.append(RedactedThinkingBlock(data=data))
        elif kind == "tool_use":
            calls.append(
                ToolCall(
                    id=read.text(block.get("id"), f"content[{i}].id"),
                    name=read.text(block.get("name"), f"content[{i}].name"),
                    arguments_json=read.args(block.get("input"), f"content[{i}].input"),
                )
            )
    return _assemble(
        provider=ProviderKind.ANTHROPIC,
        model=read.text(response.get("model"), "model"),
        response_id=read.text(response.get("id"), "id"),
        text="".join(texts),
        tool_calls=tuple(calls),
        finish_reason=_finish(read.text(response.get("stop_reason"), "stop_reason")),
        usage=anthropic_usage(response.get("usage"), read),
        thinking=tuple(thinking),
    )


@icontract.ensure(lambda result: result.provider is ProviderKind.ANTHROPIC and len(result.choices) == 1)
def normalize_anthropic(body: object) -> ProviderResponse:
    """An Anthropic Messages response body (parsed JSON) as a ProviderResponse.

    :raises InvalidResponse: naming the field and the provider when the body is not the documented shape.
    """
    return _normalize_anthropic(body)


# --- OpenAI Chat Completions (OpenAI, OpenRouter, Ollama, vLLM) -------------------------------------


def with_service_tier(usage: Usage, tier: object) -> Usage:
    """``usage`` with the service tier the answer says it was served on (OpenAI's top-level
    ``service_tier``, Anthropic's ``usage.service_tier``); a missing or non-text value says nothing."""
    return replace(usage, service_tier=tier) if isinstance(tier, str) and tier else usage


def openai_usage(raw: object, read: FieldReader, tier: object = None) -> Usage:
    """OpenAI ``usage``: ``prompt_tokens`` includes cache reads (and OpenRouter's cache writes), with
    the answer's ``service_tier`` (:func:`with_service_tier`'s reading, in the one Usage built).

    A ``null`` or absent usage (some OpenAI-compatible servers, and ``"usage": null`` replies) is
    zero counts, as the OpenAI SDK's own types allow (``usage`` is optional)."""
    service_tier = tier if isinstance(tier, str) and tier else None
    if raw is None:
        return Usage(service_tier=service_tier)
    usage = read.obj(raw, "usage")
    details_raw = usage.get("prompt_tokens_details")
    details = {} if details_raw is None else read.obj(details_raw, "usage.prompt_tokens_details")
    cached = read.count(details.get("cached_tokens"), "usage.prompt_tokens_details.cached_tokens", optional=True)
    written = read.count(
        details.get("cache_write_tokens"), "usage.prompt_tokens_details.cache_write_tokens", optional=True
    )
    prompt = read.count(usage.get("prompt_tokens"), "usage.prompt_tokens")
    if prompt < cached + written:
        raise read.fail(f"usage.prompt_tokens={prompt} is smaller than its cached part {cached} + {written}")
    completion_raw = usage.get("completion_tokens_details")
    completion = {} if completion_raw is None else read.obj(completion_raw, "usage.completion_tokens_details")
    reasoning = read.count(
        completion.get("reasoning_tokens"), "usage.completion_tokens_details.reasoning_tokens", optional=True
    )
    return Usage(
        prompt_tokens=prompt - cached - written,
        completion_tokens=read.count(usage.get("completion_tokens"), "usage.completion_tokens"),
        cached_input_tokens=cached,
        cache_creation_tokens=written,
        reasoning_tokens=reasoning,
        service_tier=service_tier,
    )


def _normalize_openai(
    body: object, provider: ProviderKind, wire_body_json: str | None = None, dropped_parameters: tuple[str, ...] = ()
) -> ProviderResponse:
    read = FieldReader(provider)
    response = read.obj(body, "body")
    choices = read.arr(response.get("choices"), "choices")
    if not choices:
        raise read.fail("choices is empty")
    choice = read.obj(choices[0], "choices[0]")
    message = read.obj(choice.get("message"), "choices[0].message")
    content = message.get("content")
    text = "" if content is None else read.text(content, "choices[0].message.content")
    finish = _finish(read.text(choice.get("finish_reason"), "choices[0].finish_reason"))
    refusal = message.get("refusal")
    if refusal is not None:  # the model declined: the refusal text is the answer
        refusal = read.text(refusal, "choices[0].message.refusal")
        text = text or refusal
        finish = FinishReason.CONTENT_FILTER
    calls: list[ToolCall] = []
    raw_calls = message.get("tool_calls")
    for i, raw in enumerate(read.arr(raw_calls, "choices[0].message.tool_calls") if raw_calls is not None else []):
        where = f"choices[0].message.tool_calls[{i}]"
        call = read.obj(raw, where)
        function = read.obj(call.get("function"), f"{where}.function")
        call_id = call.get("id") or deterministic_tool_id(provider.as_metric_label(), 0, i)  # Ollama omits ids
        calls.append(
            ToolCall(
                id=read.text(call_id, f"{where}.id"),
                name=read.text(function.get("name"), f"{where}.function.name"),
                arguments_json=read.args_text(function.get("arguments"), f"{where}.function.arguments"),
            )
        )
    return _assemble(
        provider=provider,
        model=read.text(response.get("model"), "model"),
        response_id=read.text(response.get("id"), "id"),
        text=text,
        tool_calls=tuple(calls),
        finish_reason=finish,
        usage=openai_usage(response.get("usage"), read, response.get("service_tier")),
        refusal=refusal,
        annotations_json=_annotations(message.get("annotations")),
        wire_body_json=wire_body_json,
        dropped_parameters=dropped_parameters,
    )


def _annotations(raw: object) -> str | None:
    """OpenAI's ``message.annotations`` kept as compact JSON (a search model's URL citations), or None."""
    return compact_json(raw) if isinstance(raw, list) and raw else None


@icontract.ensure(lambda provider, result: result.provider is provider and len(result.choices) == 1)
def normalize_openai(
    body: object,
    *,
    provider: ProviderKind = ProviderKind.OPENAI,
    wire_body_json: str | None = None,
    dropped_parameters: tuple[str, ...] = (),
) -> ProviderResponse:
    """An OpenAI chat.completion body (also OpenRouter's, Ollama's, vLLM's) as a ProviderResponse.

    Only the first choice is kept (routeproof never asks for ``n > 1``). ``wire_body_json`` (the
    provider's own text of ``body``) and ``dropped_parameters`` (what the request left out) are set
    on it as given: the one response the provider returns, built once, not copied to add them.

    :raises InvalidResponse: naming the field and the provider when the body is not the documented shape.
    """
    return _normalize_openai(body, provider, wire_body_json, dropped_parameters)


# --- Bedrock Converse ---------------------------------------------------------------------------------


def _normalize_bedrock(body: object, response_id: str, model: str) -> ProviderResponse:
    read = FieldReader(ProviderKind.BEDROCK)
    response = read.obj(body, "body")
    output = read.obj(response.get("output"), "output")
    message = read.obj(output.get("message"), "output.message")
    texts: list[str] = []
    calls: list[ToolCall] = []
    thinking: list[ThinkingBlock | RedactedThinkingBlock] = []
    for i, raw in enumerate(read.arr(message.get("content"), "output.message.content")):
        where = f"output.message.content[{i}]"
        block = read.obj(raw, where)
        if "text" in block:
            texts.append(read.text(block["text"], f"{where}.text"))
        elif "citationsContent" in block:  # cited text: kept; its citations are named dropped (answer_drops)
            cited = read.obj(block["citationsContent"], f"{where}.citationsContent")
            for j, part in enumerate(read.arr(cited.get("content"), f"{where}.citationsContent.content")):
                piece = read.obj(part, f"{where}.citationsContent.content[{j}]")
                if "text" in piece:
                    texts.append(read.text(piece["text"], f"{where}.citationsContent.content[{j}].text"))
        elif "reasoningContent" in block:
            reasoning = _bedrock_reasoning(read, block["reasoningContent"], f"{where}.reasoningContent")
            if reasoning is not None:
                thinking.append(reasoning)
        elif "toolUse" in block:
            tool_use = read.obj(block["toolUse"], f"{where}.toolUse")
            calls.append(
                ToolCall(
                    id=read.text(tool_use.get("toolUseId"), f"{where}.toolUse.toolUseId"),
                    name=read.text(tool_use.get("name"), f"{where}.toolUse.name"),
                    arguments_json=read.args(tool_use.get("input"), f"{where}.toolUse.input"),
                )
            )
    usage = read.obj(response.get("usage"), "usage")
    stop = read.text(response.get("stopReason"), "stopReason")
    return _assemble(
        provider=ProviderKind.BEDROCK,
        model=model,
        response_id=response_id,
        text="".join(texts),
        tool_calls=tuple(calls),
        finish_reason=BEDROCK_STOP_TO_FINISH.get(stop, FinishReason.OTHER),
        usage=Usage(
            prompt_tokens=read.count(usage.get("inputTokens"), "usage.inputTokens"),
            completion_tokens=read.count(usage.get("outputTokens"), "usage.outputTokens"),
            cached_input_tokens=read.count(
                usage.get("cacheReadInputTokens"), "usage.cacheReadInputTokens", optional=True
            ),
            cache_creation_tokens=read.count(
                usage.get("cacheWriteInputTokens"), "usage.cacheWriteInputTokens", optional=True
            ),
        ),
        thinking=tuple(thinking),
    )


def _bedrock_reasoning(read: FieldReader, raw: object, where: str) -> ThinkingBlock | RedactedThinkingBlock | None:
    """A reasoningContent block as thinking; None for a shape without reasoningText or redactedContent."""
    content = read.obj(raw, where)
    if "reasoningText" not in content and "redactedContent" not in content:
        return None
    if "redactedContent" in content:
        data = read.text(content["redactedContent"], f"{where}.redactedContent")
        if not data:
            raise read.fail(f"{where}.redactedContent is empty")
        return RedactedThinkingBlock(data=data)
    text = read.obj(content.get("reasoningText"), f"{where}.reasoningText")
    return ThinkingBlock(
        thinking=read.text(text.get("text"), f"{where}.reasoningText.text"),
        signature=read.text(text.get("signature", ""), f"{where}.reasoningText.signature"),
    )


@icontract.ensure(lambda response_id, result: result.provider is ProviderKind.BEDROCK and result.id == response_id)
def normalize_bedrock_converse(body: object, *, response_id: str = "", model: str = "") -> ProviderResponse:
    """A Bedrock Converse body as a ProviderResponse.

    The body has no id and no model: the client passes the ``x-amzn-requestid`` header as
    ``response_id`` and the model id it called as ``model``.

    :raises InvalidResponse: naming the field and the provider when the body is not the documented shape.
    """
    return _normalize_bedrock(body, response_id, model)
