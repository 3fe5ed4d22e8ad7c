"""Wire request bodies -> the neutral :class:`ChatRequest` plus :class:`WireExtras` (both formats).

Consecutive turns of one role merge into one turn; an OpenAI run ``tool, tool, user`` becomes one
Anthropic user turn with two ``tool_result`` blocks and a text block. Anything without an
equivalent in the other format raises :class:`TranslationError` naming it.
"""

from __future__ import annotations

from routeproof.core.errors import TranslationError
from routeproof.core.translate_common import (
    _ANTHROPIC_REQUEST_KEYS,
    _KEYS_ID_TYPE_FUNCTION,
    _KEYS_NAME_ARGUMENTS,
    _KEYS_NAME_DESCRIPTION_INPUT_SCHEMA,
    _KEYS_NAME_DESCRIPTION_PARAMETERS,
    _KEYS_ROLE_CONTENT,
    _KEYS_ROLE_CONTENT_TOOL_CALL_ID,
    _KEYS_ROLE_CONTENT_TOOL_CALLS,
    _KEYS_TYPE_ID_NAME_INPUT,
    _KEYS_TYPE_TEXT,
    _KEYS_TYPE_TOOL_USE_ID_CONTENT_IS_ERROR,
    _OPENAI_REQUEST_KEYS,
    IS_ERROR_MARKER,
    WireExtras,
    _args_json,
    _int,
    _list,
    _num,
    _obj,
    _only_keys,
    _opt_bool,
    _parsed_args,
    _request,
    _str,
)
from routeproof.core.types import ChatRequest, Message, Role, TextBlock, ToolDefinition, ToolResultBlock, ToolUseBlock
from routeproof.core.wire import compact_json, deterministic_tool_id

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
            content = _list(content, f"{where}.content")
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
            is_error = (
                len(parts) == 2 and not isinstance(message.get("content"), str) and (parts[0].text == IS_ERROR_MARKER)
            )
            if is_error:
                parts = parts[1:]
            if len(parts) > 1:
                raise TranslationError(f"{where}.content has {len(parts)} parts; use one text")
            result = ToolResultBlock(
                tool_use_id=_str(message.get("tool_call_id"), f"{where}.tool_call_id"),
                content=parts[0].text if parts else "",
                is_error=is_error,
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
