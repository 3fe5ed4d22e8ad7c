"""Anthropic Messages <-> OpenAI Chat Completions (and -> Bedrock Converse), requests and responses.

Requests go through one neutral form, :class:`~routeproof.core.types.ChatRequest` plus a few wire
extras (model, stream, top_p, tool_choice). Parsing a wire body into it and printing it back out is
what makes the round-trip laws hold (seed 003, ``format_translation``): roles exact, text
byte-identical, tool arguments JSON-semantically equal (canonical :func:`compact_json` text),
tool ids preserved (or made by :func:`deterministic_tool_id` where the wire has none), stop reasons
by one table (:mod:`routeproof.core.wire`).

Two shape facts are normalised, as each provider documents them: consecutive turns of the same role
form one turn (Anthropic merges them; an OpenAI run ``tool, tool, user`` is one Anthropic user turn
with two ``tool_result`` blocks and a text block), and a string content is the same as a list with
one text part. Content with no equivalent on the other side raises :class:`TranslationError`
naming it: images, thinking, ``cache_control``, ``is_error`` tool results towards OpenAI, a
``refusal``, several choices, unknown fields of a request.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import icontract

from routeproof.core.types import ChatRequest, Message, Role, TextBlock, ToolDefinition, ToolResultBlock, ToolUseBlock
from routeproof.core.wire import (
    ANTHROPIC_TO_OPENAI_STOP,
    OPENAI_TO_ANTHROPIC_STOP,
    STOP_REASON_TO_FINISH,
    as_json_object,
    compact_json,
    deterministic_tool_id,
    finish_reason_for,
)
from routeproof.errors import TranslationError

__all__ = [
    "ANTHROPIC_TO_OPENAI_STOP",
    "OPENAI_TO_ANTHROPIC_STOP",
    "STOP_REASON_TO_FINISH",
    "anthropic_request_to_openai",
    "anthropic_response_to_openai",
    "finish_reason_for",
    "is_o_series",
    "openai_request_to_anthropic",
    "openai_response_to_anthropic",
    "parse_anthropic_request",
    "parse_openai_request",
    "request_to_anthropic",
    "request_to_bedrock_converse",
    "request_to_openai",
]

_O_SERIES = re.compile(r"^o\d+(-|$)")
_ANTHROPIC_REQUEST_KEYS = frozenset(
    {
        "model",
        "max_tokens",
        "system",
        "messages",
        "tools",
        "temperature",
        "top_p",
        "stop_sequences",
        "stream",
        "tool_choice",
    }
)
_OPENAI_REQUEST_KEYS = frozenset(
    {
        "model", "messages", "max_tokens", "max_completion_tokens", "tools", "temperature", "top_p", "stop",
        "stream", "stream_options", "tool_choice",
    }
)  # fmt: skip

_KEYS_TYPE_TEXT = frozenset({"type", "text"})
_KEYS_TYPE_ID_NAME_INPUT = frozenset({"type", "id", "name", "input"})
_KEYS_TYPE_TOOL_USE_ID_CONTENT_IS_ERROR = frozenset({"type", "tool_use_id", "content", "is_error"})
_KEYS_ROLE_CONTENT = frozenset({"role", "content"})
_KEYS_NAME_DESCRIPTION_INPUT_SCHEMA = frozenset({"name", "description", "input_schema"})
_KEYS_ID_TYPE_FUNCTION = frozenset({"id", "type", "function"})
_KEYS_NAME_ARGUMENTS = frozenset({"name", "arguments"})
_KEYS_ROLE_CONTENT_TOOL_CALLS = frozenset({"role", "content", "tool_calls"})
_KEYS_ROLE_CONTENT_TOOL_CALL_ID = frozenset({"role", "content", "tool_call_id"})
_KEYS_NAME_DESCRIPTION_PARAMETERS = frozenset({"name", "description", "parameters"})


@dataclass(frozen=True, slots=True, kw_only=True)
class WireExtras:
    """What a wire request carries besides the ChatRequest: tool_choice is kept in Anthropic form."""

    model: str = ""
    stream: bool | None = None
    top_p: float | None = None
    tool_choice: tuple[str, str] | None = None  # (type, tool name or "")


def is_o_series(model: str) -> bool:
    """Whether ``model`` is an OpenAI reasoning model (o1, o3-mini, openai/o4-mini...)."""
    return _O_SERIES.match(model.rsplit("/", 1)[-1]) is not None


# --- small typed readers: every malformed value becomes a TranslationError naming it ------------


def _obj(value: object, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise TranslationError(f"{where} must be an object, got {type(value).__name__}")
    return value


def _list(value: object, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise TranslationError(f"{where} must be an array, got {type(value).__name__}")
    return value


def _str(value: object, where: str) -> str:
    if not isinstance(value, str):
        raise TranslationError(f"{where} must be a string, got {type(value).__name__}")
    return value


def _num(value: object, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TranslationError(f"{where} must be a number, got {type(value).__name__}")
    return value


def _int(value: object, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise TranslationError(f"{where} must be a non-negative integer, got {value!r}")
    return value


def _only_keys(body: dict[str, Any], allowed: frozenset[str], where: str) -> None:
    for key in body:
        if key not in allowed:
            raise TranslationError(f"{where}.{key} has no equivalent in the other format")


def _args_json(value: object, where: str) -> str:
    try:
        return compact_json(_obj(value, where))
    except ValueError as exc:
        raise TranslationError(f"{where} is not representable as JSON: {exc}") from exc


def _parsed_args(text: str, where: str) -> dict[str, Any]:
    parsed = as_json_object(text)
    if parsed is None:
        raise TranslationError(f"{where} is not a JSON object: {text[:80]!r}")
    return parsed


def _merge_turns(messages: list[Message]) -> tuple[Message, ...]:
    merged: list[Message] = []
    for message in messages:
        if merged and merged[-1].role is message.role:
            merged[-1] = Message(role=message.role, content=merged[-1].content + message.content)
        else:
            merged.append(message)
    return tuple(merged)


def _request(messages: list[Message], **fields: Any) -> ChatRequest:
    try:
        return ChatRequest(messages=_merge_turns(messages), **fields)
    except ValueError as exc:
        raise TranslationError(str(exc)) from exc


# --- Anthropic wire -> neutral -----------------------------------------------------------------


def _anthropic_block(raw: object, role: Role, where: str) -> TextBlock | ToolUseBlock | ToolResultBlock:
    block = _obj(raw, where)
    kind = block.get("type")
    if kind == "text":
        _only_keys(block, _KEYS_TYPE_TEXT, where)
        return TextBlock(text=_str(block.get("text"), f"{where}.text"))
    if kind == "tool_use" and role is Role.ASSISTANT:
        _only_keys(block, _KEYS_TYPE_ID_NAME_INPUT, where)
        return ToolUseBlock(
            id=_str(block.get("id"), f"{where}.id"),
            name=_str(block.get("name"), f"{where}.name"),
            input_json=_args_json(block.get("input"), f"{where}.input"),
        )
    if kind == "tool_result" and role is Role.USER:
        _only_keys(block, _KEYS_TYPE_TOOL_USE_ID_CONTENT_IS_ERROR, where)
        content = block.get("content", "")
        if isinstance(content, list):
            if len(content) > 1:
                raise TranslationError(f"{where}.content has {len(content)} blocks; OpenAI takes one text")
            inner = _anthropic_block(content[0], Role.ASSISTANT, f"{where}.content[0]") if content else None
            if inner is not None and not isinstance(inner, TextBlock):
                raise TranslationError(f"{where}.content[0] must be a text block")
            content = "" if inner is None else inner.text
        is_error = block.get("is_error", False)
        if not isinstance(is_error, bool):
            raise TranslationError(f"{where}.is_error must be a boolean")
        return ToolResultBlock(
            tool_use_id=_str(block.get("tool_use_id"), f"{where}.tool_use_id"),
            content=_str(content, f"{where}.content"),
            is_error=is_error,
        )
    raise TranslationError(f"{where} of type {kind!r} in a {role.value} turn has no equivalent in the other format")


def _parse_anthropic_request(body: object) -> tuple[ChatRequest, WireExtras]:
    request = _obj(body, "anthropic request")
    _only_keys(request, _ANTHROPIC_REQUEST_KEYS, "anthropic request")
    messages: list[Message] = []
    for index, raw in enumerate(_list(request.get("messages"), "messages")):
        where = f"messages[{index}]"
        message = _obj(raw, where)
        _only_keys(message, _KEYS_ROLE_CONTENT, where)
        role_name = message.get("role")
        if role_name not in ("user", "assistant"):
            raise TranslationError(f"{where}.role {role_name!r} is not user or assistant")
        role = Role(role_name)
        content = message.get("content")
        if isinstance(content, str):
            blocks: tuple[TextBlock | ToolUseBlock | ToolResultBlock, ...] = (TextBlock(text=content),)
        else:
            items = _list(content, f"{where}.content")
            blocks = tuple(_anthropic_block(b, role, f"{where}.content[{i}]") for i, b in enumerate(items))
        if not blocks:
            raise TranslationError(f"{where}.content is empty")
        messages.append(Message(role=role, content=blocks))
    system = request.get("system")
    if isinstance(system, list):
        if len(system) != 1:
            raise TranslationError(f"system has {len(system)} blocks; OpenAI takes one system text")
        system = _anthropic_block(system[0], Role.USER, "system[0]")
        if not isinstance(system, TextBlock):
            raise TranslationError("system[0] must be a text block")
        system = system.text
    tools = tuple(_anthropic_tool(t, f"tools[{i}]") for i, t in enumerate(_list(request.get("tools", []), "tools")))
    extras = WireExtras(
        model=_str(request.get("model", ""), "model"),
        stream=_opt_bool(request.get("stream"), "stream"),
        top_p=None if request.get("top_p") is None else _num(request.get("top_p"), "top_p"),
        tool_choice=_anthropic_tool_choice(request.get("tool_choice")),
    )
    req = _request(
        messages,
        max_tokens=_int(request.get("max_tokens"), "max_tokens"),
        system=None if system is None else _str(system, "system"),
        tools=tools,
        temperature=None if request.get("temperature") is None else _num(request.get("temperature"), "temperature"),
        stop_sequences=tuple(
            _str(s, "stop_sequences[]") for s in _list(request.get("stop_sequences", []), "stop_sequences")
        ),
    )
    return req, extras


def _opt_bool(value: object, where: str) -> bool | None:
    if value is not None and not isinstance(value, bool):
        raise TranslationError(f"{where} must be a boolean")
    return value


def _anthropic_tool(raw: object, where: str) -> ToolDefinition:
    tool = _obj(raw, where)
    _only_keys(tool, _KEYS_NAME_DESCRIPTION_INPUT_SCHEMA, where)
    return ToolDefinition(
        name=_str(tool.get("name"), f"{where}.name"),
        description=_str(tool.get("description", ""), f"{where}.description"),
        input_schema_json=_args_json(tool.get("input_schema"), f"{where}.input_schema"),
    )


def _anthropic_tool_choice(raw: object) -> tuple[str, str] | None:
    if raw is None:
        return None
    choice = _obj(raw, "tool_choice")
    kind = choice.get("type")
    if kind in ("auto", "any", "none") and set(choice) == {"type"}:
        return (str(kind), "")
    if kind == "tool" and set(choice) == {"type", "name"}:
        return ("tool", _str(choice.get("name"), "tool_choice.name"))
    raise TranslationError(f"tool_choice {choice!r} has no OpenAI equivalent")


# --- OpenAI wire -> neutral ------------------------------------------------------------------------


def _openai_text_parts(content: object, where: str) -> tuple[TextBlock, ...]:
    if isinstance(content, str):
        return (TextBlock(text=content),)
    parts: list[TextBlock] = []
    for i, raw in enumerate(_list(content, where)):
        part = _obj(raw, f"{where}[{i}]")
        if part.get("type") != "text" or set(part) != {"type", "text"}:
            raise TranslationError(f"{where}[{i}] of type {part.get('type')!r} has no Anthropic equivalent")
        parts.append(TextBlock(text=_str(part.get("text"), f"{where}[{i}].text")))
    return tuple(parts)


def _openai_tool_calls(raw: object, msg_index: int, where: str) -> tuple[ToolUseBlock, ...]:
    calls: list[ToolUseBlock] = []
    for i, item in enumerate(_list(raw, where)):
        call = _obj(item, f"{where}[{i}]")
        _only_keys(call, _KEYS_ID_TYPE_FUNCTION, f"{where}[{i}]")
        if call.get("type", "function") != "function":
            raise TranslationError(f"{where}[{i}].type {call.get('type')!r} has no Anthropic equivalent")
        function = _obj(call.get("function"), f"{where}[{i}].function")
        _only_keys(function, _KEYS_NAME_ARGUMENTS, f"{where}[{i}].function")
        args = _str(function.get("arguments"), f"{where}[{i}].function.arguments")
        call_id = call.get("id") or deterministic_tool_id("openai", msg_index, i)
        calls.append(
            ToolUseBlock(
                id=_str(call_id, f"{where}[{i}].id"),
                name=_str(function.get("name"), f"{where}[{i}].function.name"),
                input_json=compact_json(_parsed_args(args, f"{where}[{i}].function.arguments")),
            )
        )
    return tuple(calls)


def _parse_openai_request(body: object) -> tuple[ChatRequest, WireExtras]:
    request = _obj(body, "openai request")
    _only_keys(request, _OPENAI_REQUEST_KEYS, "openai request")
    system: str | None = None
    messages: list[Message] = []
    for index, raw in enumerate(_list(request.get("messages"), "messages")):
        where = f"messages[{index}]"
        message = _obj(raw, where)
        role = message.get("role")
        if role in ("system", "developer"):
            _only_keys(message, _KEYS_ROLE_CONTENT, where)
            if messages or system is not None:
                raise TranslationError(f"{where}: a {role} message after the first turn has no Anthropic equivalent")
            parts = _openai_text_parts(message.get("content"), f"{where}.content")
            if len(parts) != 1:
                raise TranslationError(f"{where}.content must be one text for the Anthropic system prompt")
            system = parts[0].text
        elif role == "user":
            _only_keys(message, _KEYS_ROLE_CONTENT, where)
            messages.append(
                Message(role=Role.USER, content=_openai_text_parts(message.get("content"), f"{where}.content"))
            )
        elif role == "assistant":
            _only_keys(message, _KEYS_ROLE_CONTENT_TOOL_CALLS, where)
            content = message.get("content")
            text = () if content is None else _openai_text_parts(content, f"{where}.content")
            calls = _openai_tool_calls(message.get("tool_calls", []), index, f"{where}.tool_calls")
            messages.append(Message(role=Role.ASSISTANT, content=text + calls))
        elif role == "tool":
            _only_keys(message, _KEYS_ROLE_CONTENT_TOOL_CALL_ID, where)
            parts = _openai_text_parts(message.get("content"), f"{where}.content")
            if len(parts) > 1:
                raise TranslationError(f"{where}.content has {len(parts)} parts; use one text")
            result = ToolResultBlock(
                tool_use_id=_str(message.get("tool_call_id"), f"{where}.tool_call_id"),
                content=parts[0].text if parts else "",
            )
            messages.append(Message(role=Role.USER, content=(result,)))
        else:
            raise TranslationError(f"{where}.role {role!r} has no Anthropic equivalent")
    max_tokens = request.get("max_completion_tokens", request.get("max_tokens"))
    if max_tokens is None:
        raise TranslationError("max_tokens is required by Anthropic and the OpenAI request has none")
    stop = request.get("stop")
    stops = () if stop is None else (stop,) if isinstance(stop, str) else tuple(_list(stop, "stop"))
    extras = WireExtras(
        model=_str(request.get("model", ""), "model"),
        stream=_opt_bool(request.get("stream"), "stream"),
        top_p=None if request.get("top_p") is None else _num(request.get("top_p"), "top_p"),
        tool_choice=_openai_tool_choice(request.get("tool_choice")),
    )
    req = _request(
        messages,
        max_tokens=_int(max_tokens, "max_tokens"),
        system=system,
        tools=tuple(_openai_tool(t, f"tools[{i}]") for i, t in enumerate(_list(request.get("tools", []), "tools"))),
        temperature=None if request.get("temperature") is None else _num(request.get("temperature"), "temperature"),
        stop_sequences=tuple(_str(s, "stop[]") for s in stops),
    )
    return req, extras


def _openai_tool(raw: object, where: str) -> ToolDefinition:
    tool = _obj(raw, where)
    if tool.get("type") != "function" or set(tool) != {"type", "function"}:
        raise TranslationError(f"{where} is not a plain function tool")
    function = _obj(tool.get("function"), f"{where}.function")
    _only_keys(function, _KEYS_NAME_DESCRIPTION_PARAMETERS, f"{where}.function")
    return ToolDefinition(
        name=_str(function.get("name"), f"{where}.function.name"),
        description=_str(function.get("description", ""), f"{where}.function.description"),
        input_schema_json=_args_json(function.get("parameters", {"type": "object"}), f"{where}.function.parameters"),
    )


def _openai_tool_choice(raw: object) -> tuple[str, str] | None:
    named = {"auto": "auto", "required": "any", "none": "none"}
    if raw is None:
        return None
    if isinstance(raw, str) and raw in named:
        return (named[raw], "")
    if isinstance(raw, dict) and raw.get("type") == "function" and isinstance(raw.get("function"), dict):
        return ("tool", _str(raw["function"].get("name"), "tool_choice.function.name"))
    raise TranslationError(f"tool_choice {raw!r} has no Anthropic equivalent")


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


# --- public request API --------------------------------------------------------------------------


def _message_count(body: dict[str, Any]) -> int:
    messages = body.get("messages")
    return len(messages) if isinstance(messages, list) else -1


@icontract.ensure(lambda model, result: result["model"] == model and _message_count(result) >= 1)
def request_to_anthropic(req: ChatRequest, model: str) -> dict[str, Any]:
    """The JSON body of ``POST /v1/messages`` for ``req`` sent to ``model``.

    :raises TranslationError: when the input is not the documented shape or has no equivalent.
    """
    return _to_anthropic(req, WireExtras(model=model))


@icontract.ensure(lambda req, model, result: result["model"] == model and _message_count(result) >= len(req.messages))
def request_to_openai(req: ChatRequest, model: str) -> dict[str, Any]:
    """The JSON body of ``POST /v1/chat/completions``; ``developer`` system role for o-series models.

    :raises TranslationError: when the input is not the documented shape or has no equivalent.
    """
    return _to_openai(req, WireExtras(model=model))


@icontract.ensure(lambda req, result: 1 <= _message_count(result) <= len(req.messages))
def request_to_bedrock_converse(req: ChatRequest) -> dict[str, Any]:
    """The JSON body of a Bedrock Converse call (the model id is in the URL, not the body).

    :raises TranslationError: when the input is not the documented shape or has no equivalent.
    """
    return _to_bedrock(req)


@icontract.ensure(lambda result: result[0].messages)
def parse_anthropic_request(body: object) -> tuple[ChatRequest, WireExtras]:
    """An Anthropic Messages request body as a ChatRequest plus its wire extras.

    :raises TranslationError: when the input is not the documented shape or has no equivalent.
    """
    return _parse_anthropic_request(body)


@icontract.ensure(lambda result: result[0].messages)
def parse_openai_request(body: object) -> tuple[ChatRequest, WireExtras]:
    """An OpenAI Chat Completions request body as a ChatRequest plus its wire extras.

    :raises TranslationError: when the input is not the documented shape or has no equivalent.
    """
    return _parse_openai_request(body)


@icontract.ensure(lambda result: _message_count(result) >= 1)
def anthropic_request_to_openai(body: object) -> dict[str, Any]:
    """An Anthropic Messages request body as the equivalent OpenAI Chat Completions body.

    :raises TranslationError: when the input is not the documented shape or has no equivalent.
    """
    return _to_openai(*_parse_anthropic_request(body))


@icontract.ensure(lambda result: _message_count(result) >= 1)
def openai_request_to_anthropic(body: object) -> dict[str, Any]:
    """An OpenAI Chat Completions request body as the equivalent Anthropic Messages body.

    :raises TranslationError: when the input is not the documented shape or has no equivalent.
    """
    return _to_anthropic(*_parse_openai_request(body))


# --- responses ---------------------------------------------------------------------------------------


def _anthropic_response_to_openai(body: object) -> dict[str, Any]:
    response = _obj(body, "anthropic response")
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for i, raw in enumerate(_list(response.get("content"), "content")):
        block = _obj(raw, f"content[{i}]")
        if block.get("type") == "text":
            texts.append(_str(block.get("text"), f"content[{i}].text"))
        elif block.get("type") == "tool_use":
            arguments = _args_json(block.get("input"), f"content[{i}].input")
            function = {"name": _str(block.get("name"), f"content[{i}].name"), "arguments": arguments}
            calls.append({"id": _str(block.get("id"), f"content[{i}].id"), "type": "function", "function": function})
        else:
            raise TranslationError(f"content[{i}] of type {block.get('type')!r} has no OpenAI equivalent")
    stop = response.get("stop_reason")
    if not isinstance(stop, str) or stop not in ANTHROPIC_TO_OPENAI_STOP:
        raise TranslationError(f"stop_reason {stop!r} has no OpenAI equivalent")
    usage = _obj(response.get("usage"), "usage")
    cache_read = _int(usage.get("cache_read_input_tokens") or 0, "usage.cache_read_input_tokens")
    cache_write = _int(usage.get("cache_creation_input_tokens") or 0, "usage.cache_creation_input_tokens")
    prompt = _int(usage.get("input_tokens"), "usage.input_tokens") + cache_read + cache_write
    completion = _int(usage.get("output_tokens"), "usage.output_tokens")
    details: dict[str, int] = {"cached_tokens": cache_read}
    if cache_write:
        details["cache_write_tokens"] = cache_write  # OpenRouter's name; OpenAI has no such field
    message: dict[str, Any] = {"role": "assistant", "content": "".join(texts) if texts else None}
    if calls:
        message["tool_calls"] = calls
    return {
        "id": _str(response.get("id"), "id"),
        "object": "chat.completion",
        "created": 0,  # the core has no clock; a shell that needs the time sets it
        "model": _str(response.get("model"), "model"),
        "choices": [
            {"index": 0, "message": message, "finish_reason": ANTHROPIC_TO_OPENAI_STOP[stop], "logprobs": None}
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": details,
        },
    }


def _openai_response_to_anthropic(body: object) -> dict[str, Any]:
    response = _obj(body, "openai response")
    choices = _list(response.get("choices"), "choices")
    if len(choices) != 1:
        raise TranslationError(f"choices has {len(choices)} entries; Anthropic returns one message")
    choice = _obj(choices[0], "choices[0]")
    message = _obj(choice.get("message"), "choices[0].message")
    if message.get("refusal") is not None:
        raise TranslationError("choices[0].message.refusal has no Anthropic equivalent")
    content: list[dict[str, Any]] = []
    if message.get("content") is not None:
        content.append({"type": "text", "text": _str(message.get("content"), "choices[0].message.content")})
    calls = _openai_tool_calls(message.get("tool_calls") or [], 0, "choices[0].message.tool_calls")
    for call in calls:
        tool_input = _parsed_args(call.input_json, f"tool call {call.id!r}")
        content.append({"type": "tool_use", "id": call.id, "name": call.name, "input": tool_input})
    finish = choice.get("finish_reason")
    if not isinstance(finish, str) or finish not in OPENAI_TO_ANTHROPIC_STOP:
        raise TranslationError(f"finish_reason {finish!r} has no Anthropic equivalent")
    usage = _obj(response.get("usage"), "usage")
    details = usage.get("prompt_tokens_details") or {}
    details = _obj(details, "usage.prompt_tokens_details")
    cached = _int(details.get("cached_tokens") or 0, "usage.prompt_tokens_details.cached_tokens")
    written = _int(details.get("cache_write_tokens") or 0, "usage.prompt_tokens_details.cache_write_tokens")
    uncached = _int(usage.get("prompt_tokens"), "usage.prompt_tokens") - cached - written
    if uncached < 0:
        raise TranslationError(f"usage.prompt_tokens is smaller than its cached part ({cached} + {written})")
    return {
        "id": _str(response.get("id"), "id"),
        "type": "message",
        "role": "assistant",
        "model": _str(response.get("model"), "model"),
        "content": content,
        "stop_reason": OPENAI_TO_ANTHROPIC_STOP[finish],
        "stop_sequence": None,
        "usage": {
            "input_tokens": uncached,
            "output_tokens": _int(usage.get("completion_tokens"), "usage.completion_tokens"),
            "cache_creation_input_tokens": written,
            "cache_read_input_tokens": cached,
        },
    }


@icontract.ensure(lambda result: len(result["choices"]) == 1 and result["object"] == "chat.completion")
def anthropic_response_to_openai(body: object) -> dict[str, Any]:
    """An Anthropic Messages response as an OpenAI chat.completion (text blocks joined in order).

    :raises TranslationError: when the input is not the documented shape or has no equivalent.
    """
    return _anthropic_response_to_openai(body)


@icontract.ensure(lambda result: result["type"] == "message" and result["role"] == "assistant")
def openai_response_to_anthropic(body: object) -> dict[str, Any]:
    """An OpenAI chat.completion with one choice as an Anthropic Messages response.

    :raises TranslationError: when the input is not the documented shape or has no equivalent.
    """
    return _openai_response_to_anthropic(body)
