"""OpenAI ``logprobs`` / ``top_logprobs`` in a streamed chat completion reach the OpenAI caller.

The OpenAI mock streams ``choices[].logprobs`` on each text chunk when asked; the gateway decodes
each chunk (``core.formats.sse_dialects``: ``TextDelta.logprobs_json``) and re-encodes it for the caller
(``gateway.openai_wire``). The official SDK's ``ChatCompletionChunk`` type is the oracle. For a
target without log probabilities (Anthropic, Bedrock) the request fields are named dropped.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import openai
import pytest
from openai.types.chat import ChatCompletionChunk

from routeproof.core.formats.sse import StreamDecoder, WireProtocol
from routeproof.core.types import StreamError, TextDelta
from routeproof.mock import Shape
from tests.wire.stack import GATEWAY_KEY, Running, gateway_in_thread

HELLO: Any = [{"role": "user", "content": "hi"}]


@pytest.fixture(scope="module")
def gateways(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[Shape, Running]]:
    """One gateway per provider protocol, each with that mock alone behind it."""
    tmp = tmp_path_factory.mktemp("logprobs")
    with (
        gateway_in_thread(tmp, Shape.OPENAI) as oai,
        gateway_in_thread(tmp, Shape.ANTHROPIC) as ant,
        gateway_in_thread(tmp, Shape.BEDROCK) as bed,
    ):
        yield {Shape.OPENAI: oai, Shape.ANTHROPIC: ant, Shape.BEDROCK: bed}


def _client(running: Running) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{running.url}/v1", api_key=GATEWAY_KEY, max_retries=0, timeout=15)


def test_each_streamed_text_chunk_carries_its_logprobs_to_the_openai_sdk(gateways: dict[Shape, Running]) -> None:
    """Every chunk with text has ``choices[0].logprobs.content`` whose tokens spell that text, with
    the asked-for number of alternatives; the chunks validate as the SDK's ``ChatCompletionChunk``."""
    running = gateways[Shape.OPENAI]
    with _client(running) as client:
        chunks = list(
            client.chat.completions.create(model="chat", messages=HELLO, stream=True, logprobs=True, top_logprobs=2)
        )
    assert running.mock.journal[-1].body_json["top_logprobs"] == 2  # type: ignore[index]
    texts = [c for c in chunks if c.choices and c.choices[0].delta.content]
    assert texts
    for chunk in texts:
        ChatCompletionChunk.model_validate(chunk.model_dump())
        choice = chunk.choices[0]
        assert choice.logprobs is not None
        assert choice.logprobs.content, chunk
        assert "".join(t.token for t in choice.logprobs.content) == choice.delta.content
        assert all(len(t.top_logprobs) == 2 for t in choice.logprobs.content)


def test_a_stream_that_did_not_ask_has_no_logprobs(gateways: dict[Shape, Running]) -> None:
    """No ``logprobs`` asked: every chunk's ``logprobs`` is null (nothing invented)."""
    with _client(gateways[Shape.OPENAI]) as client:
        chunks = list(client.chat.completions.create(model="chat", messages=HELLO, stream=True))
    assert all(c.choices[0].logprobs is None for c in chunks if c.choices)


@pytest.mark.parametrize("shape", [Shape.ANTHROPIC, Shape.BEDROCK])
def test_a_target_without_logprobs_names_both_fields_dropped(gateways: dict[Shape, Running], shape: Shape) -> None:
    """Anthropic and Bedrock return no log probabilities: the table's DROPPED rows, named before the first event."""
    with (
        _client(gateways[shape]) as client,
        client.chat.completions.with_streaming_response.create(
            model="chat", messages=HELLO, stream=True, logprobs=True, top_logprobs=2
        ) as streamed,
    ):
        dropped = streamed.headers["x-routeproof-dropped"].split(",")
        lines = list(streamed.iter_lines())
    assert {"logprobs", "top_logprobs"} <= set(dropped), dropped
    assert any(line.startswith("data: ") for line in lines)


def test_the_decoder_keeps_a_chunks_logprobs_with_its_text() -> None:
    """The layer below the gateway: one chunk's ``logprobs`` object, compact, on its TextDelta."""
    decoder = StreamDecoder(WireProtocol.OPENAI)
    chunk = (
        b'data: {"choices":[{"index":0,"delta":{"content":"Hi"},'
        b'"logprobs":{"content":[{"token":"Hi","logprob":-0.5,"bytes":[72,105],"top_logprobs":[]}],"refusal":null},'
        b'"finish_reason":null}]}\n\n'
    )
    events = decoder.feed(chunk)
    assert events == [
        TextDelta(
            text="Hi",
            logprobs_json='{"content":[{"token":"Hi","logprob":-0.5,"bytes":[72,105],"top_logprobs":[]}],"refusal":null}',
        )
    ]


@pytest.mark.parametrize("logprobs", [b"5", b'{"content":[{"token":"Hi","logprob":NaN}]}'])
def test_a_chunk_whose_logprobs_are_not_a_json_object_is_a_stream_error(logprobs: bytes) -> None:
    """Not an object, or not JSON (NaN): the documented shape is broken, the stream errors."""
    decoder = StreamDecoder(WireProtocol.OPENAI)
    chunk = b'data: {"choices":[{"index":0,"delta":{"content":"Hi"},"logprobs":' + logprobs + b"}]}\n\n"
    events = decoder.feed(chunk)
    assert len(events) == 1
    assert isinstance(events[0], StreamError)
    assert "logprobs" in events[0].message


def test_only_the_first_text_of_a_chunk_carries_its_logprobs() -> None:
    """A chunk with content and a refusal piece: the logprobs object goes with the first, once."""
    decoder = StreamDecoder(WireProtocol.OPENAI)
    chunk = b'data: {"choices":[{"index":0,"delta":{"content":"a","refusal":"b"},"logprobs":{"content":[]}}]}\n\n'
    assert decoder.feed(chunk) == [
        TextDelta(text="a", logprobs_json='{"content":[]}'),
        TextDelta(text="b", refusal=True),
    ]
