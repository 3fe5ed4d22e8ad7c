"""OpenAI's refusal reaches a Responses API client answered through the Chat rewriting as a refusal
(``gateway/responses_wire.py``): a message whose part is ``{"type": "refusal"}`` and a ``completed``
response, plain and streamed, as OpenAI's own Responses API answers one.

Before, the refusal text came back as ``output_text`` (and a stream ended ``incomplete`` with reason
``content_filter``): the official SDK's ``responses.parse`` then tried to read "I'm sorry, ..." as the
requested JSON and raised instead of showing the refusal.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import openai
import pytest
from openai.types.responses import ResponseOutputMessage, ResponseOutputRefusal, ResponseStreamEvent
from pydantic import BaseModel, TypeAdapter

from routeproof.mock import Scripted, Shape
from routeproof.mock.script import StreamItem
from tests.sdk.chunks import chat_chunk
from tests.wire.stack import GATEWAY_KEY, Running, gateway_in_thread

EVENTS: TypeAdapter[ResponseStreamEvent] = TypeAdapter(ResponseStreamEvent)
REFUSAL = ("I'm sorry, ", "I can't help with that.")


class Recipe(BaseModel):
    """The structured output asked for."""

    name: str


@pytest.fixture(scope="module")
def openai_behind(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    """A gateway whose only provider is an OpenAI Chat Completions mock (no Responses API)."""
    with gateway_in_thread(tmp_path_factory.mktemp("refusal"), Shape.OPENAI) as running:
        yield running


def test_a_refusal_is_a_refusal_part_and_parse_does_not_raise(openai_behind: Running) -> None:
    """``responses.parse`` with a Pydantic format: the refusal is the message's refusal part, the
    response completed, nothing parsed (and no validation error)."""
    answer = {
        "id": "c1", "object": "chat.completion", "created": 1, "model": "gpt-4o",
        "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                     "message": {"role": "assistant", "content": None, "refusal": "".join(REFUSAL)}}],
        "usage": {"prompt_tokens": 9, "completion_tokens": 7, "total_tokens": 16},
    }  # fmt: skip
    openai_behind.mock.script(Scripted(body=answer))
    with openai.OpenAI(base_url=f"{openai_behind.url}/v1", api_key=GATEWAY_KEY, max_retries=0, timeout=15) as client:
        response = client.responses.parse(model="chat", input="something bad", text_format=Recipe)
    assert response.status == "completed"
    assert response.incomplete_details is None
    message = response.output[0]
    assert isinstance(message, ResponseOutputMessage)
    assert [part.type for part in message.content] == ["refusal"]
    part = message.content[0]
    assert isinstance(part, ResponseOutputRefusal)
    assert part.refusal == "".join(REFUSAL)
    assert response.output_parsed is None
    assert response.output_text == ""


def test_a_streamed_refusal_is_refusal_events_and_a_completed_response(openai_behind: Running) -> None:
    """``delta.refusal`` pieces become ``response.refusal.delta`` events (each validated by the SDK's
    union), one ``response.refusal.done`` with the whole text, and ``response.completed`` whose message
    holds the refusal part; no ``output_text`` event at all."""
    events: tuple[StreamItem, ...] = (
        chat_chunk({"role": "assistant", "content": None, "refusal": ""}),
        *(chat_chunk({"refusal": piece}) for piece in REFUSAL),
        chat_chunk({}, "stop"),
        "data: [DONE]\n\n",
    )
    openai_behind.mock.script(Scripted(stream_events=events))
    raw = httpx.post(f"{openai_behind.url}/v1/responses", json={"model": "chat", "input": "bad", "stream": True},
                     headers={"authorization": f"Bearer {GATEWAY_KEY}"}, timeout=15)  # fmt: skip
    assert raw.status_code == 200
    parsed = [
        EVENTS.validate_python(json.loads(block.split("data: ", 1)[1])) for block in raw.text.strip().split("\n\n")
    ]
    kinds = [e.type for e in parsed]
    assert not [k for k in kinds if k.startswith("response.output_text")]
    assert [e.delta for e in parsed if e.type == "response.refusal.delta"] == list(REFUSAL)
    assert [e.refusal for e in parsed if e.type == "response.refusal.done"] == ["".join(REFUSAL)]
    assert [e.sequence_number for e in parsed] == list(range(len(parsed)))
    final = parsed[-1]
    assert final.type == "response.completed"
    assert final.response.status == "completed"
    message = final.response.output[0]
    assert isinstance(message, ResponseOutputMessage)
    assert [part.type for part in message.content] == ["refusal"]


def test_the_sdk_stream_helper_reports_the_refusal(openai_behind: Running) -> None:
    """The SDK's ``responses.stream`` with a Pydantic format ends without raising; its final response
    holds the refusal and parses to nothing."""
    events: tuple[StreamItem, ...] = (
        *(chat_chunk({"refusal": piece}) for piece in REFUSAL),
        chat_chunk({}, "stop"),
        "data: [DONE]\n\n",
    )
    openai_behind.mock.script(Scripted(stream_events=events))
    client = openai.OpenAI(base_url=f"{openai_behind.url}/v1", api_key=GATEWAY_KEY, max_retries=0, timeout=15)
    with client, client.responses.stream(model="chat", input="bad", text_format=Recipe) as stream:
        refused = "".join(e.delta for e in stream if e.type == "response.refusal.delta")
        final = stream.get_final_response()
    assert refused == "".join(REFUSAL)
    assert final.status == "completed"
    assert final.output_parsed is None
