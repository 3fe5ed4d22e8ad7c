"""The neutral :class:`ChatRequest` -> Anthropic Messages, OpenAI Chat Completions and Bedrock Converse bodies.

Tool arguments leave as parsed JSON objects (Anthropic, Bedrock) or as canonical compact JSON text
(OpenAI ``function.arguments``). The OpenAI max-tokens field and system role come from the model's
:class:`~routeproof.core.capabilities.ModelCapabilities` (by default OpenAI's own:
``max_completion_tokens``, and the ``developer`` role for o-series ids). An assistant turn is one
OpenAI assistant message (text as content, every tool_use as a tool call); a user turn is its tool
results as tool messages, in order, then its text; an ``is_error`` tool result is a tool message
whose content is the two text parts ``[IS_ERROR_MARKER, content]``.
"""

from __future__ import annotations

from typing import Any

from routeproof.core.capabilities import ModelCapabilities, kind_default
from routeproof.core.errors import TranslationError
from routeproof.core.translate_common import IS_ERROR_MARKER, WireExtras, _merge_turns, _parsed_args
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
from routeproof.core.wire import compact_json

# --- neutral -> wire ---------------------------------------------------------------------------------


def _results_first(message: Message) -> tuple[ContentBlock, ...]:
    """A user turn's blocks with its tool results first (Anthropic rejects text before a tool_result)."""
    if message.role is not Role.USER:
        return message.content
    return tuple(sorted(message.content, key=lambda block: not isinstance(block, ToolResultBlock)))


def _to_anthropic(req: ChatRequest, extras: WireExtras) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    for message in _merge_turns(list(req.messages)):
        blocks: list[dict[str, Any]] = []
        for block in _results_first(message):
            if isinstance(block, TextBlock):
                blocks.append({"type": "text", "text": block.text})
            elif isinstance(block, ToolUseBlock):
                where = f"tool_use {block.id!r}.input"
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": block.id,
                        "name": block.name,
                        "input": _parsed_args(block.input_json, where),
                    }
                )
            else:
                result: dict[str, Any] = {
                    "type": "tool_result",
                    "tool_use_id": block.tool_use_id,
                    "content": block.content,
                }
                if block.is_error:
                    result["is_error"] = True
                blocks.append(result)
        messages.append({"role": message.role.value, "content": blocks})
    body: dict[str, Any] = {"model": extras.model, "max_tokens": req.max_tokens, "messages": messages}
    if req.system is not None:
        body["system"] = req.system
    if req.tools:
        body["tools"] = [_tool_out(t, anthropic=True) for t in req.tools]
    if req.temperature is not None:
        body["temperature"] = req.temperature
    if extras.top_p is not None:
        body["top_p"] = extras.top_p
    if req.stop_sequences:
        body["stop_sequences"] = list(req.stop_sequences)
    if extras.stream is not None:
        body["stream"] = extras.stream
    if extras.tool_choice is not None:
        kind, name = extras.tool_choice
        body["tool_choice"] = {"type": kind, "name": name} if kind == "tool" else {"type": kind}
    return body


def _tool_out(tool: ToolDefinition, *, anthropic: bool) -> dict[str, Any]:
    schema = _parsed_args(tool.input_schema_json, f"tool {tool.name!r} input schema")
    if anthropic:
        out: dict[str, Any] = {"name": tool.name}
        if tool.description:
            out["description"] = tool.description
        out["input_schema"] = schema
        return out
    function: dict[str, Any] = {"name": tool.name}
    if tool.description:
        function["description"] = tool.description
    function["parameters"] = schema
    return {"type": "function", "function": function}


def _text_content(texts: list[str]) -> str | list[dict[str, str]]:
    return texts[0] if len(texts) == 1 else [{"type": "text", "text": t} for t in texts]


