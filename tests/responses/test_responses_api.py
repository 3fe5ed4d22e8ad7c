"""core/formats/responses_api.py: a Responses request rewritten to the Chat Completions body that means the same,
field by field, and every stateful or untranslatable field refused naming it."""

from __future__ import annotations

import json
from typing import Any

import pytest
from openai.types.responses import response_create_params

from routeproof.core.errors import TranslationError
from routeproof.core.formats.responses_api import RESPONSES_FIELDS, Handling, responses_to_chat


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


def test_the_gateways_own_reasoning_item_is_left_out_and_named() -> None:
    """A reasoning item this gateway answered with (``rs_rp...``, no encrypted_content), replayed by the
    client, is left out of the Chat rewriting and named; OpenAI's own reasoning item is still refused."""
    own = {"type": "reasoning", "id": "rs_rp0123", "summary": [],
           "content": [{"type": "reasoning_text", "text": "thought"}]}  # fmt: skip
    body = {"model": "m", "input": [{"role": "user", "content": "hi"}, own, own, {"role": "user", "content": "go"}]}
    rewritten = responses_to_chat(body)
    assert rewritten.dropped == ("input[].reasoning",)
    assert "thought" not in rewritten.chat_json
    assert [m["role"] for m in json.loads(rewritten.chat_json)["messages"]] == ["user", "user"]
    with pytest.raises(TranslationError, match=r"input\[1\]\.type"):
        responses_to_chat({**body, "input": [body["input"][0], {**own, "encrypted_content": "gAAA"}]})


def test_malformed_bodies_are_named() -> None:
    """A body that is not an object, has no input or a non-string instructions is refused naming it."""
    with pytest.raises(TranslationError, match="must be an object"):
        responses_to_chat([])
    with pytest.raises(TranslationError, match="'input' is required"):
        responses_to_chat({"model": "m"})
    with pytest.raises(TranslationError, match="'instructions' must be a string"):
        responses_to_chat({"model": "m", "input": "x", "instructions": 3})


def test_the_echo_repeats_the_request_settings_with_the_api_defaults() -> None:
    """A response echoes instructions, tools, tool_choice, sampling, metadata, cap, text, reasoning and
    user as sent; a bare request echoes the API's defaults."""
    tool = {"type": "function", "name": "f", "parameters": {"type": "object"}, "strict": True}
    full = {
        "model": "m", "input": "x", "instructions": "be brief", "tools": [tool],
        "tool_choice": {"type": "function", "name": "f"}, "temperature": 0.5, "top_p": 0.9,
        "parallel_tool_calls": False, "metadata": {"k": "v"}, "max_output_tokens": 7,
        "text": {"format": {"type": "json_object"}}, "reasoning": {"effort": "low"}, "user": "u",
    }  # fmt: skip
    assert json.loads(responses_to_chat(full).echo_json) == {
        "instructions": "be brief", "tools": [tool], "tool_choice": {"type": "function", "name": "f"},
        "temperature": 0.5, "top_p": 0.9, "parallel_tool_calls": False, "metadata": {"k": "v"},
        "max_output_tokens": 7, "text": {"format": {"type": "json_object"}}, "reasoning": {"effort": "low"},
        "user": "u",
    }  # fmt: skip
    assert json.loads(responses_to_chat({"model": "m", "input": "x"}).echo_json) == {
        "instructions": None, "tools": [], "tool_choice": "auto", "temperature": None, "top_p": None,
        "parallel_tool_calls": True, "metadata": None, "max_output_tokens": None,
        "text": {"format": {"type": "text"}}, "reasoning": None, "user": None,
    }  # fmt: skip


def test_every_content_part_kind() -> None:
    """Refusal, image (detail kept unless auto), file data and assistant output text map to Chat parts."""
    parts = [
        {"type": "input_image", "image_url": "u", "detail": "high"},
        {"type": "input_image", "image_url": "v", "detail": "auto"},
        {"type": "input_file", "file_data": "data:application/pdf;base64,AA==", "filename": "a.pdf"},
    ]
    items = [
        {"role": "user", "content": parts},
        {
            "role": "assistant",
            "content": [{"type": "output_text", "text": "t", "annotations": []}, {"type": "refusal", "refusal": "no"}],
        },
        {"role": "developer", "content": "d"},
    ]
    messages = _chat(input=items)["messages"]
    assert messages[0]["content"] == [
        {"type": "image_url", "image_url": {"url": "u", "detail": "high"}},
        {"type": "image_url", "image_url": {"url": "v"}},
        {"type": "file", "file": {"file_data": "data:application/pdf;base64,AA==", "filename": "a.pdf"}},
    ]
    assert messages[1]["content"] == [{"type": "text", "text": "t"}, {"type": "refusal", "refusal": "no"}]
    assert messages[2] == {"role": "developer", "content": "d"}


