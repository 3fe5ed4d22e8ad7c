"""Anthropic <-> OpenAI translation: the round-trip laws and one example per rule."""

from __future__ import annotations

import contextlib
import dataclasses
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from routeproof.core.capabilities import ModelCapabilities
from routeproof.core.formats.translate import (
    ANTHROPIC_TO_OPENAI_STOP,
    IS_ERROR_MARKER,
    OPENAI_TO_ANTHROPIC_STOP,
    anthropic_request_to_openai,
    anthropic_response_to_openai,
    finish_reason_for,
    openai_request_to_anthropic,
    openai_response_to_anthropic,
    parse_anthropic_request,
    parse_openai_request,
    read_anthropic_request,
    read_openai_request,
    request_to_anthropic,
    request_to_bedrock_converse,
    request_to_openai,
)
from routeproof.core.formats.wire import deterministic_tool_id
from routeproof.core.types import (
    ChatRequest,
    FinishReason,
    Message,
    Role,
    TextBlock,
    ToolDefinition,
    ToolResultBlock,
    ToolUseBlock,
)
from routeproof.errors import TranslationError
from tests.core.strategies_format import anthropic_requests, json_values, openai_requests


def _tool_args(body: dict[str, Any]) -> list[Any]:
    """Every tool call's arguments in an OpenAI body, parsed."""
    return [
        json.loads(call["function"]["arguments"])
        for message in body["messages"]
        for call in message.get("tool_calls", [])
    ]


@given(anthropic_requests())
def test_anthropic_openai_anthropic_round_trip_is_exact(body: dict[str, Any]) -> None:
    """from_openai(to_openai(m)) == m for canonical Anthropic requests, tool args JSON-equal."""
    there = anthropic_request_to_openai(body)
    back = openai_request_to_anthropic(there)
    assert back == body
    inputs = [b["input"] for m in body["messages"] for b in m["content"] if b["type"] == "tool_use"]
    assert _tool_args(there) == inputs


@given(openai_requests())
def test_openai_anthropic_openai_round_trip_is_exact(body: dict[str, Any]) -> None:
    """to_openai(from_openai(o)) == o for canonical OpenAI requests, incl. developer role and tool messages."""
    assert anthropic_request_to_openai(openai_request_to_anthropic(body)) == body


@given(anthropic_requests())
def test_neutral_request_survives_both_wire_formats(body: dict[str, Any]) -> None:
    """ChatRequest -> Anthropic wire -> ChatRequest and -> OpenAI wire -> ChatRequest are identities."""
    req, extras = parse_anthropic_request(body)
    assert parse_anthropic_request(request_to_anthropic(req, extras.model))[0] == req
    assert parse_openai_request(request_to_openai(req, extras.model))[0] == req


# --- example tests, one per rule, on payloads in each provider's documented shape ---------------

