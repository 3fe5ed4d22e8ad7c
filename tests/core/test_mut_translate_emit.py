"""Emitting wire bodies: whole Anthropic, OpenAI and Bedrock bodies written out by hand from the APIs' docs."""

from __future__ import annotations

import re
from typing import Any

import pytest

from routeproof.core.errors import TranslationError
from routeproof.core.formats.translate_common import WireExtras
from routeproof.core.formats.translate_emit import _to_anthropic, _to_bedrock, _to_openai
from routeproof.core.types import (
    ChatRequest,
    Message,
    Role,
    TextBlock,
    ToolDefinition,
    ToolResultBlock,
    ToolUseBlock,
)

_RICH = ChatRequest(
    messages=(
        Message(role=Role.USER, content=(TextBlock(text="q"),)),
        Message(
            role=Role.ASSISTANT,
            content=(
                TextBlock(text="let me"),
                ToolUseBlock(id="c1", name="f", input_json='{"a": 1}'),
                ToolUseBlock(id="c2", name="g", input_json="{}"),
            ),
        ),
        Message(
            role=Role.USER,
            content=(
                TextBlock(text="after"),
                ToolResultBlock(tool_use_id="c1", content="r1"),
                ToolResultBlock(tool_use_id="c2", content="bad", is_error=True),
            ),
        ),
    ),
    max_tokens=77,
    system="sys",
    tools=(
        ToolDefinition(name="f", description="does f", input_schema_json='{"type": "object"}'),
        ToolDefinition(name="g", description="", input_schema_json="{}"),
    ),
    temperature=0.3,
    stop_sequences=("END",),
    top_p=0.9,
    tool_choice=("tool", "f"),
)
_EXTRAS = WireExtras(model="m", stream=True, top_p=0.9, tool_choice=("tool", "f"))
_MINIMAL = ChatRequest(messages=(Message.user("hi"),), max_tokens=5)


def test_anthropic_body_of_a_rich_request() -> None:
    """Every field lands in the Messages body; a user turn's tool results come before its text."""
    assert _to_anthropic(_RICH, _EXTRAS) == {
        "model": "m",
        "max_tokens": 77,
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "q"}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "let me"},
                    {"type": "tool_use", "id": "c1", "name": "f", "input": {"a": 1}},
                    {"type": "tool_use", "id": "c2", "name": "g", "input": {}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "c1", "content": "r1"},
                    {"type": "tool_result", "tool_use_id": "c2", "content": "bad", "is_error": True},
                    {"type": "text", "text": "after"},
                ],
            },
        ],
        "system": "sys",
        "tools": [
            {"name": "f", "description": "does f", "input_schema": {"type": "object"}},
            {"name": "g", "input_schema": {}},
        ],
        "temperature": 0.3,
        "top_p": 0.9,
        "stop_sequences": ["END"],
        "stream": True,
        "tool_choice": {"type": "tool", "name": "f"},
    }


def test_anthropic_body_of_a_minimal_request() -> None:
    """Absent optional fields are left out; an assistant turn keeps its block order; consecutive turns merge."""
    request = ChatRequest(
        messages=(Message.user("a"), Message.user("b"), Message.assistant("c")),
        max_tokens=5,
    )
    assert _to_anthropic(request, WireExtras(model="m", stream=False, tool_choice=("any", ""))) == {
        "model": "m",
        "max_tokens": 5,
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "c"}]},
        ],
        "stream": False,
        "tool_choice": {"type": "any"},
    }
    assert _to_anthropic(_MINIMAL, WireExtras()) == {
        "model": "",
        "max_tokens": 5,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
    }


def test_openai_body_of_a_rich_request() -> None:
    """One assistant message carries text and calls; tool results become tool messages before the user text."""
    assert _to_openai(_RICH, WireExtras(model="gpt-4o", stream=True, top_p=0.9, tool_choice=("tool", "f"))) == {
        "model": "gpt-4o",
        "messages": [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "q"},
            {
                "role": "assistant",
                "content": "let me",
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a":1}'}},
                    {"id": "c2", "type": "function", "function": {"name": "g", "arguments": "{}"}},
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "r1"},
            {
                "role": "tool",
                "tool_call_id": "c2",
                "content": [{"type": "text", "text": "[tool error]"}, {"type": "text", "text": "bad"}],
            },
            {"role": "user", "content": "after"},
        ],
        "max_completion_tokens": 77,
        "tools": [
            {"type": "function", "function": {"name": "f", "description": "does f", "parameters": {"type": "object"}}},
            {"type": "function", "function": {"name": "g", "parameters": {}}},
        ],
        "temperature": 0.3,
        "top_p": 0.9,
        "stop": ["END"],
        "stream": True,
        "stream_options": {"include_usage": True},
        "tool_choice": {"type": "function", "function": {"name": "f"}},
    }


def test_openai_body_of_a_minimal_request_and_its_variants() -> None:
    """No stream options unless streaming; several texts become parts; a call-only turn has null content."""
    request = ChatRequest(
        messages=(
            Message.user("a"),
            Message.user("b"),
            Message(role=Role.ASSISTANT, content=(ToolUseBlock(id="c1", name="f"),)),
            Message(role=Role.USER, content=(ToolResultBlock(tool_use_id="c1", content="r"),)),
            Message.assistant("done"),
        ),
        max_tokens=5,
    )
    assert _to_openai(request, WireExtras(model="o3-mini", stream=False, tool_choice=("any", ""))) == {
        "model": "o3-mini",
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "r"},
            {"role": "assistant", "content": "done"},
        ],
        "max_completion_tokens": 5,
        "stream": False,
        "tool_choice": "required",
    }
    assert _to_openai(_MINIMAL, WireExtras()) == {
        "model": "",
        "messages": [{"role": "user", "content": "hi"}],
        "max_completion_tokens": 5,
    }


