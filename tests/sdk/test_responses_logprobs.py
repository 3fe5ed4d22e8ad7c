"""Token logprobs reach a Responses API client answered through the Chat rewriting
(``core/formats/responses_answer.py``).

The official ``openai`` SDK's ``responses`` client against ``routeproof serve`` with an OpenAI Chat
Completions mock behind it (no Responses API): ``top_logprobs`` and
``include: ["message.output_text.logprobs"]`` become ``logprobs: true`` + ``top_logprobs`` on the
Chat body, and the mock's token logprobs come back on the ``output_text`` part (plain) and on each
``response.output_text.delta`` (streamed), every event validated by the SDK's own union.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from openai.types.responses import ResponseOutputMessage, ResponseOutputText, ResponseStreamEvent
from pydantic import TypeAdapter

from routeproof.mock import Shape
from tests.wire.stack import GATEWAY_KEY, Running, gateway_in_thread

EVENTS: TypeAdapter[ResponseStreamEvent] = TypeAdapter(ResponseStreamEvent)
ASK: dict[str, Any] = {
    "model": "chat",
    "input": "hi",
    "top_logprobs": 2,
    "include": ["message.output_text.logprobs"],
    "max_output_tokens": 64,
}


@pytest.fixture(scope="module")
def openai_behind(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    """A gateway whose only provider is an OpenAI Chat Completions mock."""
    with gateway_in_thread(tmp_path_factory.mktemp("logprobs"), Shape.OPENAI) as running:
        yield running


def test_a_plain_answer_carries_the_token_logprobs_on_its_text_part(openai_behind: Running) -> None:
    """The Chat body asks for logprobs; the output_text part's logprobs spell its text, two alternatives each."""
    before = openai_behind.count()
    with openai.OpenAI(base_url=f"{openai_behind.url}/v1", api_key=GATEWAY_KEY, max_retries=0) as client:
        response = client.responses.create(**ASK)
    sent = openai_behind.sent(before)[0].body_json
    assert isinstance(sent, dict)
    assert (sent["logprobs"], sent["top_logprobs"]) == (True, 2)
    message = response.output[0]
    assert isinstance(message, ResponseOutputMessage)
    part = message.content[0]
    assert isinstance(part, ResponseOutputText)
    assert part.logprobs
    assert "".join(lp.token for lp in part.logprobs) == part.text
    assert all(len(lp.top_logprobs) == 2 and lp.bytes == list(lp.token.encode()) for lp in part.logprobs)


def test_a_stream_carries_the_token_logprobs_on_each_delta(openai_behind: Running) -> None:
    """Each text delta's logprobs spell that delta; the done event and the completed part hold them all."""
    raw = httpx.post(f"{openai_behind.url}/v1/responses", json={**ASK, "stream": True},
                     headers={"authorization": f"Bearer {GATEWAY_KEY}"}, timeout=15)  # fmt: skip
    assert raw.status_code == 200
    events = [
        EVENTS.validate_python(json.loads(block.split("data: ", 1)[1])) for block in raw.text.strip().split("\n\n")
    ]
    deltas = [e for e in events if e.type == "response.output_text.delta"]
    assert deltas
    for delta in deltas:
        assert "".join(lp.token for lp in delta.logprobs) == delta.delta
    done = next(e for e in events if e.type == "response.output_text.done")
    assert "".join(lp.token for lp in done.logprobs) == done.text
    final = events[-1]
    assert final.type == "response.completed"
    message = final.response.output[0]
    assert isinstance(message, ResponseOutputMessage)
    part = message.content[0]
    assert isinstance(part, ResponseOutputText)
    assert "".join(lp.token for lp in part.logprobs or []) == part.text


def test_other_include_values_still_need_the_responses_api(openai_behind: Running) -> None:
    """``include: ["reasoning.encrypted_content"]`` has no Chat form: a 400 naming ``include``, nothing sent."""
    before = openai_behind.count()
    client = openai.OpenAI(base_url=f"{openai_behind.url}/v1", api_key=GATEWAY_KEY, max_retries=0)
    with client, pytest.raises(openai.BadRequestError, match="include"):
        client.responses.create(model="chat", input="hi", include=["reasoning.encrypted_content"])
    assert openai_behind.count() == before
