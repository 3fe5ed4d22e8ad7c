"""The neutral :class:`ChatRequest` -> Anthropic Messages, OpenAI Chat Completions and Bedrock Converse bodies.

Tool arguments leave as parsed JSON objects (Anthropic, Bedrock) or as canonical compact JSON text
(OpenAI ``function.arguments``). The OpenAI max-tokens field and system role come from the model's
:class:`~routeproof.core.capabilities.ModelCapabilities` (by default OpenAI's own:
``max_completion_tokens``, and the ``developer`` role for o-series ids). An assistant turn is one
OpenAI assistant message (text as content, every tool_use as a tool call); a user turn is its tool
results as tool messages, in order, then its other content as one user message (text, image_url and
file parts in order); an ``is_error`` tool result is a tool message whose content is the two text
parts ``[IS_ERROR_MARKER, content]``.

What a target cannot take is left out here and named by :func:`dropped_by_target` (the shell
reports it); what it cannot take without changing the answer raises :class:`TranslationError`
naming it (a PDF by URL to OpenAI, an image by http URL to Bedrock, ``n > 1`` to Anthropic).
The mappings (each one is a row of ``core/formats/field_table.py``):

- ``user`` <-> Anthropic ``metadata.user_id``; ``stop`` <-> ``stop_sequences``;
- ``parallel_tool_calls: false`` <-> ``tool_choice.disable_parallel_tool_use: true``;
- ``tool_choice: "required"`` <-> ``{"type": "any"}``;
- an image_url data URL <-> a base64 image block; an http(s) URL <-> ``source.type = "url"``;
- a PDF ``file`` part (inline data) <-> a base64 document block (``filename`` <-> ``title``);
- ``reasoning_effort`` -> ``thinking.budget_tokens`` by :data:`~routeproof.core.options.EFFORT_BUDGET_TOKENS`
  (kept below ``max_tokens``), and a budget back to the effort it reaches;
- ``response_format`` json_schema <-> ``output_config.format`` (json_object as the schema
  ``{"type": "object"}``); Anthropic models without structured output get a forced tool instead
  (``structured_output=False``), named ``JSON_TOOL_NAME`` unless the schema has a name.
"""

from __future__ import annotations

from typing import Any

from routeproof.core.blocks import (
    CacheControl,
    DocumentBlock,
    ImageBlock,
    RedactedThinkingBlock,
    SourceKind,
    ThinkingBlock,
)
from routeproof.core.capabilities import ModelCapabilities, kind_default
from routeproof.core.errors import TranslationError
from routeproof.core.formats.translate_common import IS_ERROR_MARKER, WireExtras, _merge_turns, _parsed_args
from routeproof.core.formats.wire import compact_json
from routeproof.core.messages import WireFormat
from routeproof.core.options import (
    ReasoningEffort,
    ResponseFormatKind,
    ThinkingMode,
    budget_for_effort,
    effort_for_budget,
)
from routeproof.core.types import (
    ChatRequest,
    ContentBlock,
    Message,
    ProviderKind,
    Role,
    TextBlock,
    ToolDefinition,
    ToolResultBlock,
    ToolUseBlock,
)

JSON_TOOL_NAME = "json_answer"
"""The forced tool's name when a JSON answer goes to an Anthropic model without structured output."""

OPENAI_SERVICE_TIERS = ("auto", "default", "flex", "scale", "priority")
ANTHROPIC_SERVICE_TIERS = ("auto", "standard_only")
_ANY_JSON_OBJECT = '{"type":"object"}'

# --- shared ------------------------------------------------------------------------------------------


def _cache_out(cache: CacheControl | None) -> dict[str, str] | None:
    if cache is None:
        return None
    return {"type": "ephemeral"} if cache.ttl is None else {"type": "ephemeral", "ttl": cache.ttl.value}


def _with_cache(out: dict[str, Any], cache: CacheControl | None) -> dict[str, Any]:
    marker = _cache_out(cache)
    if marker is not None:
        out["cache_control"] = marker
    return out


def _results_first(message: Message) -> tuple[ContentBlock, ...]:
    """A user turn's blocks with its tool results first (Anthropic rejects text before a tool_result)."""
    if message.role is not Role.USER:
        return message.content
    return tuple(sorted(message.content, key=lambda block: not isinstance(block, ToolResultBlock)))