def test_a_function_call_without_an_assistant_turn_opens_one_and_list_outputs_keep_their_parts() -> None:
    """A function_call first in the input opens an assistant turn of its own; a list output keeps its parts."""
    items = [
        {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c", "output": [{"type": "input_text", "text": "r"}]},
    ]
    messages = _chat(input=items)["messages"]
    assert messages[0] == {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}  # fmt: skip
    assert messages[1] == {"role": "tool", "tool_call_id": "c", "content": [{"type": "text", "text": "r"}]}


def test_format_verbosity_and_tool_details() -> None:
    """json_object, text (nothing sent), verbosity, a schema description and a tool description map through."""
    assert _chat(text={"format": {"type": "json_object"}})["response_format"] == {"type": "json_object"}
    plain = _chat(text={"format": {"type": "text"}, "verbosity": "low"})
    assert "response_format" not in plain
    assert plain["verbosity"] == "low"
    fmt = {"type": "json_schema", "name": "W", "description": "d", "schema": {}}
    assert _chat(text={"format": fmt})["response_format"]["json_schema"] == {"name": "W", "description": "d",
                                                                             "schema": {}}  # fmt: skip
    tool = {"type": "function", "name": "f", "description": "does f"}
    assert _chat(tools=[tool])["tools"] == [{"type": "function", "function": {"name": "f", "description": "does f"}}]
    assert "reasoning_effort" not in _chat(reasoning={"effort": None})
    assert _chat(tool_choice="none")["tool_choice"] == "none"


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (
            {"input": [{"role": "user", "content": [{"type": "input_text", "text": 3}]}]},
            "input[0].content[0].text must be a string, got 3",
        ),
        (
            {"input": [{"role": "assistant", "content": [{"type": "output_text", "text": "t", "annotations": [1]}]}]},
            "'input[0].content[0].annotations' (citations",
        ),
        (
            {"input": [{"role": "user", "content": [{"type": "input_file", "file_url": "http://x"}]}]},
            "'input[0].content[0].file_url' names a file",
        ),
        (
            {"input": [{"role": "user", "content": [{"type": "input_file", "file_id": "f"}]}]},
            "'input[0].content[0].file_id' names a file",
        ),
        (
            {"input": [{"role": "user", "content": [{"type": "input_audio"}]}]},
            "'input[0].content[0].type' 'input_audio' has no Chat Completions equivalent",
        ),
        ({"input": [{"role": "tool", "content": "x"}]}, "input[0].role must be user, assistant, system or developer"),
        ({"input": [{"type": "compaction"}]}, "'input[0].type' 'compaction' needs state"),
        ({"input": [{"type": "web_search_call"}]}, "'input[0].type' 'web_search_call' is a hosted tool's item"),
        ({"input": 3}, "input must be an array, got 3"),
        ({"input": [3]}, "input[0] must be an object, got 3"),
        ({"tools": [{"type": "function", "name": "f", "output_schema": {}}]}, "'tools[0].output_schema' has no"),
        ({"text": {"format": {"type": "text"}, "stop": 1}}, "'text.stop' has no Chat Completions equivalent"),
        ({"reasoning": {"generate_summary": "auto"}}, "'reasoning.generate_summary' (a reasoning summary"),
        ({"reasoning": {"effort": "low", "budget": 3}}, "'reasoning.budget' has no Chat Completions equivalent"),
        ({"temperature": float("nan")}, "responses request: "),
    ],
)
def test_refusal_messages_name_the_path(fields: dict[str, Any], message: str) -> None:
    """Each refusal and malformed value names its path (and the value) in the message."""
    with pytest.raises(TranslationError) as caught:
        _chat(**fields)
    assert message in str(caught.value)


def _refusal(**fields: Any) -> str:
    with pytest.raises(TranslationError) as caught:
        _chat(**fields)
    return str(caught.value)


def test_model_logprobs_and_accepted_values() -> None:
    """model is carried (empty when absent); top_logprobs asks for logprobs; auto, system and null
    reasoning summaries are accepted as they are."""
    assert _chat(model="gpt-x")["model"] == "gpt-x"
    assert json.loads(responses_to_chat({"input": "x"}).chat_json)["model"] == ""
    chat = _chat(top_logprobs=3)
    assert (chat["logprobs"], chat["top_logprobs"]) == (True, 3)
    assert "logprobs" not in _chat()
    assert _chat(tool_choice="auto")["tool_choice"] == "auto"
    assert _chat(input=[{"role": "system", "content": "s"}])["messages"] == [{"role": "system", "content": "s"}]
    assert _chat(reasoning={"effort": "low", "summary": None, "generate_summary": None})["reasoning_effort"] == "low"


