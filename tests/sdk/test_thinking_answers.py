"""A model's thinking reaches every client shape: carried where the shape has a place for it, and
what it has no place for named in ``x-routeproof-dropped`` (``core/formats/answer_drops.py``).

The official ``openai`` SDK against ``routeproof serve`` with an Anthropic mock behind it that thinks
(the mock answers a ``thinking`` request with a signed thinking block): Chat Completions gets
``reasoning_content`` (plain and streamed), the Responses API a ``reasoning`` item (plain and
streamed, every event validated by the SDK's own union), the signature named ``thinking.signature``;
a client that replays the reasoning item on its next turn (as the OpenAI Agents SDK does) is
answered, the item named ``input[].reasoning``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import openai
import pytest
from openai.types.responses import ResponseReasoningItem, ResponseStreamEvent
from pydantic import TypeAdapter

from routeproof.mock import Shape
from routeproof.mock.features import MOCK_SIGNATURE, MOCK_THINKING
from tests.wire.stack import GATEWAY_KEY, Running, dropped_of, gateway_in_thread

EVENTS: TypeAdapter[ResponseStreamEvent] = TypeAdapter(ResponseStreamEvent)
ASK: dict[str, Any] = {"model": "chat", "max_completion_tokens": 4096, "reasoning_effort": "low",
       "messages": [{"role": "user", "content": "hi"}]}  # fmt: skip
RESPONSES_ASK: dict[str, Any] = {
    "model": "chat",
    "input": "hi",
    "reasoning": {"effort": "low"},
    "max_output_tokens": 4096,
}


@pytest.fixture(scope="module")
def anthropic_behind(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    """A gateway whose only provider is an Anthropic mock."""
    with gateway_in_thread(tmp_path_factory.mktemp("thinking"), Shape.ANTHROPIC) as running:
        yield running


def _client(running: Running) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{running.url}/v1", api_key=GATEWAY_KEY, max_retries=0, timeout=15)


def test_chat_completions_carry_the_thinking_as_reasoning_content(anthropic_behind: Running) -> None:
    """Plain: ``message.reasoning_content`` is the thinking text; the signature is named dropped."""
    with _client(anthropic_behind) as client:
        raw = client.chat.completions.with_raw_response.create(**ASK)
    message = raw.parse().choices[0].message
    assert message.content == "Hello from the routeproof mock."
    assert (message.model_extra or {}).get("reasoning_content") == MOCK_THINKING
    assert "thinking.signature" in dropped_of(raw.headers)
    assert MOCK_SIGNATURE not in raw.http_response.text


def test_streamed_chat_completions_carry_the_thinking_as_reasoning_content_deltas(anthropic_behind: Running) -> None:
    """Streamed: ``delta.reasoning_content`` pieces spell the thinking, before the answer's text;
    the signature is named in the header, before the first event."""
    with _client(anthropic_behind) as client:
        raw = client.chat.completions.with_raw_response.create(**ASK, stream=True)
        reasoning, text = "", ""
        for chunk in raw.parse():
            for choice in chunk.choices:
                piece = (choice.delta.model_extra or {}).get("reasoning_content")
                if piece:
                    assert not text, "the thinking comes before the answer"
                    reasoning += piece
                text += choice.delta.content or ""
    assert reasoning == MOCK_THINKING
    assert text == "Hello from the routeproof mock."
    assert "thinking.signature" in dropped_of(raw.headers)


def test_the_responses_api_carries_the_thinking_as_a_reasoning_item(anthropic_behind: Running) -> None:
    """Plain: the first output item is a ``reasoning`` item whose ``reasoning_text`` is the thinking."""
    with _client(anthropic_behind) as client:
        raw = client.responses.with_raw_response.create(**RESPONSES_ASK)
    response = raw.parse()
    item = response.output[0]
    assert isinstance(item, ResponseReasoningItem)
    assert [(c.type, c.text) for c in item.content or []] == [("reasoning_text", MOCK_THINKING)]
    assert item.encrypted_content is None  # an Anthropic signature is not OpenAI's encryption: named dropped
    assert response.output_text == "Hello from the routeproof mock."
    assert "thinking.signature" in dropped_of(raw.headers)


def test_a_streamed_responses_answer_streams_the_reasoning_text(anthropic_behind: Running) -> None:
    """Streamed: every event is a member of the SDK's union, in order; the reasoning_text deltas spell
    the thinking and the completed response holds the reasoning item first."""
    raw = httpx.post(f"{anthropic_behind.url}/v1/responses", json={**RESPONSES_ASK, "stream": True},
                     headers={"authorization": f"Bearer {GATEWAY_KEY}"}, timeout=15)  # fmt: skip
    assert raw.status_code == 200
    events = []
    for number, block in enumerate(raw.text.strip().split("\n\n")):
        lines = dict(line.split(": ", 1) for line in block.split("\n"))
        event = EVENTS.validate_python(json.loads(lines["data"]))
        assert (event.type, event.sequence_number) == (lines["event"], number)
        events.append(event)
    deltas = "".join(e.delta for e in events if e.type == "response.reasoning_text.delta")
    assert deltas == MOCK_THINKING
    done = next(e for e in events if e.type == "response.reasoning_text.done")
    assert done.text == MOCK_THINKING
    final = events[-1]
    assert final.type == "response.completed"
    assert [item.type for item in final.response.output] == ["reasoning", "message"]
    assert "thinking.signature" in dropped_of(raw.headers)
    with _client(anthropic_behind) as client, client.responses.stream(**RESPONSES_ASK) as stream:
        assert stream.get_final_response().output_text == "Hello from the routeproof mock."  # the SDK's helper


def test_a_replayed_reasoning_item_is_answered_and_named(anthropic_behind: Running) -> None:
    """Turn 2 sends turn 1's output items back as input (what the OpenAI Agents SDK does): the gateway's
    own reasoning item has no form for Anthropic (no signature): it is left out, named
    ``input[].reasoning``, and the turn is answered, not refused."""
    with _client(anthropic_behind) as client:
        first = client.responses.create(**RESPONSES_ASK)
        replay = [item.model_dump(exclude_none=True) for item in first.output]
        before = anthropic_behind.count()
        raw = client.responses.with_raw_response.create(
            **{
                **RESPONSES_ASK,
                "input": [{"role": "user", "content": "hi"}, *replay, {"role": "user", "content": "and now?"}],
            }
        )
    assert raw.status_code == 200
    assert "input[].reasoning" in dropped_of(raw.headers)
    sent = anthropic_behind.sent(before)[0].body_json
    assert isinstance(sent, dict)
    assert [m["role"] for m in sent["messages"]] == ["user", "assistant", "user"]
    assert MOCK_THINKING not in json.dumps(sent)


@pytest.fixture(scope="module")
def bedrock_behind(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    """A gateway whose only provider is a Bedrock Converse mock (it answers thinking with reasoningContent)."""
    with gateway_in_thread(tmp_path_factory.mktemp("thinking-bedrock"), Shape.BEDROCK) as running:
        yield running


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_bedrock_reasoning_reaches_an_anthropic_client_signed(bedrock_behind: Running, stream: bool) -> None:
    """Converse ``reasoningContent`` (plain, and streamed as reasoningContent deltas) is an Anthropic
    thinking block with its signature byte-exact, before the text; nothing is named dropped."""
    ask: dict[str, Any] = {"model": "chat", "max_tokens": 4096, "thinking": {"type": "enabled", "budget_tokens": 1024},
                           "messages": [{"role": "user", "content": "hi"}]}  # fmt: skip
    with anthropic.Anthropic(base_url=bedrock_behind.url, api_key=GATEWAY_KEY, max_retries=0, timeout=15) as client:
        if stream:
            with client.messages.stream(**ask) as events:
                message = events.get_final_message()
        else:
            message = client.messages.create(**ask)
    assert [block.type for block in message.content] == ["thinking", "text"]
    thinking = message.content[0]
    assert thinking.type == "thinking"
    assert (thinking.thinking, thinking.signature) == (MOCK_THINKING, MOCK_SIGNATURE)