def _thinking_budget(req: ChatRequest) -> tuple[ThinkingMode | None, int | None]:
    """The Anthropic thinking config for ``req.reasoning``: its own, or its effort by the budget table."""
    reasoning = req.reasoning
    if reasoning is None:
        return None, None
    if reasoning.thinking is not None:
        return reasoning.thinking, reasoning.budget_tokens
    assert reasoning.effort is not None  # Reasoning has one of the two
    budget = budget_for_effort(reasoning.effort)
    if budget is None:
        return ThinkingMode.DISABLED, None
    budget = min(budget, req.max_tokens - 1)  # Anthropic: budget_tokens < max_tokens, and >= 1024
    return (ThinkingMode.ENABLED, budget) if budget >= 1024 else (None, None)


def _effort_of(req: ChatRequest) -> ReasoningEffort | None:
    """The OpenAI ``reasoning_effort`` for ``req.reasoning``: its own, or its thinking budget's level."""
    reasoning = req.reasoning
    if reasoning is None:
        return None
    if reasoning.effort is not None:
        return reasoning.effort
    if reasoning.thinking is ThinkingMode.ENABLED and reasoning.budget_tokens is not None:
        return effort_for_budget(reasoning.budget_tokens)
    return ReasoningEffort.NONE if reasoning.thinking is ThinkingMode.DISABLED else None


def _schema_of(req: ChatRequest) -> str | None:
    """The JSON schema text the answer must match (json_object: any object); None for free text."""
    fmt = req.response_format
    if fmt is None or fmt.kind is ResponseFormatKind.TEXT:
        return None
    return fmt.schema_json if fmt.kind is ResponseFormatKind.JSON_SCHEMA else _ANY_JSON_OBJECT


# --- Anthropic ---------------------------------------------------------------------------------------


def _anthropic_source(block: ImageBlock | DocumentBlock) -> dict[str, str]:
    if block.source is SourceKind.URL:
        return {"type": "url", "url": block.data}
    if block.source is SourceKind.TEXT:
        return {"type": "text", "media_type": "text/plain", "data": block.data}
    return {"type": "base64", "media_type": block.media_type, "data": block.data}


def _anthropic_block(block: ContentBlock) -> dict[str, Any]:
    if isinstance(block, TextBlock):
        return _with_cache({"type": "text", "text": block.text}, block.cache_control)
    if isinstance(block, ToolUseBlock):
        where = f"tool_use {block.id!r}.input"
        out = {"type": "tool_use", "id": block.id, "name": block.name, "input": _parsed_args(block.input_json, where)}
        return _with_cache(out, block.cache_control)
    if isinstance(block, ToolResultBlock):
        result: dict[str, Any] = {"type": "tool_result", "tool_use_id": block.tool_use_id, "content": block.content}
        if block.is_error:
            result["is_error"] = True
        return _with_cache(result, block.cache_control)
    if isinstance(block, ImageBlock):
        return _with_cache({"type": "image", "source": _anthropic_source(block)}, block.cache_control)
    if isinstance(block, DocumentBlock):
        doc: dict[str, Any] = {"type": "document", "source": _anthropic_source(block)}
        if block.title is not None:
            doc["title"] = block.title
        if block.context is not None:
            doc["context"] = block.context
        if block.citations is not None:
            doc["citations"] = {"enabled": block.citations}
        return _with_cache(doc, block.cache_control)
    if isinstance(block, ThinkingBlock):
        return {"type": "thinking", "thinking": block.thinking, "signature": block.signature}
    return {"type": "redacted_thinking", "data": block.data}