WEATHER_TOOL = {
    "name": "get_weather",
    "description": "Get the current weather in a given location",
    "input_schema": {"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]},
}

PARALLEL = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 1024,
    "system": "You are a weather bot.",
    "tools": [WEATHER_TOOL],
    "messages": [
        {"role": "user", "content": [{"type": "text", "text": "Weather in Paris and Tōkyō?"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Checking both."},
                {"type": "tool_use", "id": "toolu_01A", "name": "get_weather", "input": {"location": "Paris"}},
                {"type": "tool_use", "id": "toolu_01B", "name": "get_weather", "input": {"location": "Tōkyō"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_01A", "content": "18°C"},
                {"type": "tool_result", "tool_use_id": "toolu_01B", "content": "24°C"},
            ],
        },
    ],
}


def test_system_prompt_becomes_a_system_message() -> None:
    """A top-level Anthropic system prompt is the first OpenAI message, role system."""
    assert anthropic_request_to_openai(PARALLEL)["messages"][0] == {
        "role": "system",
        "content": "You are a weather bot.",
    }


def test_o_series_models_get_developer_role_and_max_completion_tokens() -> None:
    """For o1/o3/o4 models the system prompt is a developer message and max_tokens is max_completion_tokens."""
    body = request_to_openai(ChatRequest(messages=(Message.user("hi"),), system="terse", max_tokens=9), "o3-mini")
    assert body["messages"][0] == {"role": "developer", "content": "terse"}
    assert body["max_completion_tokens"] == 9
    assert "max_tokens" not in body
    assert request_to_openai(ChatRequest(messages=(Message.user("hi"),), system="x"), "gpt-4o")["messages"][0][
        "role"
    ] == ("system")


def test_tool_definitions_map_input_schema_to_function_parameters() -> None:
    """Anthropic tools[].input_schema is OpenAI tools[].function.parameters, with name and description."""
    assert anthropic_request_to_openai(PARALLEL)["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Get the current weather in a given location",
                "parameters": WEATHER_TOOL["input_schema"],
            },
        }
    ]


def test_tool_use_arguments_are_a_json_string_not_dropped() -> None:
    """tool_use.input becomes function.arguments as the JSON text of the same object (never "{}")."""
    assistant = anthropic_request_to_openai(PARALLEL)["messages"][2]
    assert assistant["content"] == "Checking both."
    args = [json.loads(c["function"]["arguments"]) for c in assistant["tool_calls"]]
    assert args == [{"location": "Paris"}, {"location": "Tōkyō"}]
    assert [c["id"] for c in assistant["tool_calls"]] == ["toolu_01A", "toolu_01B"]


def test_parallel_tool_results_become_tool_messages_in_order() -> None:
    """N tool_result blocks in one user turn are N tool messages, in order, each with its tool_call_id."""
    tail = anthropic_request_to_openai(PARALLEL)["messages"][3:]
    assert tail == [
        {"role": "tool", "tool_call_id": "toolu_01A", "content": "18°C"},
        {"role": "tool", "tool_call_id": "toolu_01B", "content": "24°C"},
    ]


def test_tool_messages_regroup_into_one_user_turn_with_following_text() -> None:
    """OpenAI tool, tool, user is one Anthropic user turn: two tool_result blocks, then the text."""
    body = {
        "model": "gpt-4o",
        "max_tokens": 50,
        "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "a", "arguments": "{}"}},
                {"id": "call_2", "type": "function", "function": {"name": "b", "arguments": "{\"x\": 1}"}},
            ]},
            {"role": "tool", "tool_call_id": "call_1", "content": "A"},
            {"role": "tool", "tool_call_id": "call_2", "content": "B"},
            {"role": "user", "content": "and now?"},
        ],
    }  # fmt: skip
    messages = openai_request_to_anthropic(body)["messages"]
    assert len(messages) == 3
    assert messages[1]["content"] == [
        {"type": "tool_use", "id": "call_1", "name": "a", "input": {}},
        {"type": "tool_use", "id": "call_2", "name": "b", "input": {"x": 1}},
    ]
    assert messages[2] == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "call_1", "content": "A"},
            {"type": "tool_result", "tool_use_id": "call_2", "content": "B"},
            {"type": "text", "text": "and now?"},
        ],
    }


def test_an_assistant_turn_is_one_openai_message_with_every_tool_call_and_results_right_after() -> None:
    """[tool_use A, text, tool_use B] is one assistant message (text, calls A and B), then tool messages A, B."""
    turn = Message(
        role=Role.ASSISTANT,
        content=(
            ToolUseBlock(id="A", name="f", input_json='{"k":[1]}'),
            TextBlock(text="between"),
            ToolUseBlock(id="B", name="g"),
        ),
    )
    results = Message(
        role=Role.USER,
        content=(
            TextBlock(text="and?"),
            ToolResultBlock(tool_use_id="A", content="a"),
            ToolResultBlock(tool_use_id="B", content="b"),
        ),
    )
    req = ChatRequest(messages=(Message.user("q"), turn, results))
    body = request_to_openai(req, "gpt-4o")
    assert [(m["role"], m.get("content"), [c["id"] for c in m.get("tool_calls", [])]) for m in body["messages"]] == [
        ("user", "q", []),
        ("assistant", "between", ["A", "B"]),
        ("tool", "a", []),
        ("tool", "b", []),
        ("user", "and?", []),
    ]
    canonical = ChatRequest(
        messages=(
            Message.user("q"),
            Message(role=Role.ASSISTANT, content=(turn.content[1], turn.content[0], turn.content[2])),
            Message(role=Role.USER, content=(*results.content[1:], results.content[0])),
        )
    )
    assert parse_openai_request(body)[0] == canonical  # the documented normalisation: text first, results first


