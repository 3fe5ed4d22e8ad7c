"""Parsing wire requests: every refusal's exact text (field path, value, reason), every path recorded as not
carried, and each default read."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from routeproof.core.errors import TranslationError
from routeproof.core.formats.translate import parse_anthropic_request, parse_openai_request
from routeproof.core.formats.wire import deterministic_tool_id
from routeproof.core.types import ChatRequest, Role, TextBlock, ToolResultBlock, ToolUseBlock

Parser = Callable[[object], tuple[ChatRequest, Any]]

_USER = {"role": "user", "content": "hi"}
_TOOL_USE = {"type": "tool_use", "id": "c1", "name": "f", "input": {}}


def _anthropic(**fields: object) -> dict[str, object]:
    return {"model": "m", "max_tokens": 10, "messages": [_USER], **fields}


def _with_block(block: object, role: str = "user") -> dict[str, object]:
    if role == "assistant":
        return _anthropic(messages=[_USER, {"role": "assistant", "content": [block]}])
    return _anthropic(messages=[{"role": "user", "content": [block]}])


def _result_block(**fields: object) -> dict[str, object]:
    """A user turn answering the assistant's call c1 with a tool_result carrying ``fields``."""
    block = {"type": "tool_result", "tool_use_id": "c1", **fields}
    return _anthropic(
        messages=[_USER, {"role": "assistant", "content": [_TOOL_USE]}, {"role": "user", "content": [block]}]
    )