def _to_anthropic(req: ChatRequest, extras: WireExtras, *, structured_output: bool = True) -> dict[str, Any]:
    messages = [
        {"role": m.role.value, "content": [_anthropic_block(b) for b in _results_first(m)]}
        for m in _merge_turns(list(req.messages))
    ]
    body: dict[str, Any] = {"model": extras.model, "max_tokens": req.max_tokens, "messages": messages}
    if req.system_blocks:
        body["system"] = [_anthropic_block(b) for b in req.system_blocks]
    elif req.system is not None:
        body["system"] = req.system
    tools = [_tool_out(t, anthropic=True) for t in req.tools]
    tool_choice = extras.tool_choice
    schema = _schema_of(req)
    if schema is not None and not structured_output:
        fmt = req.response_format
        name = fmt.name if fmt is not None and fmt.name else JSON_TOOL_NAME
        forced: dict[str, Any] = {"name": name, "input_schema": _parsed_args(schema, "response_format schema")}
        if fmt is not None and fmt.description:
            forced["description"] = fmt.description
        tools.append(forced)
        tool_choice = ("tool", name)
    if tools:
        body["tools"] = tools
    if req.temperature is not None:
        body["temperature"] = req.temperature
    if extras.top_p is not None:
        body["top_p"] = extras.top_p
    if req.top_k is not None:
        body["top_k"] = req.top_k
    if req.stop_sequences:
        body["stop_sequences"] = list(req.stop_sequences)
    if extras.stream is not None:
        body["stream"] = extras.stream
    if tool_choice is not None or req.parallel_tool_calls is not None:
        kind, name = tool_choice if tool_choice is not None else ("auto", "")
        choice: dict[str, Any] = {"type": kind, "name": name} if kind == "tool" else {"type": kind}
        if req.parallel_tool_calls is not None:
            choice["disable_parallel_tool_use"] = not req.parallel_tool_calls
        body["tool_choice"] = choice
    if req.user is not None:
        body["metadata"] = {"user_id": req.user}
    mode, budget = _thinking_budget(req)
    if mode is not None:
        body["thinking"] = {"type": mode.value, "budget_tokens": budget} if budget is not None else {"type": mode.value}
    output: dict[str, Any] = {}
    if req.reasoning is not None and req.reasoning.effort is not None and req.reasoning.thinking is not None:
        output["effort"] = req.reasoning.effort.value  # Anthropic's own effort, next to its thinking config
    if schema is not None and structured_output:
        output["format"] = {"type": "json_schema", "schema": _parsed_args(schema, "response_format schema")}
    if output:
        body["output_config"] = output
    if req.service_tier in ANTHROPIC_SERVICE_TIERS:
        body["service_tier"] = req.service_tier
    if req.n is not None and req.n > 1:
        raise TranslationError(f"n={req.n}: Anthropic Messages returns one answer per request", fields=("n",))
    return body


def _tool_out(tool: ToolDefinition, *, anthropic: bool) -> dict[str, Any]:
    schema = _parsed_args(tool.input_schema_json, f"tool {tool.name!r} input schema")
    if anthropic:
        out: dict[str, Any] = {"name": tool.name}
        if tool.description:
            out["description"] = tool.description
        out["input_schema"] = schema
        if tool.strict is not None:
            out["strict"] = tool.strict
        return _with_cache(out, tool.cache_control)
    function: dict[str, Any] = {"name": tool.name}
    if tool.description:
        function["description"] = tool.description
    function["parameters"] = schema
    if tool.strict is not None:
        function["strict"] = tool.strict
    return {"type": "function", "function": function}


# --- OpenAI ------------------------------------------------------------------------------------------


def _openai_part(block: ContentBlock) -> dict[str, Any] | None:
    """The OpenAI content part for a user-turn block; None for one OpenAI has no part for (thinking)."""
    if isinstance(block, TextBlock):
        return {"type": "text", "text": block.text}
    if isinstance(block, ImageBlock):
        url = block.data if block.source is SourceKind.URL else f"data:{block.media_type};base64,{block.data}"
        image: dict[str, str] = {"url": url}
        if block.detail:
            image["detail"] = block.detail
        return {"type": "image_url", "image_url": image}
    if isinstance(block, DocumentBlock):
        if block.source is SourceKind.TEXT:
            return {"type": "text", "text": block.data}
        if block.source is SourceKind.URL:
            raise TranslationError(
                f"document {block.data!r}: OpenAI Chat Completions takes a PDF as inline file data, not a URL",
                fields=("document.url",),
            )
        filename = "document.pdf" if block.title is None else block.title
        file = {"filename": filename, "file_data": f"data:application/pdf;base64,{block.data}"}
        return {"type": "file", "file": file}
    return None


def _content(parts: list[dict[str, Any]]) -> str | list[dict[str, Any]]:
    return parts[0]["text"] if len(parts) == 1 and parts[0]["type"] == "text" else parts


def _openai_user_messages(message: Message, out: list[dict[str, Any]]) -> None:
    """A user turn: its tool results first, as tool messages in order (OpenAI wants them right after
    the assistant message that called them), then its other content as one user message."""
    parts: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, ToolResultBlock):
            content: str | list[dict[str, str]] = block.content
            if block.is_error:  # the faithful encoding parse_openai_request reads back (IS_ERROR_MARKER)
                content = [{"type": "text", "text": IS_ERROR_MARKER}, {"type": "text", "text": block.content}]
            out.append({"role": "tool", "tool_call_id": block.tool_use_id, "content": content})
        elif isinstance(block, ToolUseBlock):
            raise TranslationError(
                f"tool_use {block.id!r} in a user turn has no OpenAI equivalent", fields=("tool_use",)
            )
        else:
            part = _openai_part(block)
            if part is not None:
                parts.append(part)
    if parts:
        out.append({"role": "user", "content": _content(parts)})