def test_is_error_tool_result_travels_to_openai_and_comes_back() -> None:
    """An is_error tool result is the content parts [IS_ERROR_MARKER, text] and parses back as is_error."""
    call = Message(role=Role.ASSISTANT, content=(ToolUseBlock(id="t", name="f"),))
    failed = Message(role=Role.USER, content=(ToolResultBlock(tool_use_id="t", content="boom", is_error=True),))
    req = ChatRequest(messages=(Message.user("q"), call, failed))
    body = request_to_openai(req, "gpt-4o")
    assert body["messages"][-1] == {
        "role": "tool",
        "tool_call_id": "t",
        "content": [{"type": "text", "text": IS_ERROR_MARKER}, {"type": "text", "text": "boom"}],
    }
    assert parse_openai_request(body)[0] == req
    plain = {"role": "tool", "tool_call_id": "t", "content": IS_ERROR_MARKER}  # a plain string is never an error
    assert parse_openai_request({**body, "messages": [*body["messages"][:-1], plain]})[0].messages[-1].content == (
        ToolResultBlock(tool_use_id="t", content=IS_ERROR_MARKER),
    )


def test_openai_max_tokens_field_and_roles_follow_the_capabilities() -> None:
    """gpt-5.x and OpenAI's default get max_completion_tokens; a compatible server's capabilities keep max_tokens."""
    req = ChatRequest(messages=(Message.user("hi"),), system="s", max_tokens=7)
    body = request_to_openai(req, "gpt-5.4-mini")
    assert body["max_completion_tokens"] == 7
    assert "max_tokens" not in body
    compatible = request_to_openai(req, "llama3", capabilities=ModelCapabilities())
    assert compatible["max_tokens"] == 7
    assert "max_completion_tokens" not in compatible
    assert compatible["messages"][0] == {"role": "system", "content": "s"}
    developer = request_to_openai(req, "x", capabilities=ModelCapabilities(system_role="developer"))
    assert developer["messages"][0]["role"] == "developer"


