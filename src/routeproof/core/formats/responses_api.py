"""An OpenAI Responses API request as the equivalent Chat Completions body, or a refusal naming the field.

The gateway's ``POST /v1/responses`` does not grow a third request parser: a Responses body is
rewritten here, field by field, into the Chat Completions body that means the same thing, and that
body goes through the one OpenAI parser (``core/formats/translate_parse.py``). So every target the router
can translate Chat Completions to (OpenAI-compatible, Anthropic Messages, Bedrock Converse) is a
target of the Responses API too, and whatever the content model learns (images, structured output,
reasoning controls) the Responses endpoint carries from the same day, with the same refusals.

:data:`RESPONSES_FIELDS` is the table, as data: every top-level field of the ``openai`` SDK's
``ResponseCreateParams`` has one row (a test enumerates the installed SDK and fails on a field
without one). A row says what happens to the field:

- ``ROUTER``: the router's own (``model``, ``stream``);
- ``TRANSLATED``: rewritten to the named Chat Completions field (the Chat parser then decides per
  target, and refuses what the target cannot take, naming it);
- ``STATEFUL``: needs state kept by OpenAI's Responses service (a stored response, a conversation,
  a background job, a hosted tool): it has no Chat Completions form, so it is carried only to a
  provider with the Responses API, verbatim (``core/responses_route.py``), and refused naming the
  field everywhere else, never faked;
- ``ACCEPTED``: a value routeproof honours by what it does anyway (``store: false`` — nothing is
  stored; ``stream_options.include_obfuscation`` — no obfuscation field is sent).

A STATEFUL field is refused only when it asks for something: ``store: false``, ``background:
false``, ``include: []``, ``truncation: "disabled"`` and ``null`` are what happens anyway.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import icontract

from routeproof.core.errors import TranslationError
from routeproof.core.formats.wire import compact_json

__all__ = [
    "OWN_REASONING_PREFIX",
    "REASONING_ITEM_DROPPED",
    "RESPONSES_FIELDS",
    "Handling",
    "ResponsesRefused",
    "ResponsesRequest",
    "own_reasoning",
    "responses_echo",
    "responses_estimate",
    "responses_to_chat",
]


class Handling(enum.Enum):
    """What the Responses endpoint does with one request field."""

    ROUTER = "router"
    TRANSLATED = "translated"
    STATEFUL = "stateful"
    ACCEPTED = "accepted"


RESPONSES_FIELDS: Mapping[str, tuple[Handling, str]] = MappingProxyType(
    {
        "model": (Handling.ROUTER, "the alias the router resolves"),
        "stream": (Handling.ROUTER, "streamed as typed Responses SSE events"),
        "input": (
            Handling.TRANSLATED,
            "messages (string, message items, function_call / function_call_output items); a reasoning item"
            " this gateway answered with (id rs_rp...) is dropped, named input[].reasoning",
        ),
        "instructions": (Handling.TRANSLATED, "a leading system message"),
        "max_output_tokens": (Handling.TRANSLATED, "max_completion_tokens"),
        "temperature": (Handling.TRANSLATED, "temperature"),
        "top_p": (Handling.TRANSLATED, "top_p"),
        "tools": (Handling.TRANSLATED, "function tools -> tools[].function; hosted tools refused"),
        "tool_choice": (Handling.TRANSLATED, "auto/none/required; {type: function, name} -> {type, function: {name}}"),
        "parallel_tool_calls": (Handling.TRANSLATED, "parallel_tool_calls"),
        "text": (Handling.TRANSLATED, "text.format -> response_format; text.verbosity -> verbosity"),
        "reasoning": (Handling.TRANSLATED, "reasoning.effort -> reasoning_effort; a summary request is refused"),
        "user": (Handling.TRANSLATED, "user"),
        "metadata": (Handling.TRANSLATED, "metadata"),
        "service_tier": (Handling.TRANSLATED, "service_tier"),
        "prompt_cache_key": (Handling.TRANSLATED, "prompt_cache_key"),
        "safety_identifier": (Handling.TRANSLATED, "safety_identifier"),
        "top_logprobs": (Handling.TRANSLATED, "logprobs: true + top_logprobs"),
        "stream_options": (Handling.ACCEPTED, "include_obfuscation: no obfuscation field is ever sent"),
        "store": (Handling.STATEFUL, "store: true needs OpenAI's response store (GET /v1/responses/{id})"),
        "previous_response_id": (Handling.STATEFUL, "needs the stored previous response"),
        "conversation": (Handling.STATEFUL, "needs a stored conversation"),
        "background": (Handling.STATEFUL, "needs a background job polled later"),
        "background_options": (Handling.STATEFUL, "options of a background job"),
        "prompt": (Handling.STATEFUL, "a prompt template stored at OpenAI"),
        "include": (
            Handling.STATEFUL,
            "extra output OpenAI's service adds (encrypted reasoning, tool results);"
            " message.output_text.logprobs alone is translated: logprobs: true",
        ),
        "truncation": (Handling.STATEFUL, "truncation: auto is done by OpenAI's service on its stored context"),
        "context_management": (Handling.STATEFUL, "server-side context compaction"),
        "max_tool_calls": (Handling.STATEFUL, "a limit on hosted tool calls"),
        "moderation": (Handling.STATEFUL, "OpenAI's server-side moderation"),
        "access_programs": (Handling.STATEFUL, "OpenAI's programmatic tool calling"),
        "image": (Handling.STATEFUL, "OpenAI's hosted image options"),
        "prompt_cache_options": (Handling.STATEFUL, "OpenAI's explicit prompt-cache options"),
        "prompt_cache_retention": (Handling.STATEFUL, "OpenAI's extended prompt-cache retention"),
    }
)
"""Every Responses request field and what ``POST /v1/responses`` does with it (see the module doc)."""

_SAME_NAME = ("temperature", "top_p", "parallel_tool_calls", "user", "metadata", "service_tier",
              "prompt_cache_key", "safety_identifier")  # fmt: skip
_IDLE_VALUES: Mapping[str, tuple[object, ...]] = MappingProxyType(
    {"store": (False,), "background": (False,), "include": ([],), "truncation": ("disabled",)}
)
"""A STATEFUL field with one of these values (or null) asks for nothing and is accepted."""
_TRANSLATED_INCLUDES = frozenset({"message.output_text.logprobs"})
"""``include`` values with a Chat Completions form (the token logprobs of the answer's text)."""
_NEEDS = "needs state kept by OpenAI's Responses service, which no provider behind this route keeps"


@dataclass(frozen=True, slots=True, kw_only=True)
class ResponsesRequest:
    """A Responses request rewritten: the Chat Completions body, and the fields a Response echoes.

    ``echo_json`` is the JSON object of the request fields a ``response`` object repeats
    (``instructions``, ``tools``, ``tool_choice``, ``temperature``, ``top_p``, ``parallel_tool_calls``,
    ``metadata``, ``max_output_tokens``, ``text``, ``reasoning``, ``user``), with the API's defaults.
    """

    chat_json: str
    echo_json: str
    dropped: tuple[str, ...] = ()  # what the rewriting leaves out, named (a reasoning item of an earlier turn)


class ResponsesRefused(TranslationError):
    """A Responses request field that has no Chat Completions equivalent (``field`` names it, ``why`` says why).

    Only OpenAI's own Responses API can take such a request (``core/responses_route.py``).
    """

    def __init__(self, field: str, why: str) -> None:
        super().__init__(f"{field!r} {why}", fields=(field,))
        self.field = field
        self.why = why


_JSON_TYPES = (str, int, float, bool, type(None), list, dict)


def _json_shaped(value: object) -> bool:
    """Whether ``value`` is made only of what ``json.loads`` returns (exact types: a subclass such as an
    ``IntEnum`` is not JSON). The preconditions below say so, so CrossHair explores parsed bodies only."""
    stack = [value]
    while stack:
        item = stack.pop()
        if type(item) not in _JSON_TYPES:
            return False
        if type(item) is dict:
            if any(type(key) is not str for key in item):
                return False
            stack.extend(item.values())
        elif type(item) is list:
            stack.extend(item)
    return True


def _refuse(field: str, why: str) -> ResponsesRefused:
    return ResponsesRefused(field, why)


def _obj(value: object, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise TranslationError(f"{where} must be an object, got {value!r}")
    return value


def _list(value: object, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise TranslationError(f"{where} must be an array, got {value!r}")
    return value


def _text_part(part: dict[str, Any], where: str) -> dict[str, Any]:
    """One Responses content part as a Chat Completions content part."""
    kind = part.get("type")
    if kind in ("input_text", "output_text"):
        if not isinstance(part.get("text"), str):
            raise TranslationError(f"{where}.text must be a string, got {part.get('text')!r}")
        if part.get("annotations"):
            raise _refuse(f"{where}.annotations", "(citations of a hosted tool) has no Chat Completions equivalent")
        return {"type": "text", "text": part["text"]}
    if kind == "refusal":
        return {"type": "refusal", "refusal": part.get("refusal")}
    if kind == "input_image":
        if part.get("file_id") is not None:
            raise _refuse(f"{where}.file_id", "names a file stored at OpenAI; send image_url (a data or http URL)")
        image: dict[str, Any] = {"url": part.get("image_url")}
        if part.get("detail") not in (None, "auto"):
            image["detail"] = part["detail"]
        return {"type": "image_url", "image_url": image}
    if kind == "input_file":
        if part.get("file_id") is not None or part.get("file_url") is not None:
            field = "file_id" if part.get("file_id") is not None else "file_url"
            raise _refuse(f"{where}.{field}", "names a file OpenAI's service fetches; send file_data (base64)")
        file = {k: part[k] for k in ("file_data", "filename") if part.get(k) is not None}
        return {"type": "file", "file": file}
    raise _refuse(f"{where}.type", f"{kind!r} has no Chat Completions equivalent")


def _content(content: object, where: str) -> str | list[dict[str, Any]]:
    if isinstance(content, str):
        return content
    return [_text_part(_obj(p, f"{where}[{i}]"), f"{where}[{i}]") for i, p in enumerate(_list(content, where))]


REASONING_ITEM_DROPPED = "input[].reasoning"
"""How a reasoning item of an earlier turn, left out of the Chat rewriting, is named among the drops."""
OWN_REASONING_PREFIX = "rs_rp"
"""The id prefix of the reasoning items this gateway's Responses answers carry (``gateway/responses_wire``)."""


def own_reasoning(item: Mapping[str, Any]) -> bool:
    """A reasoning item this gateway answered with (id ``rs_rp...``, no ``encrypted_content``): the
    reasoning text of an Anthropic or Bedrock answer that a client sent back; no provider knows its id."""
    if item.get("type") != "reasoning":
        return False
    item_id = item.get("id")
    own = isinstance(item_id, str) and item_id.startswith(OWN_REASONING_PREFIX)
    return own and item.get("encrypted_content") is None


def _input_messages(raw: object, dropped: list[str]) -> list[dict[str, Any]]:
    """The ``input`` (a string or a list of items) as Chat Completions messages.

    A run of ``function_call`` items joins the assistant message before it (one assistant turn with
    text and tool calls, as Chat Completions writes it). A ``reasoning`` item this gateway answered
    with (its id starts ``rs_rp``, no ``encrypted_content``: the reasoning text of an Anthropic or
    Bedrock answer, sent back by a client that replays every output item, as the OpenAI Agents SDK
    does) has no Chat form and nothing a model can take back (Anthropic requires the signature, which
    that item never had): it is left out and named in ``dropped``. Any other reasoning item is OpenAI's
    (stored, or ``encrypted_content``) and only its Responses API can take it back: refused.
    """
    if isinstance(raw, str):
        return [{"role": "user", "content": raw}]
    messages: list[dict[str, Any]] = []
    for index, value in enumerate(_list(raw, "input")):
        where = f"input[{index}]"
        item = _obj(value, where)
        kind = item.get("type", "message")
        if kind == "message":
            role = item.get("role")
            if role not in ("user", "assistant", "system", "developer"):
                raise TranslationError(f"{where}.role must be user, assistant, system or developer, got {role!r}")
            messages.append({"role": role, "content": _content(item.get("content"), f"{where}.content")})
        elif kind == "function_call":
            call = {
                "id": item.get("call_id"),
                "type": "function",
                "function": {"name": item.get("name"), "arguments": item.get("arguments")},
            }
            last = messages[-1] if messages else None
            if last is not None and last["role"] == "assistant":
                last.setdefault("tool_calls", []).append(call)
            else:
                messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind == "function_call_output":
            content = _content(item.get("output"), f"{where}.output")  # a string, or a list of parts
            messages.append({"role": "tool", "tool_call_id": item.get("call_id"), "content": content})
        elif kind == "reasoning" and own_reasoning(item):
            if REASONING_ITEM_DROPPED not in dropped:
                dropped.append(REASONING_ITEM_DROPPED)
        elif kind in ("reasoning", "item_reference", "compaction"):
            raise _refuse(f"{where}.type", f"{kind!r} {_NEEDS} (only OpenAI's Responses API can take it back)")
        else:
            raise _refuse(f"{where}.type", f"{kind!r} is a hosted tool's item; only function tools are carried")
    return messages


def _tool(raw: object, where: str) -> dict[str, Any]:
    tool = _obj(raw, where)
    if tool.get("type") != "function":
        raise _refuse(f"{where}.type", f"{tool.get('type')!r} is a tool OpenAI's service runs; {_NEEDS}")
    function: dict[str, Any] = {"name": tool.get("name")}
    for key in ("description", "parameters", "strict"):
        if tool.get(key) is not None:
            function[key] = tool[key]
    unknown = sorted(set(tool) - {"type", "name", "description", "parameters", "strict"})
    if unknown:
        raise _refuse(f"{where}.{unknown[0]}", "has no Chat Completions equivalent")
    return {"type": "function", "function": function}


def _tool_choice(raw: object) -> object:
    if raw in ("auto", "none", "required"):
        return raw
    choice = _obj(raw, "tool_choice")
    if choice.get("type") == "function":
        return {"type": "function", "function": {"name": choice.get("name")}}
    raise _refuse("tool_choice", f"{choice!r} chooses a hosted tool or a tool set; only function tools are carried")


def _text_format(text: object, chat: dict[str, Any]) -> None:
    settings = _obj(text, "text")
    unknown = sorted(set(settings) - {"format", "verbosity"})
    if unknown:
        raise _refuse(f"text.{unknown[0]}", "has no Chat Completions equivalent")
    if settings.get("verbosity") is not None:
        chat["verbosity"] = settings["verbosity"]
    if settings.get("format") is None:
        return
    fmt = _obj(settings["format"], "text.format")
    kind = fmt.get("type")
    if kind == "json_schema":
        schema = {k: fmt[k] for k in ("name", "description", "schema", "strict") if fmt.get(k) is not None}
        chat["response_format"] = {"type": "json_schema", "json_schema": schema}
    elif kind == "json_object":
        chat["response_format"] = {"type": "json_object"}
    elif kind != "text":
        raise _refuse("text.format.type", f"{kind!r} is not text, json_object or json_schema")


def _reasoning(raw: object, chat: dict[str, Any]) -> None:
    reasoning = _obj(raw, "reasoning")
    for key in ("summary", "generate_summary"):
        if reasoning.get(key) is not None:
            raise _refuse(f"reasoning.{key}", "(a reasoning summary OpenAI's service writes) has no equivalent")
    unknown = sorted(set(reasoning) - {"effort", "summary", "generate_summary"})
    if unknown:
        raise _refuse(f"reasoning.{unknown[0]}", "has no Chat Completions equivalent")
    if reasoning.get("effort") is not None:
        chat["reasoning_effort"] = reasoning["effort"]


@icontract.require(lambda request: _json_shaped(request), "a parsed JSON body")  # noqa: PLW0108 (icontract binds by name)
@icontract.ensure(lambda result: result["tool_choice"] is not None and result["text"] is not None)
def responses_echo(request: Mapping[str, Any]) -> dict[str, Any]:
    """The request fields a ``response`` object repeats, with the API's defaults."""
    return {
        "instructions": request.get("instructions"),
        "tools": request.get("tools") or [],
        "tool_choice": request.get("tool_choice") or "auto",
        "temperature": request.get("temperature"),
        "top_p": request.get("top_p"),
        "parallel_tool_calls": request.get("parallel_tool_calls") is not False,
        "metadata": request.get("metadata"),
        "max_output_tokens": request.get("max_output_tokens"),
        "text": request.get("text") or {"format": {"type": "text"}},
        "reasoning": request.get("reasoning"),
        "user": request.get("user"),
    }


def _responses_to_chat(body: object) -> ResponsesRequest:
    request = _obj(body, "responses request")
    for field in request:
        row = RESPONSES_FIELDS.get(field)
        if row is None:
            raise _refuse(field, "is not a field of the Responses API this gateway knows")
        value = request[field]
        if field == "include" and isinstance(value, list) and value and set(value) <= _TRANSLATED_INCLUDES:
            continue  # translated below
        if row[0] is Handling.STATEFUL and value is not None and value not in _IDLE_VALUES.get(field, ()):
            raise _refuse(field, f"{_NEEDS} ({row[1]}); set it to null or leave it out")
    if "input" not in request:
        raise TranslationError("'input' is required")
    dropped: list[str] = []
    messages = _input_messages(request["input"], dropped)
    instructions = request.get("instructions")
    if instructions is not None:
        if not isinstance(instructions, str):
            raise TranslationError(f"'instructions' must be a string, got {instructions!r}")
        messages.insert(0, {"role": "system", "content": instructions})
    chat: dict[str, Any] = {"model": request.get("model", ""), "messages": messages}
    if request.get("stream") is not None:
        chat["stream"] = request["stream"]
    if request.get("max_output_tokens") is not None:
        chat["max_completion_tokens"] = request["max_output_tokens"]
    for key in _SAME_NAME:
        if request.get(key) is not None:
            chat[key] = request[key]
    if request.get("tools"):
        chat["tools"] = [_tool(t, f"tools[{i}]") for i, t in enumerate(_list(request["tools"], "tools"))]
    if request.get("tool_choice") is not None:
        chat["tool_choice"] = _tool_choice(request["tool_choice"])
    if request.get("text") is not None:
        _text_format(request["text"], chat)
    if request.get("reasoning") is not None:
        _reasoning(request["reasoning"], chat)
    if request.get("top_logprobs") is not None:
        chat["logprobs"] = True
        chat["top_logprobs"] = request["top_logprobs"]
    if request.get("include"):  # only translatable values reach here
        chat["logprobs"] = True
    try:
        return ResponsesRequest(
            chat_json=compact_json(chat), echo_json=compact_json(responses_echo(request)), dropped=tuple(dropped)
        )
    except ValueError as exc:  # NaN / Infinity in a number
        raise TranslationError(f"responses request: {exc}") from exc


@icontract.require(lambda body: _json_shaped(body), "a parsed JSON body")  # noqa: PLW0108 (icontract binds by name)
@icontract.ensure(lambda result: result.chat_json.startswith("{") and result.echo_json.startswith("{"))
def responses_to_chat(body: object) -> ResponsesRequest:
    """A Responses API request body (decoded JSON) as the equivalent Chat Completions body.

    :raises TranslationError: naming the field, when it is malformed, stateful or has no equivalent.
    """
    return _responses_to_chat(body)


def _texts(value: object, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, list):
        for item in value:
            _texts(item, out)
    elif isinstance(value, dict):
        for key in ("text", "content", "output", "arguments", "refusal"):
            if key in value:
                _texts(value[key], out)


def _estimate(body: Mapping[str, Any]) -> ResponsesRequest:
    texts: list[str] = []
    _texts(body.get("input"), texts)
    messages: list[dict[str, Any]] = [{"role": "user", "content": "\n".join(texts) or " "}]
    if isinstance(body.get("instructions"), str):
        messages.insert(0, {"role": "system", "content": body["instructions"]})
    chat: dict[str, Any] = {"model": body.get("model", ""), "messages": messages}
    if body.get("stream") is True:
        chat["stream"] = True
    cap = body.get("max_output_tokens")
    if isinstance(cap, int) and not isinstance(cap, bool) and cap > 0:
        chat["max_completion_tokens"] = cap
    return ResponsesRequest(chat_json=compact_json(chat), echo_json=compact_json(responses_echo(body)))


@icontract.require(lambda body: _json_shaped(body), "a parsed JSON body")  # noqa: PLW0108 (icontract binds by name)
@icontract.ensure(lambda result: result.chat_json.startswith("{") and result.echo_json.startswith("{"))
def responses_estimate(body: Mapping[str, Any]) -> ResponsesRequest:
    """A Chat body that sizes a Responses request with no Chat equivalent (its text as one user turn).

    It is never sent: such a request goes only to providers with the Responses API, verbatim; the
    router uses this body for what it decides before sending (input size, the output reservation).
    """
    # crosshair: off
    # CrossHair 0.0.113 cannot run json.dumps over a symbolic int (``descriptor '__repr__' requires
    # a 'int' object but received a 'SymbolicObject'``) and reports its own TypeError as this
    # function's counterexample; its contracts are checked by Hypothesis over JSON bodies instead
    # (tests/responses/test_responses_estimate.py).
    return _estimate(body)