def _openai_assistant_messages(message: Message, out: list[dict[str, Any]]) -> None:
    """An assistant turn is one assistant message: its text as content, every tool_use as a tool call
    (OpenAI rejects a second assistant message between tool calls and their results). Thinking
    blocks have no OpenAI equivalent and are left out (``dropped_by_target`` names them)."""
    parts: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextBlock):
            parts.append({"type": "text", "text": block.text})
        elif isinstance(block, ToolUseBlock):
            arguments = compact_json(_parsed_args(block.input_json, f"tool_use {block.id!r}.input"))
            calls.append({"id": block.id, "type": "function", "function": {"name": block.name, "arguments": arguments}})
        elif isinstance(block, ToolResultBlock):
            raise TranslationError(
                f"tool_result {block.tool_use_id!r} in an assistant turn has no OpenAI equivalent",
                fields=("tool_result",),
            )
        elif isinstance(block, ImageBlock | DocumentBlock):
            kind = "image" if isinstance(block, ImageBlock) else "document"
            raise TranslationError(
                f"an {type(block).__name__} in an assistant turn has no OpenAI equivalent", fields=(kind,)
            )
    if not parts and not calls:
        return  # a turn of thinking only
    entry: dict[str, Any] = {"role": "assistant", "content": _content(parts) if parts else None}
    if calls:
        entry["tool_calls"] = calls
    out.append(entry)


def _openai_response_format(req: ChatRequest) -> dict[str, Any] | None:
    fmt = req.response_format
    if fmt is None:
        return None
    if fmt.kind is not ResponseFormatKind.JSON_SCHEMA:
        return {"type": fmt.kind.value}
    spec: dict[str, Any] = {"name": fmt.name or JSON_TOOL_NAME}
    if fmt.description:
        spec["description"] = fmt.description
    spec["schema"] = _parsed_args(fmt.schema_json, "response_format schema")
    if fmt.strict is not None:
        spec["strict"] = fmt.strict
    return {"type": "json_schema", "json_schema": spec}


def _to_openai(req: ChatRequest, extras: WireExtras, caps: ModelCapabilities | None = None) -> dict[str, Any]:
    if caps is None:
        caps = kind_default(ProviderKind.OPENAI, extras.model)
    messages: list[dict[str, Any]] = []
    if req.system_blocks:
        messages.append(
            {"role": caps.system_role, "content": [{"type": "text", "text": b.text} for b in req.system_blocks]}
        )
    elif req.system is not None:
        messages.append({"role": caps.system_role, "content": req.system})
    for message in _merge_turns(list(req.messages)):
        if message.role is Role.USER:
            _openai_user_messages(message, messages)
        else:
            _openai_assistant_messages(message, messages)
    body: dict[str, Any] = {"model": extras.model, "messages": messages}
    if extras.output_cap_given:
        body[caps.max_tokens_field] = req.max_tokens
    if req.tools:
        body["tools"] = [_tool_out(t, anthropic=False) for t in req.tools]
    if req.temperature is not None:
        body["temperature"] = req.temperature
    if extras.top_p is not None:
        body["top_p"] = extras.top_p
    if req.stop_sequences:
        body["stop"] = list(req.stop_sequences)
    if extras.stream is not None:
        body["stream"] = extras.stream
        if extras.stream:
            body["stream_options"] = {"include_usage": True}
    if extras.tool_choice is not None:
        kind, name = extras.tool_choice
        openai_names = {"auto": "auto", "any": "required", "none": "none"}
        body["tool_choice"] = {"type": "function", "function": {"name": name}} if kind == "tool" else openai_names[kind]
    _openai_options(req, body)
    return body


def _openai_options(req: ChatRequest, body: dict[str, Any]) -> None:
    """The per-request options OpenAI takes as they are."""
    simple = (
        ("parallel_tool_calls", req.parallel_tool_calls),
        ("user", req.user),
        ("seed", req.seed),
        ("n", req.n),
        ("logprobs", req.logprobs),
        ("top_logprobs", req.top_logprobs),
        ("frequency_penalty", req.frequency_penalty),
        ("presence_penalty", req.presence_penalty),
    )
    for key, value in simple:
        if value is not None:
            body[key] = value
    response_format = _openai_response_format(req)
    if response_format is not None:
        body["response_format"] = response_format
    effort = _effort_of(req)
    if effort is not None:
        body["reasoning_effort"] = effort.value
    if req.service_tier in OPENAI_SERVICE_TIERS:
        body["service_tier"] = req.service_tier