def test_a_function_call_joins_only_the_turn_right_before_it() -> None:
    """A function_call after a user turn opens a new assistant turn, even when an earlier one exists."""
    items = [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "b"},
        {"role": "user", "content": "c"},
        {"type": "function_call", "call_id": "k", "name": "f", "arguments": "{}"},
    ]
    messages = _chat(input=items)["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant"]
    assert "tool_calls" not in messages[1]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"tool_choice": 3}, "tool_choice must be an object, got 3"),
        ({"text": 3}, "text must be an object, got 3"),
        ({"text": {"format": 3}}, "text.format must be an object, got 3"),
        ({"reasoning": 3}, "reasoning must be an object, got 3"),
        ({"tools": "x"}, "tools must be an array, got 'x'"),
        ({"tools": [3]}, "tools[0] must be an object, got 3"),
        ({"input": [{"role": "user", "content": 3}]}, "input[0].content must be an array, got 3"),
        ({"input": [{"role": "user", "content": [3]}]}, "input[0].content[0] must be an object, got 3"),
        (
            {"input": [{"type": "function_call_output", "call_id": "c", "output": [3]}]},
            "input[0].output[0] must be an object, got 3",
        ),
        (
            {"input": [{"type": "function_call_output", "call_id": "c", "output": None}]},
            "input[0].output must be an array, got None",
        ),
        ({"input": [{"type": "reasoning"}]}, "'input[0].type' 'reasoning' needs state kept by OpenAI"),
        ({"input": [{"type": "item_reference"}]}, "'input[0].type' 'item_reference' needs state kept by OpenAI"),
        (
            {"input": [{"role": "user", "content": [{"type": "input_image", "file_id": "f"}]}]},
            "'input[0].content[0].file_id' names a file stored at OpenAI; send image_url (a data or http URL)",
        ),
        (
            {"input": [{"role": "user", "content": [{"type": "input_file", "file_url": "u"}]}]},
            "'input[0].content[0].file_url' names a file OpenAI's service fetches; send file_data (base64)",
        ),
        (
            {"input": [{"role": "user", "content": [{"type": "output_text", "text": "t", "annotations": [1]}]}]},
            "'input[0].content[0].annotations' (citations of a hosted tool) has no Chat Completions equivalent",
        ),
        ({"tools": [{"type": "web_search"}]}, "'tools[0].type' 'web_search' is a tool OpenAI's service runs; needs"),
        (
            {"tool_choice": {"type": "web_search"}},
            "'tool_choice' {'type': 'web_search'} chooses a hosted tool or a tool set; only function tools are carried",
        ),
        (
            {"text": {"format": {"type": "grammar"}}},
            "'text.format.type' 'grammar' is not text, json_object or json_schema",
        ),
        (
            {"reasoning": {"summary": "auto"}},
            "'reasoning.summary' (a reasoning summary OpenAI's service writes) has no equivalent",
        ),
        (
            {"tools": [{"type": "function", "name": "f", "defer_loading": True}]},
            "'tools[0].defer_loading' has no Chat Completions equivalent",
        ),
        ({"frobnicate": 1}, "'frobnicate' is not a field of the Responses API this gateway knows"),
    ],
)
def test_messages_in_full(fields: dict[str, Any], message: str) -> None:
    """Each malformed value and refusal is reported with its whole message: the path, the value, the reason."""
    assert message in _refusal(**fields)


def test_body_level_messages_exactly() -> None:
    """A non-object body and a missing input are named exactly."""
    with pytest.raises(TranslationError) as not_object:
        responses_to_chat(3)
    assert str(not_object.value) == "responses request must be an object, got 3"
    with pytest.raises(TranslationError) as no_input:
        responses_to_chat({"model": "m"})
    assert str(no_input.value) == "'input' is required"


def test_a_stateful_refusal_says_why_and_what_to_do() -> None:
    """A stateful field's refusal names it, says which state it needs, and how to send the request instead."""
    assert _refusal(previous_response_id="resp_1") == (
        "'previous_response_id' needs state kept by OpenAI's Responses service, which no provider behind this "
        "route keeps (needs the stored previous response); set it to null or leave it out"
    )
