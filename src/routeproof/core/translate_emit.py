"""The neutral :class:`ChatRequest` -> Anthropic Messages, OpenAI Chat Completions and Bedrock Converse bodies.

Tool arguments leave as parsed JSON objects (Anthropic, Bedrock) or as canonical compact JSON text
(OpenAI ``function.arguments``); o-series models get the ``developer`` role and
``max_completion_tokens``.
"""

from __future__ import annotations

from typing import Any

from routeproof.core.translate_common import WireExtras, _merge_turns, _parsed_args, is_o_series
from routeproof.core.types import ChatRequest, Message, Role, TextBlock, ToolDefinition, ToolResultBlock, ToolUseBlock
from routeproof.core.wire import compact_json
from routeproof.errors import TranslationError

# --- neutral -> wire ---------------------------------------------------------------------------------


def _to_anthropic(req: ChatRequest, extras: WireExtras) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    for message in _merge_turns(list(req.messages)):
        blocks: list[dict[str, Any]] = []
        for block in message.content:
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
    texts: list[str] = []
    for block in message.content:
        if isinstance(block, TextBlock):
            texts.append(block.text)
            continue
        if texts:
            out.append({"role": "user", "content": _text_content(texts)})
            texts = []
        if not isinstance(block, ToolResultBlock):
            raise TranslationError(f"tool_use {block.id!r} in a user turn has no OpenAI equivalent")
        if block.is_error:
            raise TranslationError(f"tool_result {block.tool_use_id!r} with is_error has no OpenAI equivalent")
        out.append({"role": "tool", "tool_call_id": block.tool_use_id, "content": block.content})
    if texts:
        out.append({"role": "user", "content": _text_content(texts)})


def _openai_assistant_messages(message: Message, out: list[dict[str, Any]]) -> None:
    texts: list[str] = []
    calls: list[dict[str, Any]] = []

    def flush() -> None:
        entry: dict[str, Any] = {"role": "assistant", "content": _text_content(texts) if texts else None}
        if calls:
            entry["tool_calls"] = list(calls)
        out.append(entry)

    for block in message.content:
        if isinstance(block, TextBlock):
            if calls:  # text after a tool call starts a new OpenAI message, so order survives
                flush()
                texts, calls = [], []
            texts.append(block.text)
        elif isinstance(block, ToolUseBlock):
            arguments = compact_json(_parsed_args(block.input_json, f"tool_use {block.id!r}.input"))
            calls.append({"id": block.id, "type": "function", "function": {"name": block.name, "arguments": arguments}})
        else:
            raise TranslationError(f"tool_result {block.tool_use_id!r} in an assistant turn has no OpenAI equivalent")
    flush()


def _to_openai(req: ChatRequest, extras: WireExtras) -> dict[str, Any]:
    reasoning = is_o_series(extras.model)
    messages: list[dict[str, Any]] = []
    if req.system is not None:
        messages.append({"role": "developer" if reasoning else "system", "content": req.system})
    for message in _merge_turns(list(req.messages)):
        if message.role is Role.USER:
            _openai_user_messages(message, messages)
        else:
            _openai_assistant_messages(message, messages)
    body: dict[str, Any] = {"model": extras.model, "messages": messages}
    body["max_completion_tokens" if reasoning else "max_tokens"] = req.max_tokens
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
    return body
