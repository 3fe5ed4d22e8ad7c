"""core/responses_api.py: a Responses request rewritten to the Chat Completions body that means the same,
field by field, and every stateful or untranslatable field refused naming it."""

from __future__ import annotations

import json
from typing import Any

import pytest
from openai.types.responses import response_create_params

from routeproof.core.errors import TranslationError
from routeproof.core.responses_api import RESPONSES_FIELDS, Handling, responses_to_chat


def _chat(**fields: Any) -> dict[str, Any]:
    body = {"model": "m", "input": "hi", **fields}
    result: dict[str, Any] = json.loads(responses_to_chat(body).chat_json)
    return result


def test_every_sdk_request_field_has_a_row() -> None:
    """Every field of the installed SDK's ResponseCreateParams has a row, so a new release forces a decision."""
    sdk = set(response_create_params.ResponseCreateParamsBase.__annotations__) | {"stream"}
    assert sdk - set(RESPONSES_FIELDS) == set()
    assert set(RESPONSES_FIELDS) - sdk == set()


def test_string_input_and_instructions() -> None:
    """A string input is one user message; instructions lead as the system message."""
    chat = _chat(instructions="be brief", max_output_tokens=9, temperature=0.2, stream=True)
    assert chat["messages"] == [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]
    assert chat["max_completion_tokens"] == 9
    assert chat["temperature"] == 0.2
    assert chat["stream"] is True


def test_items_become_messages_with_tool_calls_joined() -> None:
    """Message items keep their parts; function_call items join the assistant turn before them; an output
    becomes a tool message for its call."""
    items = [
        {"role": "user", "content": [{"type": "input_text", "text": "q"}, {"type": "input_image", "image_url": "u"}]},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "let me look"}]},
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
        {"type": "function_call", "call_id": "c2", "name": "g", "arguments": '{"a":1}'},
        {"type": "function_call_output", "call_id": "c1", "output": "r1"},
    ]
    messages = _chat(input=items)["messages"]
    assert messages[0]["content"] == [{"type": "text", "text": "q"}, {"type": "image_url", "image_url": {"url": "u"}}]
    assert messages[1]["content"] == [{"type": "text", "text": "let me look"}]
    assert [c["id"] for c in messages[1]["tool_calls"]] == ["c1", "c2"]
    assert messages[1]["tool_calls"][1]["function"] == {"name": "g", "arguments": '{"a":1}'}
    assert messages[2] == {"role": "tool", "tool_call_id": "c1", "content": "r1"}


def test_tools_choice_format_and_reasoning_are_translated() -> None:
    """Function tools, a named tool_choice, text.format json_schema and reasoning.effort map to Chat's fields."""
    tool = {"type": "function", "name": "f", "parameters": {"type": "object"}, "strict": True}
    fmt = {"type": "json_schema", "name": "W", "schema": {"type": "object"}, "strict": True}
    chat = _chat(
        tools=[tool], tool_choice={"type": "function", "name": "f"}, text={"format": fmt},
        reasoning={"effort": "low"}, parallel_tool_calls=False, user="u1", metadata={"k": "v"},
    )  # fmt: skip
    assert chat["tools"] == [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"},
                                                               "strict": True}}]  # fmt: skip
    assert chat["tool_choice"] == {"type": "function", "function": {"name": "f"}}
    assert chat["response_format"] == {"type": "json_schema", "json_schema": {"name": "W", "schema": {"type": "object"},
                                                                              "strict": True}}  # fmt: skip
    assert chat["reasoning_effort"] == "low"
    assert (chat["parallel_tool_calls"], chat["user"], chat["metadata"]) == (False, "u1", {"k": "v"})
    echo = json.loads(responses_to_chat({"model": "m", "input": "x", "tool_choice": "required"}).echo_json)
    assert (echo["tool_choice"], echo["parallel_tool_calls"], echo["tools"]) == ("required", True, [])


STATEFUL = [name for name, (handling, _) in RESPONSES_FIELDS.items() if handling is Handling.STATEFUL]


@pytest.mark.parametrize("field", STATEFUL)
def test_a_stateful_field_that_asks_for_something_is_refused_by_name(field: str) -> None:
    """Each stateful field with a value that asks for server state is refused, naming the field."""
    with pytest.raises(TranslationError, match=repr(field)):
        _chat(**{field: True if field in ("store", "background") else "x"})


@pytest.mark.parametrize(("field", "value"), [("store", False), ("background", False), ("include", []),
                                              ("truncation", "disabled"), ("previous_response_id", None)])  # fmt: skip
def test_idle_stateful_values_are_accepted(field: str, value: object) -> None:
    """A stateful field that asks for nothing (false, empty, disabled, null) is accepted and not forwarded."""
    assert field not in _chat(**{field: value})


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"input": [{"type": "reasoning", "id": "r", "summary": []}]}, "input[0].type"),
        ({"input": [{"type": "item_reference", "id": "x"}]}, "input[0].type"),
        ({"input": [{"role": "user", "content": [{"type": "input_image", "file_id": "f"}]}]}, "file_id"),
        ({"tools": [{"type": "file_search", "vector_store_ids": []}]}, "tools[0].type"),
        ({"tool_choice": {"type": "web_search"}}, "tool_choice"),
        ({"reasoning": {"effort": "low", "summary": "auto"}}, "reasoning.summary"),
        ({"text": {"format": {"type": "grammar"}}}, "text.format.type"),
        ({"frobnicate": 1}, "frobnicate"),
    ],
)
def test_untranslatable_fields_are_refused_by_name(fields: dict[str, Any], named: str) -> None:
    """Items, tools and options only OpenAI's service can honour are refused with their path in the message."""
    with pytest.raises(TranslationError, match=named.replace("[", r"\[").replace("]", r"\]")):
        _chat(**fields)


def test_malformed_bodies_are_named() -> None:
    """A body that is not an object, has no input or a non-string instructions is refused naming it."""
    with pytest.raises(TranslationError, match="must be an object"):
        responses_to_chat([])
    with pytest.raises(TranslationError, match="'input' is required"):
        responses_to_chat({"model": "m"})
    with pytest.raises(TranslationError, match="'instructions' must be a string"):
        responses_to_chat({"model": "m", "input": "x", "instructions": 3})
