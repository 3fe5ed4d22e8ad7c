"""Wire request bodies -> the neutral :class:`ChatRequest` plus :class:`WireExtras` (both formats).

Consecutive turns of one role merge into one turn; an OpenAI run ``tool, tool, user`` becomes one
Anthropic user turn with two ``tool_result`` blocks and a text block. Every known field and block is
parsed into the content model (images, documents, thinking with signatures, cache markers, structured
output, reasoning, the per-request options). A field or block the model does not carry is not an
error: its path is recorded in ``WireExtras.untranslated`` (same protocol: it goes verbatim through
``ChatRequest.origin``; another protocol: ``core/formats/field_table.py`` says whether it is dropped or
refused). Malformed input (a wrong type, a missing required value) raises :class:`TranslationError`
naming the path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from routeproof.core.blocks import (
    CacheControl,
    CacheTTL,
    DocumentBlock,
    ImageBlock,
    RedactedThinkingBlock,
    SourceKind,
    ThinkingBlock,
)
from routeproof.core.errors import TranslationError
from routeproof.core.formats.translate_common import (
    _ANTHROPIC_REQUEST_KEYS,
    _OPENAI_REQUEST_KEYS,
    IS_ERROR_MARKER,
    RequestParts,
    WireExtras,
    _args_json,
    _extra_keys,
    _int,
    _list,
    _num,
    _obj,
    _opt_bool,
    _parsed_args,
    _str,
)
from routeproof.core.formats.wire import compact_json, deterministic_tool_id
from routeproof.core.options import Reasoning, ReasoningEffort, ResponseFormat, ResponseFormatKind, ThinkingMode
from routeproof.core.types import (
    ChatRequest,
    ContentBlock,
    Message,
    Role,
    TextBlock,
    ToolDefinition,
    ToolResultBlock,
    ToolUseBlock,
)

_KEYS_TEXT = frozenset({"type", "text", "cache_control"})
_KEYS_TOOL_USE = frozenset({"type", "id", "name", "input", "cache_control"})
_KEYS_TOOL_RESULT = frozenset({"type", "tool_use_id", "content", "is_error", "cache_control"})
_KEYS_IMAGE = frozenset({"type", "source", "cache_control"})
_KEYS_DOCUMENT = frozenset({"type", "source", "title", "context", "citations", "cache_control"})
_KEYS_THINKING = frozenset({"type", "thinking", "signature"})
_KEYS_REDACTED = frozenset({"type", "data"})
_KEYS_ROLE_CONTENT = frozenset({"role", "content"})
_KEYS_ANTHROPIC_TOOL = frozenset({"name", "description", "input_schema", "cache_control", "strict", "type"})
_KEYS_OPENAI_ASSISTANT = frozenset({"role", "content", "tool_calls"})
_KEYS_OPENAI_TOOL_MESSAGE = frozenset({"role", "content", "tool_call_id"})
_KEYS_CALL = frozenset({"id", "type", "function"})
_KEYS_CALL_FUNCTION = frozenset({"name", "arguments"})
_KEYS_OPENAI_FUNCTION = frozenset({"name", "description", "parameters", "strict"})
_KEYS_JSON_SCHEMA = frozenset({"name", "schema", "strict", "description"})
_MEDIA_OF_FORMAT = {"jpeg": "image/jpeg", "png": "image/png", "gif": "image/gif", "webp": "image/webp"}

# --- shared pieces -------------------------------------------------------------------------------------


def _cache_control(raw: object, where: str) -> CacheControl | None:
    if raw is None:
        return None
    marker = _obj(raw, where)
    if marker.get("type") != "ephemeral" or not set(marker) <= {"type", "ttl"}:
        raise TranslationError(f"{where} must be {{'type': 'ephemeral'}} with an optional ttl, got {marker!r}")
    ttl = marker.get("ttl")
    if ttl is None:
        return CacheControl()
    if ttl not in ("5m", "1h"):
        raise TranslationError(f"{where}.ttl must be '5m' or '1h', got {ttl!r}")
    return CacheControl(ttl=CacheTTL(ttl))


def _opt_str(value: object, where: str) -> str | None:
    return None if value is None else _str(value, where)


def _opt_int(value: object, where: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TranslationError(f"{where} must be an integer, got {value!r}")
    return value


def _opt_num(value: object, where: str) -> float | None:
    return None if value is None else _num(value, where)


_T = TypeVar("_T")


def _checked(build: Callable[..., _T], where: str, **fields: Any) -> _T:
    """``build(**fields)``, a value error of the content model re-raised as a TranslationError at ``where``."""
    try:
        return build(**fields)
    except (TypeError, ValueError) as exc:
        raise TranslationError(f"{where}: {exc}") from exc


def _some_turn(messages: list[Message], sink: list[str]) -> None:
    if not messages and sink:
        raise TranslationError(f"messages: no turn the router can carry (not carried: {', '.join(sink)})")


# --- Anthropic wire -> neutral -----------------------------------------------------------------


def _anthropic_source(raw: object, where: str, *, document: bool) -> tuple[SourceKind, str, str]:
    source = _obj(raw, where)
    kind = source.get("type")
    if kind == "base64":
        return SourceKind.BASE64, _str(source.get("data"), f"{where}.data"), _str(source.get("media_type"), where)
    if kind == "url":
        return SourceKind.URL, _str(source.get("url"), f"{where}.url"), ""
    if kind == "text" and document:
        return SourceKind.TEXT, _str(source.get("data"), f"{where}.data"), ""
    raise TranslationError(f"{where}.type {kind!r} is not carried (base64, url{', text' if document else ''})")


def _anthropic_block(raw: object, role: Role, where: str, sink: list[str]) -> ContentBlock | None:
    """The block at ``where``, or None (its path recorded in ``sink``) for a block the model does not carry."""
    block = _obj(raw, where)
    kind = block.get("type")
    cache = _cache_control(block.get("cache_control"), f"{where}.cache_control")
    if kind == "text":
        _extra_keys(block, _KEYS_TEXT, where, sink)
        return TextBlock(text=_str(block.get("text"), f"{where}.text"), cache_control=cache)
    if kind == "image" and role is Role.USER:
        _extra_keys(block, _KEYS_IMAGE, where, sink)
        source, data, media = _anthropic_source(block.get("source"), f"{where}.source", document=False)
        return _checked(ImageBlock, where, source=source, data=data, media_type=media, cache_control=cache)
    if kind == "document" and role is Role.USER:
        _extra_keys(block, _KEYS_DOCUMENT, where, sink)
        source, data, media = _anthropic_source(block.get("source"), f"{where}.source", document=True)
        citations = block.get("citations")
        enabled = None if citations is None else _opt_bool(_obj(citations, f"{where}.citations").get("enabled"), where)
        return _checked(
            DocumentBlock,
            where,
            source=source,
            data=data,
            media_type=media,
            title=_opt_str(block.get("title"), f"{where}.title"),
            context=_opt_str(block.get("context"), f"{where}.context"),
            citations=enabled,
            cache_control=cache,
        )
    if kind == "thinking" and role is Role.ASSISTANT:
        _extra_keys(block, _KEYS_THINKING, where, sink)
        return ThinkingBlock(
            thinking=_str(block.get("thinking"), f"{where}.thinking"),
            signature=_str(block.get("signature", ""), f"{where}.signature"),
        )
    if kind == "redacted_thinking" and role is Role.ASSISTANT:
        _extra_keys(block, _KEYS_REDACTED, where, sink)
        return _checked(RedactedThinkingBlock, where, data=_str(block.get("data"), f"{where}.data"))
    if kind == "tool_use" and role is Role.ASSISTANT:
        _extra_keys(block, _KEYS_TOOL_USE, where, sink)
        return ToolUseBlock(
            id=_str(block.get("id"), f"{where}.id"),
            name=_str(block.get("name"), f"{where}.name"),
            input_json=_args_json(block.get("input"), f"{where}.input"),
            cache_control=cache,
        )
    if kind == "tool_result" and role is Role.USER:
        return _anthropic_tool_result(block, cache, where, sink)
    sink.append(where)  # a block type the content model does not carry (or not in this role)
    return None


def _anthropic_tool_result(
    block: dict[str, Any], cache: CacheControl | None, where: str, sink: list[str]
) -> ContentBlock:
    _extra_keys(block, _KEYS_TOOL_RESULT, where, sink)
    content = block.get("content", "")
    if isinstance(content, list):
        texts: list[str] = []
        for i, item in enumerate(_list(content, f"{where}.content")):
            inner = _obj(item, f"{where}.content[{i}]")
            if inner.get("type") != "text":
                sink.append(f"{where}.content[{i}]")
                continue
            _extra_keys(inner, _KEYS_TEXT, f"{where}.content[{i}]", sink)
            texts.append(_str(inner.get("text"), f"{where}.content[{i}].text"))
        if len(texts) > 1:
            sink.append(f"{where}.content[1:]")  # one text is carried (OpenAI's tool message takes one)
        content = texts[0] if texts else ""
    is_error = block.get("is_error", False)
    if not isinstance(is_error, bool):
        raise TranslationError(f"{where}.is_error must be a boolean")
    return ToolResultBlock(
        tool_use_id=_str(block.get("tool_use_id"), f"{where}.tool_use_id"),
        content=_str(content, f"{where}.content"),
        is_error=is_error,
        cache_control=cache,
    )


def _anthropic_messages(request: dict[str, Any], sink: list[str]) -> list[Message]:
    messages: list[Message] = []
    for index, raw in enumerate(_list(request.get("messages"), "messages")):
        where = f"messages[{index}]"
        message = _obj(raw, where)
        _extra_keys(message, _KEYS_ROLE_CONTENT, where, sink)
        role_name = message.get("role")
        if role_name not in ("user", "assistant"):
            raise TranslationError(f"{where}.role {role_name!r} is not user or assistant")
        role = Role(role_name)
        content = message.get("content")
        if type(content) is str:  # a plain text turn (most of a long conversation): the fast make
            messages.append(Message.user(content) if role is Role.USER else Message.assistant(content))
            continue
        if isinstance(content, str):
            blocks: tuple[ContentBlock, ...] = (TextBlock(text=content),)
        else:
            items = _list(content, f"{where}.content")
            parsed = (_anthropic_block(b, role, f"{where}.content[{i}]", sink) for i, b in enumerate(items))
            blocks = tuple(b for b in parsed if b is not None)
        if not blocks:
            if isinstance(content, list) and content:
                continue  # every block was untranslated (recorded); the turn has nothing the model carries
            raise TranslationError(f"{where}.content is empty")
        messages.append(Message(role=role, content=blocks))
    return messages


def _anthropic_system(raw: object, sink: list[str]) -> tuple[str | None, tuple[TextBlock, ...]]:
    if raw is None or isinstance(raw, str):
        return raw, ()
    blocks: list[TextBlock] = []
    for i, item in enumerate(_list(raw, "system")):
        block = _anthropic_block(item, Role.USER, f"system[{i}]", sink)
        if block is not None and not isinstance(block, TextBlock):
            raise TranslationError(f"system[{i}] must be a text block")
        if block is not None:
            blocks.append(block)
    return None, tuple(blocks)


def _anthropic_reasoning(request: dict[str, Any], sink: list[str]) -> tuple[Reasoning | None, ResponseFormat | None]:
    thinking = request.get("thinking")
    mode: ThinkingMode | None = None
    budget: int | None = None
    if thinking is not None:
        config = _obj(thinking, "thinking")
        kind = config.get("type")
        if kind not in ("enabled", "adaptive", "disabled"):
            sink.append("thinking")
        else:
            mode = ThinkingMode(kind)
            _extra_keys(config, frozenset({"type", "budget_tokens"}), "thinking", sink)
            budget = _opt_int(config.get("budget_tokens"), "thinking.budget_tokens") if kind == "enabled" else None
    effort: ReasoningEffort | None = None
    response_format: ResponseFormat | None = None
    output = request.get("output_config")
    if output is not None:
        config = _obj(output, "output_config")
        _extra_keys(config, frozenset({"effort", "format"}), "output_config", sink)
        if config.get("effort") is not None:
            value = _str(config.get("effort"), "output_config.effort")
            effort = _checked(ReasoningEffort, "output_config.effort", value=value)
        if config.get("format") is not None:
            fmt = _obj(config.get("format"), "output_config.format")
            if fmt.get("type") != "json_schema":
                raise TranslationError(f"output_config.format.type {fmt.get('type')!r} is not json_schema")
            _extra_keys(fmt, frozenset({"type", "schema"}), "output_config.format", sink)
            schema = _args_json(fmt.get("schema"), "output_config.format.schema")
            response_format = ResponseFormat(kind=ResponseFormatKind.JSON_SCHEMA, schema_json=schema)
    if mode is None and effort is None:
        return None, response_format
    return _checked(Reasoning, "thinking", effort=effort, thinking=mode, budget_tokens=budget), response_format


def _anthropic_tool_choice(raw: object, sink: list[str]) -> tuple[tuple[str, str] | None, bool | None]:
    if raw is None:
        return None, None
    choice = _obj(raw, "tool_choice")
    kind = choice.get("type")
    _extra_keys(choice, frozenset({"type", "name", "disable_parallel_tool_use"}), "tool_choice", sink)
    disable = _opt_bool(choice.get("disable_parallel_tool_use"), "tool_choice.disable_parallel_tool_use")
    parallel = None if disable is None else not disable
    if kind in ("auto", "any", "none"):
        return (str(kind), ""), parallel
    if kind == "tool":
        return ("tool", _str(choice.get("name"), "tool_choice.name")), parallel
    raise TranslationError(f"tool_choice.type must be auto, any, none or tool, got {kind!r}")


def _parse_anthropic_request(body: object) -> tuple[ChatRequest, WireExtras]:
    parts = _anthropic_request_parts(body)
    return parts.build(), parts.extras


def _anthropic_request_parts(body: object) -> RequestParts:
    request = _obj(body, "anthropic request")
    sink: list[str] = []
    _extra_keys(request, _ANTHROPIC_REQUEST_KEYS, "", sink)
    messages = _anthropic_messages(request, sink)
    _some_turn(messages, sink)
    system, system_blocks = _anthropic_system(request.get("system"), sink)
    tools: list[ToolDefinition] = []
    for i, raw in enumerate(_list(request.get("tools", []), "tools")):
        tool = _anthropic_tool(raw, f"tools[{i}]", sink)
        if tool is not None:
            tools.append(tool)
    tool_choice, parallel = _anthropic_tool_choice(request.get("tool_choice"), sink)
    reasoning, response_format = _anthropic_reasoning(request, sink)
    user = None
    if request.get("metadata") is not None:
        metadata = _obj(request.get("metadata"), "metadata")
        _extra_keys(metadata, frozenset({"user_id"}), "metadata", sink)
        user = _opt_str(metadata.get("user_id"), "metadata.user_id")
    top_p = _opt_num(request.get("top_p"), "top_p")
    extras = WireExtras(
        model=_str(request.get("model", ""), "model"),
        stream=_opt_bool(request.get("stream"), "stream"),
        top_p=top_p,
        tool_choice=tool_choice,
        untranslated=tuple(sink),
    )
    fields: dict[str, Any] = {
        "max_tokens": _int(request.get("max_tokens"), "max_tokens"),
        "system": system,
        "system_blocks": system_blocks,
        "tools": tuple(tools),
        "temperature": _opt_num(request.get("temperature"), "temperature"),
        "stop_sequences": tuple(
            _str(s, "stop_sequences[]") for s in _list(request.get("stop_sequences", []), "stop_sequences")
        ),
        "top_p": top_p,
        "tool_choice": tool_choice,
        "parallel_tool_calls": parallel,
        "reasoning": reasoning,
        "response_format": response_format,
        "user": user,
        "top_k": _opt_int(request.get("top_k"), "top_k"),
        "service_tier": _opt_str(request.get("service_tier"), "service_tier"),
    }
    return RequestParts(messages, fields, extras)


def _anthropic_tool(raw: object, where: str, sink: list[str]) -> ToolDefinition | None:
    tool = _obj(raw, where)
    if tool.get("type") not in (None, "custom"):
        sink.append(where)  # a server tool (web_search, code_execution, ...): not a function tool
        return None
    _extra_keys(tool, _KEYS_ANTHROPIC_TOOL, where, sink)
    return ToolDefinition(
        name=_str(tool.get("name"), f"{where}.name"),
        description=_str(tool.get("description", ""), f"{where}.description"),
        input_schema_json=_args_json(tool.get("input_schema"), f"{where}.input_schema"),
        strict=_opt_bool(tool.get("strict"), f"{where}.strict"),
        cache_control=_cache_control(tool.get("cache_control"), f"{where}.cache_control"),
    )


# --- OpenAI wire -> neutral ------------------------------------------------------------------------


def _data_url(url: str) -> tuple[str, str] | None:
    """(media type, base64 data) of a ``data:<type>;base64,<data>`` URL; None for any other URL."""
    if not url.startswith("data:"):
        return None
    head, sep, data = url[5:].partition(",")
    if not sep or not head.endswith(";base64"):
        return None
    return head[: -len(";base64")], data


def _openai_part(raw: object, where: str, sink: list[str], *, text_only: bool) -> ContentBlock | None:
    part = _obj(raw, where)
    kind = part.get("type")
    if kind == "text":
        _extra_keys(part, frozenset({"type", "text"}), where, sink)
        return TextBlock(text=_str(part.get("text"), f"{where}.text"))
    if kind == "image_url" and not text_only:
        _extra_keys(part, frozenset({"type", "image_url"}), where, sink)
        image = _obj(part.get("image_url"), f"{where}.image_url")
        _extra_keys(image, frozenset({"url", "detail"}), f"{where}.image_url", sink)
        url = _str(image.get("url"), f"{where}.image_url.url")
        detail = _str(image.get("detail", ""), f"{where}.image_url.detail")
        inline = _data_url(url)
        if inline is not None:
            media, data = inline
            return _checked(ImageBlock, where, source=SourceKind.BASE64, data=data, media_type=media, detail=detail)
        return _checked(ImageBlock, where, source=SourceKind.URL, data=url, detail=detail)
    if kind == "file" and not text_only:
        _extra_keys(part, frozenset({"type", "file"}), where, sink)
        file = _obj(part.get("file"), f"{where}.file")
        inline = _data_url(_str(file.get("file_data", ""), f"{where}.file.file_data"))
        if inline is None or inline[0] != "application/pdf":
            sink.append(where)  # a file_id, or a file that is not an inline PDF
            return None
        _extra_keys(file, frozenset({"file_data", "filename"}), f"{where}.file", sink)
        return _checked(
            DocumentBlock,
            where,
            source=SourceKind.BASE64,
            data=inline[1],
            media_type="application/pdf",
            title=_opt_str(file.get("filename"), f"{where}.file.filename"),
        )
    sink.append(where)  # input_audio, refusal parts, ...: not carried
    return None


def _openai_parts(content: object, where: str, sink: list[str], *, text_only: bool = False) -> tuple[ContentBlock, ...]:
    if isinstance(content, str):
        return (TextBlock(text=content),)
    parsed = (
        _openai_part(raw, f"{where}[{i}]", sink, text_only=text_only) for i, raw in enumerate(_list(content, where))
    )
    return tuple(block for block in parsed if block is not None)


def _openai_tool_calls(raw: object, msg_index: int, where: str, sink: list[str]) -> tuple[ToolUseBlock, ...]:
    calls: list[ToolUseBlock] = []
    for i, item in enumerate(_list(raw, where)):
        call = _obj(item, f"{where}[{i}]")
        if call.get("type", "function") != "function":
            sink.append(f"{where}[{i}]")  # a custom tool call
            continue
        _extra_keys(call, _KEYS_CALL, f"{where}[{i}]", sink)
        function = _obj(call.get("function"), f"{where}[{i}].function")
        _extra_keys(function, _KEYS_CALL_FUNCTION, f"{where}[{i}].function", sink)
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


def _openai_messages(request: dict[str, Any], sink: list[str]) -> tuple[list[Message], tuple[TextBlock, ...] | None]:
    system: tuple[TextBlock, ...] | None = None
    messages: list[Message] = []
    for index, raw in enumerate(_list(request.get("messages"), "messages")):
        where = f"messages[{index}]"
        message = _obj(raw, where)
        role = message.get("role")
        if role in ("system", "developer"):
            if messages or system is not None:
                sink.append(where)  # a system message after the first turn: Anthropic has one system prompt
                continue
            _extra_keys(message, _KEYS_ROLE_CONTENT, where, sink)
            parts = _openai_parts(message.get("content"), f"{where}.content", sink, text_only=True)
            system = tuple(p for p in parts if isinstance(p, TextBlock))
        elif role == "user":
            _extra_keys(message, _KEYS_ROLE_CONTENT, where, sink)
            content = message.get("content")
            if type(content) is str:  # a plain text turn (most of a long conversation): Message.user's fast make
                messages.append(Message.user(content))
                continue
            blocks = _openai_parts(content, f"{where}.content", sink)
            if blocks:
                messages.append(Message(role=Role.USER, content=blocks))
        elif role == "assistant":
            _extra_keys(message, _KEYS_OPENAI_ASSISTANT, where, sink)
            content = message.get("content")
            if type(content) is str and "tool_calls" not in message:  # a plain text turn
                messages.append(Message.assistant(content))
                continue
            text = (
                ()
                if content is None
                else (TextBlock(text=content),)
                if type(content) is str
                else _openai_parts(content, f"{where}.content", sink, text_only=True)
            )
            calls = (
                _openai_tool_calls(message["tool_calls"], index, f"{where}.tool_calls", sink)
                if "tool_calls" in message  # (a null one is refused there, as before)
                else ()
            )
            if text + calls:
                messages.append(Message(role=Role.ASSISTANT, content=text + calls))
        elif role == "tool":
            messages.append(_openai_tool_message(message, where, sink))
        else:
            raise TranslationError(f"{where}.role {role!r} is not system, developer, user, assistant or tool")
    return messages, system


def _openai_tool_message(message: dict[str, Any], where: str, sink: list[str]) -> Message:
    _extra_keys(message, _KEYS_OPENAI_TOOL_MESSAGE, where, sink)
    raw = message.get("content")
    parts = [p for p in _openai_parts(raw, f"{where}.content", sink, text_only=True) if isinstance(p, TextBlock)]
    is_error = len(parts) == 2 and not isinstance(raw, str) and parts[0].text == IS_ERROR_MARKER
    if is_error:
        parts = parts[1:]
    if len(parts) > 1:
        sink.append(f"{where}.content[1:]")  # one text is carried (an Anthropic tool_result of one text)
    result = ToolResultBlock(
        tool_use_id=_str(message.get("tool_call_id"), f"{where}.tool_call_id"),
        content=parts[0].text if parts else "",
        is_error=is_error,
    )
    return Message(role=Role.USER, content=(result,))


def _openai_response_format(raw: object, sink: list[str]) -> ResponseFormat | None:
    if raw is None:
        return None
    fmt = _obj(raw, "response_format")
    kind = fmt.get("type")
    if kind in ("text", "json_object"):
        _extra_keys(fmt, frozenset({"type"}), "response_format", sink)
        return ResponseFormat(kind=ResponseFormatKind(kind))
    if kind != "json_schema":
        raise TranslationError(f"response_format.type must be text, json_object or json_schema, got {kind!r}")
    _extra_keys(fmt, frozenset({"type", "json_schema"}), "response_format", sink)
    spec = _obj(fmt.get("json_schema"), "response_format.json_schema")
    _extra_keys(spec, _KEYS_JSON_SCHEMA, "response_format.json_schema", sink)
    return _checked(
        ResponseFormat,
        "response_format.json_schema",
        kind=ResponseFormatKind.JSON_SCHEMA,
        name=_str(spec.get("name"), "response_format.json_schema.name"),
        schema_json=_args_json(spec.get("schema", {}), "response_format.json_schema.schema"),
        strict=_opt_bool(spec.get("strict"), "response_format.json_schema.strict"),
        description=_str(spec.get("description", ""), "response_format.json_schema.description"),
    )


def _openai_stops(stop: object) -> tuple[str, ...]:
    stops = () if stop is None else (stop,) if isinstance(stop, str) else tuple(_list(stop, "stop"))
    return tuple(_str(s, "stop[]") for s in stops)


def _parse_openai_request(body: object) -> tuple[ChatRequest, WireExtras]:
    parts = _openai_request_parts(body)
    return parts.build(), parts.extras


def _openai_request_parts(body: object) -> RequestParts:
    request = _obj(body, "openai request")
    sink: list[str] = []
    _extra_keys(request, _OPENAI_REQUEST_KEYS, "", sink)
    messages, system = _openai_messages(request, sink)
    _some_turn(messages, sink)
    max_tokens = request.get("max_completion_tokens", request.get("max_tokens"))
    tools: list[ToolDefinition] = []
    for i, raw in enumerate(_list(request.get("tools", []), "tools")):
        tool = _openai_tool(raw, f"tools[{i}]", sink)
        if tool is not None:
            tools.append(tool)
    tool_choice = _openai_tool_choice(request.get("tool_choice"), sink)
    effort = request.get("reasoning_effort")
    reasoning = None
    if effort is not None:
        value = _str(effort, "reasoning_effort")
        reasoning = Reasoning(effort=_checked(ReasoningEffort, "reasoning_effort", value=value))
    top_p = _opt_num(request.get("top_p"), "top_p")
    extras = WireExtras(
        model=_str(request.get("model", ""), "model"),
        stream=_opt_bool(request.get("stream"), "stream"),
        top_p=top_p,
        tool_choice=tool_choice,
        untranslated=tuple(sink),
        output_cap_given=max_tokens is not None,
    )
    single_system = system is not None and len(system) == 1
    fields: dict[str, Any] = {
        "system": system[0].text if system is not None and single_system else None,
        "system_blocks": system if system is not None and not single_system else (),
        "tools": tuple(tools),
        "top_p": top_p,
        "tool_choice": tool_choice,
        "reasoning": reasoning,
    }
    for name, read in _OPENAI_SCALARS:  # only what the body sets: an unset one keeps ChatRequest's None
        given = request.get(name)
        if given is not None:
            fields[name] = read(given, name)
    stop = request.get("stop")
    if stop is not None:
        fields["stop_sequences"] = _openai_stops(stop)
    response_format = request.get("response_format")
    if response_format is not None:
        fields["response_format"] = _openai_response_format(response_format, sink)
    if max_tokens is not None:
        fields["max_tokens"] = _int(max_tokens, "max_tokens")
    return RequestParts(messages, fields, extras)


_OPENAI_SCALARS: tuple[tuple[str, Callable[[object, str], object]], ...] = (
    ("temperature", _opt_num),
    ("parallel_tool_calls", _opt_bool),
    ("user", _opt_str),
    ("seed", _opt_int),
    ("n", _opt_int),
    ("logprobs", _opt_bool),
    ("top_logprobs", _opt_int),
    ("frequency_penalty", _opt_num),
    ("presence_penalty", _opt_num),
    ("service_tier", _opt_str),
)
"""The Chat Completions fields read as one scalar each (their ChatRequest field has their name)."""


def _openai_tool(raw: object, where: str, sink: list[str]) -> ToolDefinition | None:
    tool = _obj(raw, where)
    if tool.get("type") != "function":
        sink.append(where)  # a custom (free-form) tool
        return None
    _extra_keys(tool, frozenset({"type", "function"}), where, sink)
    function = _obj(tool.get("function"), f"{where}.function")
    _extra_keys(function, _KEYS_OPENAI_FUNCTION, f"{where}.function", sink)
    return ToolDefinition(
        name=_str(function.get("name"), f"{where}.function.name"),
        description=_str(function.get("description", ""), f"{where}.function.description"),
        input_schema_json=_args_json(function.get("parameters", {"type": "object"}), f"{where}.function.parameters"),
        strict=_opt_bool(function.get("strict"), f"{where}.function.strict"),
    )


def _openai_tool_choice(raw: object, sink: list[str]) -> tuple[str, str] | None:
    named = {"auto": "auto", "required": "any", "none": "none"}
    if raw is None:
        return None
    if isinstance(raw, str) and raw in named:
        return (named[raw], "")
    if isinstance(raw, dict) and raw.get("type") == "function" and isinstance(raw.get("function"), dict):
        return ("tool", _str(raw["function"].get("name"), "tool_choice.function.name"))
    if isinstance(raw, dict) and raw.get("type") in ("allowed_tools", "custom"):
        sink.append("tool_choice")  # allowed_tools / a custom tool: not carried
        return None
    raise TranslationError(f"tool_choice must be auto, required, none or a function, got {raw!r}")
