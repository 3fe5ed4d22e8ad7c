"""OpenAI's URL citations (``message.annotations``, a search model's) reach a Responses client as
``output_text`` annotations, and are named dropped for an Anthropic client, whose shape has none."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest
from openai.types.responses import ResponseOutputMessage, ResponseOutputText

from routeproof.mock import Scripted, Shape
from tests.wire.stack import GATEWAY_KEY, Running, dropped_of, gateway_in_thread

TEXT = "Oslo is sunny today."
CITATION = {"url": "https://weather.example/oslo", "title": "Oslo weather", "start_index": 0, "end_index": 20}
ANSWER: dict[str, Any] = {
    "id": "chatcmpl-s", "object": "chat.completion", "created": 1, "model": "gpt-4o-search-preview",
    "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None, "message": {
        "role": "assistant", "content": TEXT, "refusal": None,
        "annotations": [{"type": "url_citation", "url_citation": CITATION}]}}],
    "usage": {"prompt_tokens": 5, "completion_tokens": 6, "total_tokens": 11},
}  # fmt: skip


@pytest.fixture(scope="module")
def openai_behind(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    """A gateway whose only provider is an OpenAI Chat Completions mock."""
    with gateway_in_thread(tmp_path_factory.mktemp("annotations"), Shape.OPENAI) as running:
        yield running


def test_a_responses_client_gets_the_url_citations_as_annotations(openai_behind: Running) -> None:
    """The Chat answer's url_citation is the output_text part's url_citation annotation; nothing is named."""
    openai_behind.mock.script(Scripted(body=ANSWER))
    with openai.OpenAI(base_url=f"{openai_behind.url}/v1", api_key=GATEWAY_KEY, max_retries=0, timeout=15) as client:
        raw = client.responses.with_raw_response.create(model="chat", input="Weather in Oslo?")
    message = raw.parse().output[0]
    assert isinstance(message, ResponseOutputMessage)
    part = message.content[0]
    assert isinstance(part, ResponseOutputText)
    assert [a.model_dump() for a in part.annotations] == [{"type": "url_citation", **CITATION}]
    assert "annotations" not in dropped_of(raw.headers)


def test_an_anthropic_client_is_told_the_annotations_were_dropped(openai_behind: Running) -> None:
    """The Anthropic shape has no URL-citation equivalent: the text arrives, ``annotations`` is named."""
    openai_behind.mock.script(Scripted(body=ANSWER))
    with anthropic.Anthropic(base_url=openai_behind.url, api_key=GATEWAY_KEY, max_retries=0, timeout=15) as client:
        raw = client.messages.with_raw_response.create(
            model="chat", max_tokens=64, messages=[{"role": "user", "content": "Weather in Oslo?"}]
        )
    assert [b.text for b in raw.parse().content if b.type == "text"] == [TEXT]
    assert "annotations" in dropped_of(raw.headers)