@pytest.mark.parametrize(("kind", "wire"), [("auto", "auto"), ("any", "required"), ("none", "none")])
def test_openai_tool_choice_names(kind: str, wire: str) -> None:
    """Anthropic's tool_choice kinds map to OpenAI's names (any is required)."""
    assert _to_openai(_MINIMAL, WireExtras(tool_choice=(kind, "")))["tool_choice"] == wire


def test_openai_system_role_follows_the_model() -> None:
    """An o-series model takes its system prompt in the developer role; others in the system role."""
    request = ChatRequest(messages=(Message.user("hi"),), system="s")
    assert _to_openai(request, WireExtras(model="o1"))["messages"][0] == {"role": "developer", "content": "s"}
    assert _to_openai(request, WireExtras(model="gpt-4o"))["messages"][0] == {"role": "system", "content": "s"}


def test_openai_refuses_blocks_in_the_wrong_turn() -> None:
    """A tool_use in a user turn or a tool_result in an assistant turn is refused, naming the id."""
    in_user = ChatRequest(messages=(Message(role=Role.USER, content=(ToolUseBlock(id="c1", name="f"),)),))
    with pytest.raises(TranslationError, match=r"^tool_use 'c1' in a user turn has no OpenAI equivalent$"):
        _to_openai(in_user, WireExtras())
    in_assistant = ChatRequest(
        messages=(
            Message.user("q"),
            Message(role=Role.ASSISTANT, content=(ToolResultBlock(tool_use_id="c1", content="r"),)),
        )
    )
    with pytest.raises(TranslationError, match=r"^tool_result 'c1' in an assistant turn has no OpenAI equivalent$"):
        _to_openai(in_assistant, WireExtras())


def _with_bad_input() -> ChatRequest:
    return ChatRequest(
        messages=(
            Message.user("q"),
            Message(role=Role.ASSISTANT, content=(ToolUseBlock(id="c1", name="f", input_json="[1]"),)),
        )
    )


def _with_bad_schema() -> ChatRequest:
    return ChatRequest(
        messages=(Message.user("q"),), tools=(ToolDefinition(name="f", description="", input_schema_json="[]"),)
    )


@pytest.mark.parametrize(
    "emit", [lambda r: _to_anthropic(r, WireExtras()), lambda r: _to_openai(r, WireExtras()), _to_bedrock]
)
def test_non_object_arguments_and_schemas_are_refused_by_name(emit: Any) -> None:
    """Tool input that is not a JSON object names the tool_use; a bad schema names the tool."""
    with pytest.raises(
        TranslationError, match="^" + re.escape("tool_use 'c1'.input is not a JSON object: '[1]'") + "$"
    ):
        emit(_with_bad_input())
    with pytest.raises(
        TranslationError, match="^" + re.escape("tool 'f' input schema is not a JSON object: '[]'") + "$"
    ):
        emit(_with_bad_schema())


def test_bedrock_body_of_a_rich_request() -> None:
    """Every field lands in the Converse body, blocks in their order, error results with status error."""
    assert _to_bedrock(_RICH) == {
        "messages": [
            {"role": "user", "content": [{"text": "q"}]},
            {
                "role": "assistant",
                "content": [
                    {"text": "let me"},
                    {"toolUse": {"toolUseId": "c1", "name": "f", "input": {"a": 1}}},
                    {"toolUse": {"toolUseId": "c2", "name": "g", "input": {}}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"text": "after"},
                    {"toolResult": {"toolUseId": "c1", "content": [{"text": "r1"}], "status": "success"}},
                    {"toolResult": {"toolUseId": "c2", "content": [{"text": "bad"}], "status": "error"}},
                ],
            },
        ],
        "inferenceConfig": {"maxTokens": 77, "temperature": 0.3, "stopSequences": ["END"], "topP": 0.9},
        "system": [{"text": "sys"}],
        "toolConfig": {
            "tools": [
                {"toolSpec": {"name": "f", "description": "does f", "inputSchema": {"json": {"type": "object"}}}},
                {"toolSpec": {"name": "g", "inputSchema": {"json": {}}}},
            ],
            "toolChoice": {"tool": {"name": "f"}},
        },
    }


def test_bedrock_minimal_body_and_tool_choice_kinds() -> None:
    """A minimal request has only messages and maxTokens; auto/any become {kind: {}}, none is left out."""
    assert _to_bedrock(ChatRequest(messages=(Message.user("a"), Message.user("b")), max_tokens=5)) == {
        "messages": [{"role": "user", "content": [{"text": "a"}, {"text": "b"}]}],
        "inferenceConfig": {"maxTokens": 5},
    }
    tool = (ToolDefinition(name="f", description="", input_schema_json="{}"),)
    kinds: tuple[tuple[str, dict[str, Any]], ...] = (("auto", {"auto": {}}), ("any", {"any": {}}))
    for kind, expected in kinds:
        config = _to_bedrock(ChatRequest(messages=(Message.user("q"),), tools=tool, tool_choice=(kind, "")))[
            "toolConfig"
        ]
        assert config["toolChoice"] == expected
    none = _to_bedrock(ChatRequest(messages=(Message.user("q"),), tools=tool, tool_choice=("none", "")))["toolConfig"]
    assert "toolChoice" not in none
    no_choice = _to_bedrock(ChatRequest(messages=(Message.user("q"),), tools=tool))["toolConfig"]
    assert "toolChoice" not in no_choice
    without_tools = _to_bedrock(ChatRequest(messages=(Message.user("q"),), tool_choice=("auto", "")))
    assert "toolConfig" not in without_tools