# --- Bedrock Converse --------------------------------------------------------------------------------


def _bedrock_block(block: ContentBlock) -> dict[str, Any]:
    if isinstance(block, TextBlock):
        return {"text": block.text}
    if isinstance(block, ToolUseBlock):
        where = f"tool_use {block.id!r}.input"
        return {"toolUse": {"toolUseId": block.id, "name": block.name, "input": _parsed_args(block.input_json, where)}}
    if isinstance(block, ToolResultBlock):
        status = "error" if block.is_error else "success"
        return {"toolResult": {"toolUseId": block.tool_use_id, "content": [{"text": block.content}], "status": status}}
    if isinstance(block, ImageBlock):
        return {"image": {"format": _bedrock_image_format(block), "source": _bedrock_source(block)}}
    if isinstance(block, DocumentBlock):
        doc: dict[str, Any] = {
            "format": "txt" if block.source is SourceKind.TEXT else "pdf",
            "name": block.title or "document",
            "source": {"text": block.data} if block.source is SourceKind.TEXT else _bedrock_source(block),
        }
        if block.citations is not None:
            doc["citations"] = {"enabled": block.citations}
        return {"document": doc}
    if isinstance(block, ThinkingBlock):
        return {"reasoningContent": {"reasoningText": {"text": block.thinking, "signature": block.signature}}}
    return {"reasoningContent": {"redactedContent": block.data}}


def _bedrock_image_format(block: ImageBlock) -> str:
    if block.source is SourceKind.BASE64:
        return block.media_type.removeprefix("image/")
    suffix = block.data.rsplit(".", 1)[-1].lower()
    return {"jpg": "jpeg"}.get(suffix, suffix) if suffix in ("jpg", "jpeg", "png", "gif", "webp") else "png"


def _bedrock_source(block: ImageBlock | DocumentBlock) -> dict[str, Any]:
    if block.source is SourceKind.BASE64:
        return {"bytes": block.data}
    if block.data.startswith("s3://"):
        return {"s3Location": {"uri": block.data}}
    raise TranslationError(
        f"{type(block).__name__} {block.data!r}: Bedrock Converse takes inline bytes or an s3:// location, not a URL",
        fields=("image.url" if isinstance(block, ImageBlock) else "document.url",),
    )


def _bedrock_blocks(blocks: tuple[ContentBlock, ...]) -> list[dict[str, Any]]:
    """The blocks, each cache marker as a ``cachePoint`` right after its block."""
    out: list[dict[str, Any]] = []
    for block in blocks:
        out.append(_bedrock_block(block))
        if _cache_of(block) is not None:
            out.append({"cachePoint": {"type": "default"}})
    return out


def _to_bedrock(req: ChatRequest) -> dict[str, Any]:
    messages = [{"role": m.role.value, "content": _bedrock_blocks(m.content)} for m in _merge_turns(list(req.messages))]
    config: dict[str, Any] = {"maxTokens": req.max_tokens}
    if req.temperature is not None:
        config["temperature"] = req.temperature
    if req.stop_sequences:
        config["stopSequences"] = list(req.stop_sequences)
    if req.top_p is not None:
        config["topP"] = req.top_p
    body: dict[str, Any] = {"messages": messages, "inferenceConfig": config}
    if req.system_blocks:
        body["system"] = _bedrock_blocks(req.system_blocks)
    elif req.system is not None:
        body["system"] = [{"text": req.system}]
    if req.tools:
        specs: list[dict[str, Any]] = []
        for tool in req.tools:
            schema = _parsed_args(tool.input_schema_json, f"tool {tool.name!r} input schema")
            spec: dict[str, Any] = {"name": tool.name}
            if tool.description:
                spec["description"] = tool.description
            spec["inputSchema"] = {"json": schema}
            specs.append({"toolSpec": spec})
            if tool.cache_control is not None:
                specs.append({"cachePoint": {"type": "default"}})
        body["toolConfig"] = {"tools": specs}
        if req.tool_choice is not None and req.tool_choice[0] != "none":  # Converse has no "none"
            kind, name = req.tool_choice
            body["toolConfig"]["toolChoice"] = {"tool": {"name": name}} if kind == "tool" else {kind: {}}
    additional: dict[str, Any] = {}
    mode, budget = _thinking_budget(req)
    if mode is not None:
        additional["thinking"] = (
            {"type": mode.value, "budget_tokens": budget} if budget is not None else {"type": mode.value}
        )
    if req.top_k is not None:
        additional["top_k"] = req.top_k
    if additional:
        body["additionalModelRequestFields"] = additional
    if _schema_of(req) is not None:
        raise TranslationError(
            "response_format: Bedrock Converse has no structured-output field in this version",
            fields=("response_format",),
        )
    if req.n is not None and req.n > 1:
        raise TranslationError(f"n={req.n}: Bedrock Converse returns one answer per request", fields=("n",))
    return body


