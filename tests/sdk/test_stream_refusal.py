"""An OpenAI refusal streamed to an OpenAI client stays a refusal: ``delta.refusal`` pieces and
``finish_reason: "stop"``, as OpenAI sent them (it was re-encoded as content ending ``content_filter``)."""

from __future__ import annotations

from typing import Any

import openai
import pytest

from routeproof.mock import Scripted, Shape
from routeproof.mock.script import StreamItem
from tests.wire.stack import GATEWAY_KEY, gateway_in_thread

REFUSAL = ("I'm sorry, ", "I can't help with that.")


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
    return {
        "data": {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o", "choices": [choice]}
    }


def test_a_streamed_refusal_reaches_an_openai_client_as_a_refusal(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The SDK sees the refusal text in ``delta.refusal`` (never in ``content``) and ``finish_reason: stop``."""
    events: tuple[StreamItem, ...] = (
        _chunk({"role": "assistant", "content": None, "refusal": ""}),
        *(_chunk({"refusal": piece}) for piece in REFUSAL),
        _chunk({}, "stop"),
        "data: [DONE]\n\n",
    )
    with gateway_in_thread(tmp_path_factory.mktemp("refusal"), Shape.OPENAI) as running:
        running.mock.script(Scripted(stream_events=events))
        with openai.OpenAI(base_url=f"{running.url}/v1", api_key=GATEWAY_KEY, max_retries=0, timeout=15) as client:
            refusal, content, finish = "", "", None
            for chunk in client.chat.completions.create(
                model="chat", messages=[{"role": "user", "content": "something bad"}], stream=True
            ):
                for choice in chunk.choices:
                    refusal += choice.delta.refusal or ""
                    content += choice.delta.content or ""
                    finish = choice.finish_reason or finish
    assert refusal == "".join(REFUSAL)
    assert content == ""
    assert finish == "stop"