_ANTHROPIC_REFUSALS: list[tuple[object, str | tuple[str, ...]]] = [
    ([], "anthropic request must be an object, got list"),
    (_anthropic(metadata={}), ()),
    (_anthropic(messages="x"), "messages must be an array, got str"),
    (_anthropic(messages=[1]), "messages[0] must be an object, got int"),
    (_anthropic(messages=[{**_USER, "name": "x"}]), ("messages[0].name",)),
    (_anthropic(messages=[{"role": "system", "content": "x"}]), "messages[0].role 'system' is not user or assistant"),
    (_anthropic(messages=[{"role": "user", "content": 5}]), "messages[0].content must be an array, got int"),
    (_anthropic(messages=[{"role": "user", "content": []}]), "messages[0].content is empty"),
    (_with_block(1), "messages[0].content[0] must be an object, got int"),
    (
        _with_block({"type": "text", "text": "a", "cache_control": {}}),
        "messages[0].content[0].cache_control must be {'type': 'ephemeral'} with an optional ttl, got {}",
    ),
    (_with_block({"type": "text", "text": 1}), "messages[0].content[0].text must be a string, got int"),
    (
        _with_block(_TOOL_USE),
        "messages: no turn the router can carry (not carried: messages[0].content[0])",
    ),
    (
        _with_block({**_TOOL_USE, "cache_control": {}}, "assistant"),
        "messages[1].content[0].cache_control must be {'type': 'ephemeral'} with an optional ttl, got {}",
    ),
    (_with_block({**_TOOL_USE, "id": 1}, "assistant"), "messages[1].content[0].id must be a string, got int"),
    (
        _with_block({**_TOOL_USE, "name": None}, "assistant"),
        "messages[1].content[0].name must be a string, got NoneType",
    ),
    (_with_block({**_TOOL_USE, "input": []}, "assistant"), "messages[1].content[0].input must be an object, got list"),
    (
        _with_block({"type": "tool_result", "tool_use_id": "c1", "content": "r"}, "assistant"),
        ("messages[1].content[0]",),
    ),
    (
        _result_block(content="r", cache_control={}),
        "messages[2].content[0].cache_control must be {'type': 'ephemeral'} with an optional ttl, got {}",
    ),
    (
        _result_block(content=[{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]),
        ("messages[2].content[0].content[1:]",),
    ),
    (_result_block(content=[_TOOL_USE]), ("messages[2].content[0].content[0]",)),
    (
        _result_block(content=[{"type": "image"}]),
        ("messages[2].content[0].content[0]",),
    ),
    (_result_block(content="r", is_error=1), "messages[2].content[0].is_error must be a boolean"),
    (_result_block(content="r", tool_use_id=None), "messages[2].content[0].tool_use_id must be a string, got NoneType"),
    (_result_block(content=5), "messages[2].content[0].content must be a string, got int"),
    (
        _anthropic(system=[{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]),
        (),
    ),
    (_anthropic(system=[]), ()),
    (
        _anthropic(system=[{"type": "tool_result", "tool_use_id": "c1", "content": "x"}]),
        "system[0] must be a text block",
    ),
    (_anthropic(system=5), "system must be an array, got int"),
    (_anthropic(system=[1]), "system[0] must be an object, got int"),
    (_anthropic(tools={}), "tools must be an array, got dict"),
    (_anthropic(tools=[1]), "tools[0] must be an object, got int"),
    (
        _anthropic(tools=[{"name": "f", "input_schema": {}, "type": "custom"}]),
        (),
    ),
    (_anthropic(tools=[{"input_schema": {}}]), "tools[0].name must be a string, got NoneType"),
    (
        _anthropic(tools=[{"name": "f", "description": 1, "input_schema": {}}]),
        "tools[0].description must be a string, got int",
    ),
    (_anthropic(tools=[{"name": "f"}]), "tools[0].input_schema must be an object, got NoneType"),
    (_anthropic(model=1), "model must be a string, got int"),
    (_anthropic(stream="yes"), "stream must be a boolean"),
    (_anthropic(top_p="0.5"), "top_p must be a number, got str"),
    (_anthropic(tool_choice="auto"), "tool_choice must be an object, got str"),
    (
        _anthropic(tool_choice={"type": "auto", "x": 1}),
        ("tool_choice.x",),
    ),
    (_anthropic(tool_choice={"type": "tool"}), "tool_choice.name must be a string, got NoneType"),
    (_anthropic(tool_choice={"type": "tool", "name": 1}), "tool_choice.name must be a string, got int"),
    ({"model": "m", "messages": [_USER]}, "max_tokens must be a non-negative integer, got None"),
    (_anthropic(temperature="1"), "temperature must be a number, got str"),
    (_anthropic(stop_sequences="END"), "stop_sequences must be an array, got str"),
    (_anthropic(stop_sequences=[1]), "stop_sequences[] must be a string, got int"),
]


def _refused(parser: Parser, body: object, text: str | tuple[str, ...]) -> None:
    """A str: the exact refusal; a tuple: the body parses and these paths are recorded as not carried."""
    if isinstance(text, tuple):
        assert parser(body)[1].untranslated == text
        return
    with pytest.raises(TranslationError, match=f"^{re.escape(text)}$"):
        parser(body)


@pytest.mark.parametrize(("body", "text"), _ANTHROPIC_REFUSALS)
def test_anthropic_refusals_name_the_field(body: object, text: str | tuple[str, ...]) -> None:
    """Each malformed Anthropic request is refused naming the path; each field it does not carry is recorded."""
    _refused(parse_anthropic_request, body, text)


def test_anthropic_defaults_and_reads() -> None:
    """Absent fields take their defaults, and every read field lands in the request or the extras."""
    req, extras = parse_anthropic_request({"max_tokens": 3, "messages": [_USER]})
    assert (extras.model, extras.stream, extras.top_p, extras.tool_choice) == ("", None, None, None)
    assert (req.system, req.tools, req.temperature, req.stop_sequences) == (None, (), None, ())
    req, extras = parse_anthropic_request(
        _anthropic(
            system=[{"type": "text", "text": "sys"}],
            tools=[{"name": "f", "input_schema": {"type": "object"}}],
            stream=True,
            top_p=0.5,
            temperature=0.7,
            stop_sequences=["END"],
            tool_choice={"type": "tool", "name": "f"},
        )
    )
    assert req.system == "sys"
    assert (req.tools[0].name, req.tools[0].description, req.tools[0].input_schema_json) == (
        "f",
        "",
        '{"type":"object"}',
    )
    assert (extras.model, extras.stream, extras.top_p, extras.tool_choice) == ("m", True, 0.5, ("tool", "f"))
    assert (req.temperature, req.stop_sequences, req.max_tokens) == (0.7, ("END",), 10)
    assert parse_anthropic_request(_anthropic(system="s"))[0].system == "s"
    for kind in ("auto", "any", "none"):
        assert parse_anthropic_request(_anthropic(tool_choice={"type": kind}))[1].tool_choice == (kind, "")


def test_anthropic_tool_result_content_forms() -> None:
    """A tool result's content may be absent (empty), a string, no blocks or one text block; is_error defaults False."""
    for fields, content in (
        ({}, ""),
        ({"content": "r"}, "r"),
        ({"content": []}, ""),
        ({"content": [{"type": "text", "text": "t"}]}, "t"),
    ):
        result = parse_anthropic_request(_result_block(**fields))[0].messages[2].content[0]
        assert result == ToolResultBlock(tool_use_id="c1", content=content, is_error=False)
    flagged = parse_anthropic_request(_result_block(content="r", is_error=True))[0].messages[2].content[0]
    assert isinstance(flagged, ToolResultBlock)
    assert flagged.is_error is True


def test_anthropic_blocks_land_as_neutral_blocks() -> None:
    """Text and tool_use blocks become TextBlock and ToolUseBlock with compact input JSON."""
    req, _ = parse_anthropic_request(
        _anthropic(
            messages=[
                {"role": "user", "content": [{"type": "text", "text": "q"}]},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "c1", "name": "f", "input": {"a": 1}}]},
            ]
        )
    )
    assert req.messages[0].content == (TextBlock(text="q"),)
    assert req.messages[1].content == (ToolUseBlock(id="c1", name="f", input_json='{"a":1}'),)
    assert req.messages[1].role is Role.ASSISTANT