def _openai_user_messages(message: Message, out: list[dict[str, Any]]) -> None:
    """A user turn: its tool results first, as tool messages in order (OpenAI wants them right after
    the assistant message that called them), then its text as one user message."""
    texts: list[str] = []
    for block in message.content:
        if isinstance(block, TextBlock):
            texts.append(block.text)
        elif isinstance(block, ToolResultBlock):
            content: str | list[dict[str, str]] = block.content
            if block.is_error:  # the faithful encoding parse_openai_request reads back (IS_ERROR_MARKER)
                content = [{"type": "text", "text": IS_ERROR_MARKER}, {"type": "text", "text": block.content}]
            out.append({"role": "tool", "tool_call_id": block.tool_use_id, "content": content})
        else:
            raise TranslationError(f"tool_use {block.id!r} in a user turn has no OpenAI equivalent")
    if texts:
        out.append({"role": "user", "content": _text_content(texts)})


def _openai_assistant_messages(message: Message, out: list[dict[str, Any]]) -> None:
    """An assistant turn is one assistant message: its text as content, every tool_use as a tool call
    (OpenAI rejects a second assistant message between tool calls and their results)."""
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextBlock):
            texts.append(block.text)
        elif isinstance(block, ToolUseBlock):
            arguments = compact_json(_parsed_args(block.input_json, f"tool_use {block.id!r}.input"))
            calls.append({"id": block.id, "type": "function", "function": {"name": block.name, "arguments": arguments}})
        else:
            raise TranslationError(f"tool_result {block.tool_use_id!r} in an assistant turn has no OpenAI equivalent")
    entry: dict[str, Any] = {"role": "assistant", "content": _text_content(texts) if texts else None}
    if calls:
        entry["tool_calls"] = calls
    out.append(entry)


def _to_openai(req: ChatRequest, extras: WireExtras, caps: ModelCapabilities | None = None) -> dict[str, Any]:
    if caps is None:
        caps = kind_default(ProviderKind.OPENAI, extras.model)
    messages: list[dict[str, Any]] = []
    if req.system is not None:
        messages.append({"role": caps.system_role, "content": req.system})
    for message in _merge_turns(list(req.messages)):
        if message.role is Role.USER:
            _openai_user_messages(message, messages)
        else:
            _openai_assistant_messages(message, messages)
    body: dict[str, Any] = {"model": extras.model, "messages": messages}
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
    return body


def _to_bedrock(req: ChatRequest) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    for message in _merge_turns(list(req.messages)):
        blocks: list[dict[str, Any]] = []
        for block in message.content:
            if isinstance(block, TextBlock):
                blocks.append({"text": block.text})
            elif isinstance(block, ToolUseBlock):
                where = f"tool_use {block.id!r}.input"
                tool_use = {"toolUseId": block.id, "name": block.name, "input": _parsed_args(block.input_json, where)}
                blocks.append({"toolUse": tool_use})
            else:
                status = "error" if block.is_error else "success"
                result = {"toolUseId": block.tool_use_id, "content": [{"text": block.content}], "status": status}
                blocks.append({"toolResult": result})
        messages.append({"role": message.role.value, "content": blocks})
    config: dict[str, Any] = {"maxTokens": req.max_tokens}
    if req.temperature is not None:
        config["temperature"] = req.temperature
    if req.stop_sequences:
        config["stopSequences"] = list(req.stop_sequences)
    if req.top_p is not None:
        config["topP"] = req.top_p
    body: dict[str, Any] = {"messages": messages, "inferenceConfig": config}
    if req.system is not None:
        body["system"] = [{"text": req.system}]
    if req.tools:
        specs = []
        for tool in req.tools:
            schema = _parsed_args(tool.input_schema_json, f"tool {tool.name!r} input schema")
            spec: dict[str, Any] = {"name": tool.name}
            if tool.description:
                spec["description"] = tool.description
            spec["inputSchema"] = {"json": schema}
            specs.append({"toolSpec": spec})
        body["toolConfig"] = {"tools": specs}
        if req.tool_choice is not None and req.tool_choice[0] != "none":  # Converse has no "none"
            kind, name = req.tool_choice
            body["toolConfig"]["toolChoice"] = {"tool": {"name": name}} if kind == "tool" else {kind: {}}
    return body
