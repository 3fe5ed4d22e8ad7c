"""An OpenAI refusal streamed to an OpenAI client stays a refusal: ``delta.refusal`` pieces and
``finish_reason: "stop"``, as OpenAI sent them (it was re-encoded as content ending ``content_filter``)."""

from __future__ import annotations

import openai
import pytest

from routeproof.mock import Scripted, Shape
from routeproof.mock.script import StreamItem
from tests.sdk.chunks import chat_chunk
from tests.wire.stack import GATEWAY_KEY, gateway_in_thread

REFUSAL = ("I'm sorry, ", "I can't help with that.")


def test_a_streamed_refusal_reaches_an_openai_client_as_a_refusal(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The SDK sees the refusal text in ``delta.refusal`` (never in ``content``) and ``finish_reason: stop``."""
    events: tuple[StreamItem, ...] = (
        chat_chunk({"role": "assistant", "content": None, "refusal": ""}),
        *(chat_chunk({"refusal": piece}) for piece in REFUSAL),
        chat_chunk({}, "stop"),
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