# --- OpenAI -----------------------------------------------------------------------------------------


def _openai(**fields: object) -> dict[str, object]:
    return {"model": "m", "max_tokens": 10, "messages": [_USER], **fields}


_CALL = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}


def _with_call(**call: object) -> dict[str, object]:
    return _openai(messages=[_USER, {"role": "assistant", "content": None, "tool_calls": [call]}])


def _with_function(**function: object) -> dict[str, object]:
    return _with_call(id="c1", type="function", function=function)


def _tool_reply(**fields: object) -> dict[str, object]:
    reply = {"role": "tool", "tool_call_id": "c1", "content": "r", **fields}
    return _openai(messages=[_USER, {"role": "assistant", "content": None, "tool_calls": [_CALL]}, reply])


_OPENAI_REFUSALS: list[tuple[object, str | tuple[str, ...]]] = [
    (_openai(messages=[{"role": "system", "content": 5}, _USER]), "messages[0].content must be an array, got int"),
    (_openai(messages=[_USER, {"role": "assistant", "content": 5}]), "messages[1].content must be an array, got int"),
    (_tool_reply(content=5), "messages[2].content must be an array, got int"),
    (_openai(tools=[1]), "tools[0] must be an object, got int"),
    ([], "openai request must be an object, got list"),
    (_openai(n=2), ()),
    (_openai(messages={}), "messages must be an array, got dict"),
    (_openai(messages=[1]), "messages[0] must be an object, got int"),
    (
        _openai(messages=[_USER, {"role": "system", "content": "s"}]),
        ("messages[1]",),
    ),
    (
        _openai(messages=[{"role": "developer", "content": "a"}, {"role": "developer", "content": "b"}, _USER]),
        ("messages[1]",),
    ),
    (
        _openai(messages=[{"role": "system", "content": "s", "name": "x"}, _USER]),
        ("messages[0].name",),
    ),
    (
        _openai(
            messages=[{"role": "system", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}]
        ),
        "ChatRequest.messages must not be empty",
    ),
    (
        _openai(messages=[{"role": "system", "content": []}]),
        "ChatRequest.messages must not be empty",
    ),
    (_openai(messages=[{"role": "user", "content": 5}]), "messages[0].content must be an array, got int"),
    (_openai(messages=[{"role": "user", "content": [5]}]), "messages[0].content[0] must be an object, got int"),
    (
        _openai(messages=[{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]),
        "messages[0].content[0].image_url.url must be a string, got NoneType",
    ),
    (
        _openai(messages=[{"role": "user", "content": [{"type": "text", "text": "a", "x": 1}]}]),
        ("messages[0].content[0].x",),
    ),
    (
        _openai(messages=[{"role": "user", "content": [{"type": "text", "text": 1}]}]),
        "messages[0].content[0].text must be a string, got int",
    ),
    (_openai(messages=[{**_USER, "name": "x"}]), ("messages[0].name",)),
    (
        _openai(messages=[_USER, {"role": "assistant", "content": "a", "refusal": None}]),
        ("messages[1].refusal",),
    ),
    (
        _openai(messages=[_USER, {"role": "assistant", "tool_calls": {}}]),
        "messages[1].tool_calls must be an array, got dict",
    ),
    (
        _openai(messages=[_USER, {"role": "assistant", "tool_calls": [1]}]),
        "messages[1].tool_calls[0] must be an object, got int",
    ),
    (_with_call(**_CALL, index=0), ("messages[1].tool_calls[0].index",)),
    (
        _with_call(id="c1", type="custom", function={"name": "f", "arguments": "{}"}),
        ("messages[1].tool_calls[0]",),
    ),
    (_with_call(id="c1", type="function"), "messages[1].tool_calls[0].function must be an object, got NoneType"),
    (
        _with_function(name="f", arguments="{}", strict=True),
        ("messages[1].tool_calls[0].function.strict",),
    ),
    (_with_function(name="f", arguments={}), "messages[1].tool_calls[0].function.arguments must be a string, got dict"),
    (
        _with_call(id=5, type="function", function={"name": "f", "arguments": "{}"}),
        "messages[1].tool_calls[0].id must be a string, got int",
    ),
    (_with_function(arguments="{}"), "messages[1].tool_calls[0].function.name must be a string, got NoneType"),
    (
        _with_function(name="f", arguments="[1]"),
        "messages[1].tool_calls[0].function.arguments is not a JSON object: '[1]'",
    ),
    (_tool_reply(name="x"), ("messages[2].name",)),
    (
        _tool_reply(content=[{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]),
        ("messages[2].content[1:]",),
    ),
    (
        _tool_reply(
            content=[
                {"type": "text", "text": "[tool error]"},
                {"type": "text", "text": "a"},
                {"type": "text", "text": "b"},
            ]
        ),
        ("messages[2].content[1:]",),
    ),
    (_tool_reply(tool_call_id=None), "messages[2].tool_call_id must be a string, got NoneType"),
    (
        _openai(messages=[{"role": "function", "content": "x"}]),
        "messages[0].role 'function' is not system, developer, user, assistant or tool",
    ),
    ({"model": "m", "messages": [_USER]}, ()),
    (_openai(max_tokens=None), ()),
    (_openai(max_tokens=-1), "max_tokens must be a non-negative integer, got -1"),
    (_openai(stop=5), "stop must be an array, got int"),
    (_openai(stop=[5]), "stop[] must be a string, got int"),
    (_openai(model=1), "model must be a string, got int"),
    (_openai(stream=1), "stream must be a boolean"),
    (_openai(top_p="1"), "top_p must be a number, got str"),
    (_openai(temperature="1"), "temperature must be a number, got str"),
    (_openai(tool_choice="bogus"), "tool_choice must be auto, required, none or a function, got 'bogus'"),
    (
        _openai(tool_choice={"type": "function", "function": "f"}),
        "tool_choice must be auto, required, none or a function, got {'type': 'function', 'function': 'f'}",
    ),
    (
        _openai(tool_choice={"type": "x", "function": {"name": "f"}}),
        "tool_choice must be auto, required, none or a function, got {'type': 'x', 'function': {'name': 'f'}}",
    ),
    (
        _openai(tool_choice={"type": "function", "function": {}}),
        "tool_choice.function.name must be a string, got NoneType",
    ),
    (_openai(tools=[{"type": "custom", "function": {"name": "f"}}]), ("tools[0]",)),
    (_openai(tools=[{"type": "function", "function": {"name": "f"}, "x": 1}]), ("tools[0].x",)),
    (_openai(tools=[{"type": "function", "function": "f"}]), "tools[0].function must be an object, got str"),
    (
        _openai(tools=[{"type": "function", "function": {"name": "f", "strict": True}}]),
        (),
    ),
    (_openai(tools=[{"type": "function", "function": {}}]), "tools[0].function.name must be a string, got NoneType"),
    (
        _openai(tools=[{"type": "function", "function": {"name": "f", "description": 1}}]),
        "tools[0].function.description must be a string, got int",
    ),
    (
        _openai(tools=[{"type": "function", "function": {"name": "f", "parameters": []}}]),
        "tools[0].function.parameters must be an object, got list",
    ),
    (_openai(tools={}), "tools must be an array, got dict"),
]


@pytest.mark.parametrize(("body", "text"), _OPENAI_REFUSALS)
def test_openai_refusals_name_the_field(body: object, text: str | tuple[str, ...]) -> None:
    """Each malformed OpenAI request is refused naming the path; each field it does not carry is recorded."""
    _refused(parse_openai_request, body, text)


def test_openai_defaults_and_reads() -> None:
    """Absent fields take their defaults; max_completion_tokens wins over max_tokens; a str stop is one stop."""
    req, extras = parse_openai_request({"max_tokens": 3, "messages": [_USER]})
    assert (extras.model, extras.stream, extras.top_p, extras.tool_choice) == ("", None, None, None)
    assert (req.system, req.tools, req.temperature, req.stop_sequences) == (None, (), None, ())
    assert parse_openai_request(_openai(max_completion_tokens=5))[0].max_tokens == 5
    assert parse_openai_request(_openai(stop="END"))[0].stop_sequences == ("END",)
    assert parse_openai_request(_openai(stop=["a", "b"]))[0].stop_sequences == ("a", "b")
    req, extras = parse_openai_request(
        _openai(
            messages=[{"role": "developer", "content": [{"type": "text", "text": "sys"}]}, _USER],
            model="m2",
            stream=False,
            top_p=1,
            temperature=0.2,
            tools=[{"type": "function", "function": {"name": "f"}}],
        )
    )
    assert req.system == "sys"
    assert (extras.model, extras.stream, extras.top_p) == ("m2", False, 1)
    assert req.temperature == 0.2
    assert (req.tools[0].name, req.tools[0].description, req.tools[0].input_schema_json) == (
        "f",
        "",
        '{"type":"object"}',
    )
    assert parse_openai_request(_openai(messages=[{"role": "system", "content": "s"}, _USER]))[0].system == "s"
    for wire, neutral in (("auto", "auto"), ("required", "any"), ("none", "none")):
        assert parse_openai_request(_openai(tool_choice=wire))[1].tool_choice == (neutral, "")
    named = {"type": "function", "function": {"name": "f"}}
    assert parse_openai_request(_openai(tool_choice=named))[1].tool_choice == ("tool", "f")


def test_openai_calls_and_tool_replies_land_as_neutral_blocks() -> None:
    """Calls become ToolUseBlocks (no id: the deterministic one), replies ToolResultBlocks; the marker flags errors."""
    body = _openai(
        messages=[
            _USER,
            {
                "role": "assistant",
                "content": "thinking",
                "tool_calls": [
                    {"function": {"name": "f", "arguments": '{"a": 1}'}},
                    {"id": "", "type": "function", "function": {"name": "g", "arguments": "{}"}},
                ],
            },
            {"role": "tool", "tool_call_id": deterministic_tool_id("openai", 1, 0), "content": [
                {"type": "text", "text": "[tool error]"}, {"type": "text", "text": "boom"}]},
            {"role": "tool", "tool_call_id": deterministic_tool_id("openai", 1, 1), "content": []},
        ]
    )  # fmt: skip
    req, _ = parse_openai_request(body)
    assistant = req.messages[1]
    assert assistant.content == (
        TextBlock(text="thinking"),
        ToolUseBlock(id=deterministic_tool_id("openai", 1, 0), name="f", input_json='{"a":1}'),
        ToolUseBlock(id=deterministic_tool_id("openai", 1, 1), name="g", input_json="{}"),
    )
    assert req.messages[2].content == (
        ToolResultBlock(tool_use_id=deterministic_tool_id("openai", 1, 0), content="boom", is_error=True),
        ToolResultBlock(tool_use_id=deterministic_tool_id("openai", 1, 1), content="", is_error=False),
    )


def test_a_string_tool_reply_is_never_an_error() -> None:
    """Only the two-part list [marker, text] flags an error: a string reply, even the marker itself, does not."""
    for content, text in (("[tool error]", "[tool error]"), ([{"type": "text", "text": "ok"}], "ok")):
        reply = parse_openai_request(_tool_reply(content=content))[0].messages[2].content[0]
        assert reply == ToolResultBlock(tool_use_id="c1", content=text, is_error=False)
    two = [{"type": "text", "text": "x"}, {"type": "text", "text": "[tool error]"}]
    req, extras = parse_openai_request(_tool_reply(content=two))
    assert req.messages[2].content[0] == ToolResultBlock(tool_use_id="c1", content="x", is_error=False)
    assert extras.untranslated == ("messages[2].content[1:]",)