def test_missing_openai_tool_call_id_is_regenerated_with_blake3() -> None:
    """A tool call without an id gets blake3(provider, message index, tool index), the same every time."""
    body = {
        "model": "llama3",
        "max_tokens": 5,
        "messages": [
            {"role": "user", "content": "x"},
            {"role": "assistant", "content": None,
             "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        ],
    }  # fmt: skip
    first = openai_request_to_anthropic(body)["messages"][1]["content"][0]["id"]
    assert (
        first
        == deterministic_tool_id("openai", 1, 0)
        == openai_request_to_anthropic(body)["messages"][1]["content"][0]["id"]
    )
    assert first != deterministic_tool_id("openai", 1, 1)


def test_stop_reason_table() -> None:
    """end_turn/stop, max_tokens/length, tool_use/tool_calls, stop_sequence/stop, refusal/content_filter,
    model_context_window_exceeded/length."""
    assert dict(ANTHROPIC_TO_OPENAI_STOP) == {
        "end_turn": "stop", "max_tokens": "length", "tool_use": "tool_calls",
        "stop_sequence": "stop", "refusal": "content_filter", "model_context_window_exceeded": "length",
    }  # fmt: skip
    for anthropic, openai in ANTHROPIC_TO_OPENAI_STOP.items():
        assert finish_reason_for(anthropic) is finish_reason_for(openai)
        assert finish_reason_for(OPENAI_TO_ANTHROPIC_STOP[openai]) is finish_reason_for(anthropic)
    assert finish_reason_for("tool_use") is FinishReason.TOOL_CALLS
    assert finish_reason_for("length") is FinishReason.LENGTH
    assert finish_reason_for("refusal") is FinishReason.CONTENT_FILTER
    assert finish_reason_for("pause_turn") is FinishReason.OTHER


def test_fields_that_used_to_be_refused_are_carried() -> None:
    """metadata.user_id becomes OpenAI's user; a cached system block list becomes system text parts."""
    assert anthropic_request_to_openai({**PARALLEL, "metadata": {"user_id": "u"}})["user"] == "u"
    cached = {**PARALLEL, "system": [{"type": "text", "text": "s", "cache_control": {"type": "ephemeral"}}]}
    assert anthropic_request_to_openai(cached)["messages"][0]["content"] == [{"type": "text", "text": "s"}]


def test_malformed_image_sources_raise_naming_the_path() -> None:
    """An image block without a source type, or an image_url part without a url, raises naming the path."""
    body = {**PARALLEL, "messages": [{"role": "user", "content": [{"type": "image", "source": {}}]}]}
    with pytest.raises(TranslationError, match=r"messages\[0\]\.content\[0\]\.source\.type None"):
        anthropic_request_to_openai(body)
    image = {
        "model": "m",
        "max_tokens": 1,
        "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}],
    }
    with pytest.raises(TranslationError, match=r"image_url\.url must be a string"):
        openai_request_to_anthropic(image)


def test_a_mid_conversation_system_message_is_recorded_not_carried() -> None:
    """An OpenAI system message after the first turn is not carried: its path is recorded, the rest parses."""
    late = {
        "model": "m",
        "max_tokens": 1,
        "messages": [{"role": "user", "content": "a"}, {"role": "system", "content": "b"}],
    }
    req, extras = parse_openai_request(late)
    assert (req.system, extras.untranslated) == (None, ("messages[1]",))


def test_invalid_openai_arguments_raise_instead_of_becoming_empty() -> None:
    """Tool arguments that are not a JSON object raise TranslationError; they are never replaced by {}."""
    body = {
        "model": "m",
        "max_tokens": 1,
        "messages": [
            {"role": "user", "content": "a"},
            {"role": "assistant", "content": None,
             "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{\"a\": "}}]},
        ],
    }  # fmt: skip
    with pytest.raises(TranslationError, match="arguments"):
        openai_request_to_anthropic(body)


ANTHROPIC_RESPONSE = {
    "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5",
    "content": [
        {"type": "text", "text": "I'll check."},
        {
            "type": "tool_use",
            "id": "toolu_01A",
            "name": "get_weather",
            "input": {"location": "Paris", "units": ["c", 1.5]},
        },
    ],
    "stop_reason": "tool_use",
    "stop_sequence": None,
    "usage": {"input_tokens": 10, "output_tokens": 20, "cache_creation_input_tokens": 3, "cache_read_input_tokens": 7},
}