# --- what each target leaves out -----------------------------------------------------------------------


def _cache_of(block: ContentBlock) -> CacheControl | None:
    if isinstance(block, ThinkingBlock | RedactedThinkingBlock):
        return None
    return block.cache_control


def _has_cache_marker(req: ChatRequest) -> bool:
    blocks = [*req.system_blocks, *(b for m in req.messages for b in m.content)]
    return any(_cache_of(b) is not None for b in blocks) or any(t.cache_control is not None for t in req.tools)


def _dropped_by_target(req: ChatRequest, target: WireFormat) -> tuple[str, ...]:
    blocks = [b for m in req.messages for b in m.content]
    thinking = any(isinstance(b, ThinkingBlock | RedactedThinkingBlock) for b in blocks)
    markers = [_cache_of(b) for b in [*req.system_blocks, *blocks]] + [t.cache_control for t in req.tools]
    ttl = any(marker is not None and marker.ttl is not None for marker in markers)
    fmt = req.response_format
    # an effort whose thinking budget does not fit under max_tokens (Anthropic, Bedrock) is left out
    unfit = req.reasoning is not None and req.reasoning.thinking is None and _thinking_budget(req) == (None, None)
    candidates: dict[WireFormat, tuple[tuple[str, bool], ...]] = {
        WireFormat.OPENAI_CHAT: (
            ("cache_control", _has_cache_marker(req)),
            ("thinking_blocks", thinking),
            ("top_k", req.top_k is not None),
            ("service_tier", req.service_tier is not None and req.service_tier not in OPENAI_SERVICE_TIERS),
            ("document.context", any(isinstance(b, DocumentBlock) and b.context is not None for b in blocks)),
            ("document.citations", any(isinstance(b, DocumentBlock) and b.citations is not None for b in blocks)),
            ("reasoning.thinking", req.reasoning is not None and req.reasoning.thinking is ThinkingMode.ADAPTIVE),
        ),
        WireFormat.ANTHROPIC_MESSAGES: (
            ("seed", req.seed is not None),
            ("logprobs", req.logprobs is not None),
            ("top_logprobs", req.top_logprobs is not None),
            ("frequency_penalty", req.frequency_penalty is not None),
            ("presence_penalty", req.presence_penalty is not None),
            ("reasoning_effort", unfit),
            ("service_tier", req.service_tier is not None and req.service_tier not in ANTHROPIC_SERVICE_TIERS),
            ("image.detail", any(isinstance(b, ImageBlock) and b.detail for b in blocks)),
            ("response_format.name", fmt is not None and bool(fmt.name)),
            ("response_format.strict", fmt is not None and fmt.strict is not None),
            ("response_format.description", fmt is not None and bool(fmt.description)),
        ),
        WireFormat.BEDROCK_CONVERSE: (
            ("cache_control.ttl", ttl),
            ("reasoning_effort", unfit),
            ("user", req.user is not None),
            ("seed", req.seed is not None),
            ("logprobs", req.logprobs is not None),
            ("top_logprobs", req.top_logprobs is not None),
            ("frequency_penalty", req.frequency_penalty is not None),
            ("presence_penalty", req.presence_penalty is not None),
            ("service_tier", req.service_tier is not None),
            ("parallel_tool_calls", req.parallel_tool_calls is not None),
            ("tool.strict", any(t.strict is not None for t in req.tools)),
            ("image.detail", any(isinstance(b, ImageBlock) and b.detail for b in blocks)),
            ("document.context", any(isinstance(b, DocumentBlock) and b.context is not None for b in blocks)),
            ("tool_choice", req.tool_choice is not None and req.tool_choice[0] == "none"),
        ),
    }
    return tuple(name for name, present in candidates.get(target, ()) if present)
