"""The translators' postcondition helpers: message and turn counts and the tool-call ordering rules."""

from __future__ import annotations

from typing import Any

from routeproof.core.formats.translate import (
    _message_count,
    _results_answer_calls,
    _tool_messages_follow_their_calls,
    _turn_count,
)
from routeproof.core.types import ChatRequest, Message, Role, TextBlock, ToolResultBlock, ToolUseBlock


def _turn(role: Role, *blocks: TextBlock | ToolUseBlock | ToolResultBlock) -> Message:
    return Message(role=role, content=blocks)


def _use(call_id: str) -> ToolUseBlock:
    return ToolUseBlock(id=call_id, name="f")


def _result(call_id: str) -> ToolResultBlock:
    return ToolResultBlock(tool_use_id=call_id, content="r")


_TEXT = TextBlock(text="t")


def test_message_count_is_the_list_length_or_minus_one() -> None:
    """A body's messages list gives its length; a missing or non-list messages field gives -1."""
    assert _message_count({"messages": [1, 2, 3]}) == 3
    assert _message_count({"messages": []}) == 0
    assert _message_count({}) == -1
    assert _message_count({"messages": "abc"}) == -1


def test_turn_count_counts_runs_of_one_role() -> None:
    """Consecutive messages of one role are one turn; each role change starts another."""
    user, assistant = Message.user("u"), Message.assistant("a")
    assert _turn_count(()) == 0
    assert _turn_count((user,)) == 1
    assert _turn_count((user, user)) == 1
    assert _turn_count((user, assistant)) == 2
    assert _turn_count((user, user, assistant, assistant, user)) == 3
    assert _turn_count((assistant, user, assistant)) == 3


def test_results_answer_calls_of_the_turn_before() -> None:
    """Results answering distinct calls of the assistant turn just before hold; text-only turns need nothing."""
    ask = _turn(Role.USER, _TEXT)
    calls = _turn(Role.ASSISTANT, _use("a"), _use("b"))
    assert _results_answer_calls(ChatRequest(messages=(ask,)))
    assert _results_answer_calls(ChatRequest(messages=(ask, calls, _turn(Role.USER, _result("a"), _result("b")))))
    assert _results_answer_calls(ChatRequest(messages=(ask, calls, _turn(Role.USER, _result("b")))))
    # the user turn is merged from two messages: its results still answer the turn before
    assert _results_answer_calls(
        ChatRequest(messages=(ask, calls, _turn(Role.USER, _result("a")), _turn(Role.USER, _result("b"))))
    )
    # a later turn of results is judged against its own previous turn
    later = (
        ask,
        calls,
        _turn(Role.USER, _result("a")),
        _turn(Role.ASSISTANT, _use("c")),
        _turn(Role.USER, _result("c")),
    )
    assert _results_answer_calls(ChatRequest(messages=later))


def test_results_that_answer_nothing_or_twice_fail() -> None:
    """A result for an unknown call, a call answered twice, or results with no assistant turn before fail."""
    ask = _turn(Role.USER, _TEXT)
    calls = _turn(Role.ASSISTANT, _use("a"), _use("b"))
    assert not _results_answer_calls(ChatRequest(messages=(ask, calls, _turn(Role.USER, _result("z")))))
    assert not _results_answer_calls(ChatRequest(messages=(ask, calls, _turn(Role.USER, _result("a"), _result("a")))))
    assert not _results_answer_calls(ChatRequest(messages=(_turn(Role.USER, _result("a")),)))
    # the first turn's results may not look back to the last turn (index -1)
    assert not _results_answer_calls(ChatRequest(messages=(_turn(Role.USER, _result("a")), calls)))
    # results two turns after the calls answer nothing
    late = (ask, calls, _turn(Role.USER, _TEXT), _turn(Role.ASSISTANT, _TEXT), _turn(Role.USER, _result("a")))
    assert not _results_answer_calls(ChatRequest(messages=late))
    # a bad turn after a good one still fails
    bad_later = (
        ask,
        calls,
        _turn(Role.USER, _result("a")),
        _turn(Role.ASSISTANT, _TEXT),
        _turn(Role.USER, _result("b")),
    )
    assert not _results_answer_calls(ChatRequest(messages=bad_later))


def _tool(call_id: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": "r"}


def _assistant(*ids: str) -> dict[str, Any]:
    return {"role": "assistant", "tool_calls": [{"id": i} for i in ids]}


def test_tool_messages_follow_their_calls_accepts_openais_order() -> None:
    """Tool messages answering distinct calls of the nearest assistant message, with only tools between, hold."""
    user = {"role": "user", "content": "q"}
    assert _tool_messages_follow_their_calls([])
    assert _tool_messages_follow_their_calls([user])
    assert _tool_messages_follow_their_calls([user, _assistant("a", "b"), _tool("b"), _tool("a"), user])
    assert _tool_messages_follow_their_calls([_assistant("a"), _tool("a"), _assistant("c"), _tool("c")])
    assert _tool_messages_follow_their_calls([{"role": "assistant", "tool_calls": None}, user])


def test_tool_messages_out_of_place_fail() -> None:
    """A tool message first, after a user message, answering an unknown or already-answered call, fails."""
    user = {"role": "user", "content": "q"}
    assert not _tool_messages_follow_their_calls([_tool("a")])
    assert not _tool_messages_follow_their_calls([_assistant("a"), user, _tool("a")])
    assert not _tool_messages_follow_their_calls([_assistant("a"), _tool("z")])
    assert not _tool_messages_follow_their_calls([_assistant("a"), _tool("a"), _tool("a")])
    assert not _tool_messages_follow_their_calls([_assistant("a"), {"role": "system", "content": "s"}, _tool("a")])
    assert not _tool_messages_follow_their_calls([{"role": "assistant"}, _tool("a")])


def test_results_in_the_second_turn_answer_a_leading_assistant_turn() -> None:
    """A conversation may open with the assistant's calls: the results in turn 1 answer turn 0."""
    opening = (_turn(Role.ASSISTANT, _use("a")), _turn(Role.USER, _result("a")))
    assert _results_answer_calls(ChatRequest(messages=opening))


def test_only_an_assistant_message_opens_calls() -> None:
    """Tool calls on a non-assistant message open nothing; a first tool message fails even with an empty id."""
    assert not _tool_messages_follow_their_calls([{"role": "user", "tool_calls": [{"id": "a"}]}, _tool("a")])
    assert not _tool_messages_follow_their_calls([_tool("")])
