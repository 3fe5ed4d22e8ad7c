"""The conformance runner renders an ``openai`` provider's scripted answer in OpenAI's Responses API
shape too (``conformance/answers.py``, the step's ``on_responses``), so a gateway that forwards a
Responses request to the provider's own Responses API is answered as OpenAI would answer it.

The official ``openai`` SDK's own types are the oracle: every rendered ``response`` object and every
typed event validates, the sequence numbers run 0, 1, 2, ... in the order sent, and the stream's text
is the answer's; an in-band error continues the numbering of what was sent before it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from openai.types.responses import (
    Response,
    ResponseFunctionCallArgumentsDeltaEvent,
    ResponseFunctionToolCall,
    ResponseStreamEvent,
    ResponseTextDeltaEvent,
)
from pydantic import TypeAdapter

from routeproof.conformance.answers import END_MODES, expand_step

EVENTS: TypeAdapter[ResponseStreamEvent] = TypeAdapter(ResponseStreamEvent)


def _events(items: list[Any]) -> list[dict[str, Any]]:
    return [item["data"] for item in items if isinstance(item, dict)]


@pytest.mark.parametrize("tool", [False, True])
def test_a_plain_answer_is_a_valid_response_object(tool: bool) -> None:
    """Text and a tool call, each a ``Response`` the SDK accepts, with the answer in it."""
    step = expand_step({"answer": {"text": "from-a", "tool": tool}}, protocol="openai", stream=False, model="m")
    response = Response.model_validate(step["on_responses"]["body"])
    assert response.status == "completed"
    if tool:
        call = response.output[0]
        assert isinstance(call, ResponseFunctionToolCall)
        assert json.loads(call.arguments) == {"query": "from-a"}
    else:
        assert response.output_text == "from-a"
    assert step["body"]["object"] == "chat.completion"  # the Chat route keeps its own rendering


@pytest.mark.parametrize("tool", [False, True])
def test_a_complete_stream_is_valid_typed_events_in_sequence(tool: bool) -> None:
    """Every event validates, numbered in order, text deltas spell the answer, and it ends completed."""
    step = expand_step({"answer": {"pieces": ["from", "-a"], "tool": tool}}, protocol="openai", stream=True, model="m")
    events = [EVENTS.validate_python(e) for e in _events(step["on_responses"]["stream_events"])]
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert events[-1].type == "response.completed"
    kind = ResponseFunctionCallArgumentsDeltaEvent if tool else ResponseTextDeltaEvent
    assert "".join(e.delta for e in events if isinstance(e, kind)) == "from-a"


@pytest.mark.parametrize("end", END_MODES)
def test_every_end_mode_has_a_responses_form(end: str) -> None:
    """Each way a stream can end is rendered for the Responses route: the cut after the same number
    of pieces, the in-band error numbered after what was sent."""
    answer = {"pieces": ["a", "b", "c"], "end": end, "after_pieces": 1}
    step = expand_step({"answer": answer}, protocol="openai", stream=True, model="m")
    responses = step["on_responses"]
    assert ("cut_after_items" in responses) == ("cut_after_items" in step)
    events = _events(responses["stream_events"])
    if end == "error_event":
        error = events[-1]
        assert (error["type"], error["sequence_number"]) == ("error", len(events) - 1)
        assert EVENTS.validate_python(error).type == "error"
    deltas = [e for e in events if e["type"] == "response.output_text.delta"]
    assert deltas[0]["delta"] == "a"