def test_response_round_trip_and_usage_mapping() -> None:
    """An Anthropic response survives OpenAI form exactly; prompt_tokens there includes the cached tokens."""
    openai = anthropic_response_to_openai(ANTHROPIC_RESPONSE)
    assert openai["choices"][0]["finish_reason"] == "tool_calls"
    assert openai["usage"]["prompt_tokens"] == 20
    assert openai["usage"]["prompt_tokens_details"]["cached_tokens"] == 7
    assert json.loads(openai["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]) == {
        "location": "Paris",
        "units": ["c", 1.5],
    }
    assert openai_response_to_anthropic(openai) == ANTHROPIC_RESPONSE


def test_thinking_block_and_refusal_in_responses_are_carried() -> None:
    """A thinking block's text reaches OpenAI as reasoning_content; an OpenAI refusal is kept (stop_reason refusal)."""
    thinking = {**ANTHROPIC_RESPONSE, "content": [{"type": "thinking", "thinking": "hm", "signature": "s"}]}
    assert anthropic_response_to_openai(thinking)["choices"][0]["message"]["reasoning_content"] == "hm"
    openai = anthropic_response_to_openai(ANTHROPIC_RESPONSE)
    openai["choices"][0]["message"]["refusal"] = "no"
    assert openai_response_to_anthropic(openai)["stop_reason"] == "refusal"


def test_bedrock_converse_body_shape() -> None:
    """Bedrock Converse: text/toolUse/toolResult blocks, system list, inferenceConfig and toolConfig."""
    req = ChatRequest(
        messages=(
            Message.user("hi"),
            Message(role=Role.ASSISTANT, content=(ToolUseBlock(id="t1", name="f", input_json='{"a":1}'),)),
            Message(role=Role.USER, content=(ToolResultBlock(tool_use_id="t1", content="oops", is_error=True),)),
        ),
        system="sys",
        max_tokens=77,
        temperature=0.5,
        stop_sequences=("END",),
        tools=(ToolDefinition(name="f", description="d", input_schema_json='{"type":"object"}'),),
    )
    body = request_to_bedrock_converse(req)
    assert body["system"] == [{"text": "sys"}]
    assert body["inferenceConfig"] == {"maxTokens": 77, "temperature": 0.5, "stopSequences": ["END"]}
    assert body["messages"][1]["content"] == [{"toolUse": {"toolUseId": "t1", "name": "f", "input": {"a": 1}}}]
    assert body["messages"][2]["content"] == [
        {"toolResult": {"toolUseId": "t1", "content": [{"text": "oops"}], "status": "error"}}
    ]
    assert body["toolConfig"] == {
        "tools": [{"toolSpec": {"name": "f", "description": "d", "inputSchema": {"json": {"type": "object"}}}}]
    }


# --- malformed input: only TranslationError, never KeyError/TypeError/IndexError ---------------

_REQUEST_KEYS = st.sampled_from(
    ["model", "max_tokens", "max_completion_tokens", "messages", "system", "tools", "role", "content", "type",
     "text", "id", "name", "input", "tool_use_id", "tool_calls", "tool_call_id", "function", "arguments",
     "tool_choice", "stop", "stop_sequences", "stream", "temperature", "top_p", "input_schema", "parameters"]
)  # fmt: skip
_request_shapes = st.recursive(
    json_values | st.sampled_from(["user", "assistant", "tool", "system", "developer", "text", "tool_use"]),
    lambda c: st.dictionaries(_REQUEST_KEYS, c, max_size=6) | st.lists(c, max_size=3),
    max_leaves=25,
)


@given(_request_shapes)
def test_fuzz_malformed_requests_only_raise_translation_error(body: Any) -> None:
    """Random JSON and wrongly typed request fields make every request translator raise TranslationError only."""
    for translate in (anthropic_request_to_openai, openai_request_to_anthropic, parse_anthropic_request,
                      parse_openai_request):  # fmt: skip
        with contextlib.suppress(TranslationError):
            translate(body)


@given(anthropic_requests(), st.data())
def test_fuzz_one_wrongly_typed_field_in_a_valid_request(body: dict[str, Any], data: st.DataObject) -> None:
    """A valid request with one field replaced by random JSON raises TranslationError or translates."""
    message = data.draw(st.sampled_from(body["messages"]))
    target = data.draw(st.sampled_from([body, message, *[b for b in message["content"] if isinstance(b, dict)]]))
    target[data.draw(st.sampled_from(sorted(target)))] = data.draw(json_values)
    with contextlib.suppress(TranslationError):
        openai_request_to_anthropic(anthropic_request_to_openai(body))


def test_optional_usage_counts_reject_wrong_types() -> None:
    """An optional cache count of false or "" is a TranslationError, not silently 0."""
    usage = {"input_tokens": 10, "output_tokens": 20, "cache_read_input_tokens": False}
    body = {**ANTHROPIC_RESPONSE, "usage": usage}
    with pytest.raises(TranslationError, match="cache_read_input_tokens"):
        anthropic_response_to_openai(body)


def _canonical_turn(message: Message) -> Message:
    """The documented normalisation: assistant text before tool_use, user tool_result before text."""
    first = ToolResultBlock if message.role is Role.USER else TextBlock
    return Message(role=message.role, content=tuple(sorted(message.content, key=lambda b: not isinstance(b, first))))


@given(anthropic_requests(), st.randoms(use_true_random=False))
def test_any_block_order_within_turns_gives_openai_messages_in_an_order_openai_accepts(
    body: dict[str, Any], rng: Any
) -> None:
    """Blocks shuffled within turns: tool messages still follow their calls; parsing back gives the canonical turns."""
    req, _ = parse_anthropic_request(body)
    shuffled = tuple(Message(role=m.role, content=tuple(rng.sample(m.content, len(m.content)))) for m in req.messages)
    messed = ChatRequest(
        messages=shuffled, max_tokens=req.max_tokens, system=req.system, tools=req.tools,
        temperature=req.temperature, stop_sequences=req.stop_sequences,
    )  # fmt: skip
    out = request_to_openai(messed, "gpt-4o")["messages"]
    pending: list[str] = []
    for message in out:
        if message["role"] == "tool":
            pending.remove(message["tool_call_id"])  # answers a call of the assistant message just before
        else:
            assert not pending, "a non-tool message between tool calls and their results"
            pending = [c["id"] for c in message.get("tool_calls", [])]
    assert parse_openai_request({"model": "gpt-4o", "max_tokens": 1, "messages": out})[0].messages == tuple(
        _canonical_turn(m) for m in shuffled
    )


def test_anthropic_user_turns_carry_tool_results_before_text() -> None:
    """A user turn [text, tool_result] goes to Anthropic as [tool_result, text]: the API rejects the other order."""
    call = Message(role=Role.ASSISTANT, content=(ToolUseBlock(id="t", name="f"),))
    turn = Message(role=Role.USER, content=(TextBlock(text="and?"), ToolResultBlock(tool_use_id="t", content="r")))
    body = request_to_anthropic(ChatRequest(messages=(Message.user("q"), call, turn)), "claude-x")
    assert [b["type"] for b in body["messages"][-1]["content"]] == ["tool_result", "text"]


@given(st.one_of(anthropic_requests().map(lambda b: ("anthropic", b)), openai_requests().map(lambda b: ("openai", b))))
def test_read_then_build_is_the_parse_and_given_fields_are_set_in_the_one_build(wire_body: tuple[str, Any]) -> None:
    """``read_*_request(body).build()`` is ``parse_*_request(body)``'s request and extras, and
    ``build(**fields)`` equals that request with ``fields`` replaced (what the gateway sets at once)."""
    wire, body = wire_body
    parse, read = (
        (parse_anthropic_request, read_anthropic_request)
        if wire == "anthropic"
        else (parse_openai_request, read_openai_request)
    )
    req, extras = parse(body)
    parts = read(body)
    assert (parts.build(), parts.extras) == (req, extras)
    given_fields: dict[str, Any] = {"alias": "chat", "max_tokens": 777, "cache_affinity_key": "k", "tool_choice": None}
    assert parts.build(**given_fields) == dataclasses.replace(req, **given_fields)
    assert parts.build() == req  # building with fields left the parts as they were


def test_build_refuses_a_given_field_the_request_would_refuse() -> None:
    """A field given to ``build`` is checked like any other: a bad one is a TranslationError."""
    parts = read_openai_request({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
    with pytest.raises(TranslationError, match="max_tokens"):
        parts.build(max_tokens=0)
