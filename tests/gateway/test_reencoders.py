"""The shape encoders for a stream that is not relayed (``gateway/openai_wire.py``, ``anthropic_wire.py``).

A same-protocol stream is the provider's own frames (``tests/sdk/test_stream_relay.py``); a stream
that is not relayed — another protocol's, a Gemini answer to an OpenAI client (its usage is
recounted), events a library caller built — is encoded from the neutral events. What those events
carry must still reach the caller's shape: OpenAI's token logprobs and refusal, Anthropic's
citations and server-tool blocks.
"""

from __future__ import annotations

import json
from typing import Any

from routeproof.core.types import (
    BlockStop,
    FinishReason,
    MessageStop,
    OpaqueBlock,
    StreamEvent,
    TextDelta,
    Usage,
)
from routeproof.gateway.anthropic_wire import AnthropicStream
from routeproof.gateway.openai_wire import OpenAIStream

LOGPROBS = {"content": [{"token": "Hi", "logprob": -0.1, "bytes": [72, 105], "top_logprobs": []}], "refusal": None}
CITATION = {"type": "char_location", "cited_text": "The sky is blue.", "document_index": 0,
            "document_title": "facts", "start_char_index": 0, "end_char_index": 16}  # fmt: skip
SEARCH = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}


def _payloads(data: bytes) -> list[dict[str, Any]]:
    """The JSON ``data`` of each SSE event in ``data`` (``[DONE]`` left out)."""
    out = []
    for frame in data.decode().split("\n\n"):
        for line in frame.split("\n"):
            if line.startswith("data: ") and line != "data: [DONE]":
                out.append(json.loads(line[6:]))
    return out


def _encode(encoder: OpenAIStream | AnthropicStream, events: list[StreamEvent]) -> list[dict[str, Any]]:
    return _payloads(b"".join(encoder.encode(e) for e in events))


def _openai() -> OpenAIStream:
    return OpenAIStream(response_id="chatcmpl-rp1", model="gpt-4o", created=1, include_usage=False)


def test_openai_token_logprobs_are_encoded_on_their_chunk() -> None:
    """A TextDelta's logprobs are its chunk's ``choices[0].logprobs``, never null over them."""
    stop = MessageStop(stop_reason=FinishReason.STOP, usage=Usage())
    chunks = _encode(_openai(), [TextDelta(text="Hi", logprobs_json=json.dumps(LOGPROBS)), BlockStop(), stop])
    [content] = [c for c in chunks if c["choices"][0]["delta"].get("content")]
    assert content["choices"][0]["logprobs"] == LOGPROBS


def test_an_openai_refusal_is_encoded_as_a_refusal() -> None:
    """Refusal pieces go in ``delta.refusal`` (never ``content``), the stream ending ``finish_reason: stop``."""
    stop = MessageStop(stop_reason=FinishReason.CONTENT_FILTER, usage=Usage())
    chunks = _encode(_openai(), [TextDelta(text="I can't.", refusal=True), BlockStop(), stop])
    deltas = [c["choices"][0]["delta"] for c in chunks]
    assert [d["refusal"] for d in deltas if "refusal" in d] == ["I can't."]
    assert all(not d.get("content") for d in deltas)
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"


def test_an_anthropic_citation_is_encoded_as_a_citations_delta() -> None:
    """A TextDelta's citation is a ``citations_delta`` of the text block, as the provider sent it."""
    events: list[StreamEvent] = [TextDelta(text="", citation_json=json.dumps(CITATION)), TextDelta(text="Blue.")]
    deltas = [p["delta"] for p in _encode(AnthropicStream(response_id="msg_rp1", model="m"), events) if "delta" in p]
    assert deltas == [{"type": "citations_delta", "citation": CITATION}, {"type": "text_delta", "text": "Blue."}]


def test_an_anthropic_server_tool_block_is_encoded_whole() -> None:
    """An OpaqueBlock opens its block as sent, then its deltas, then closes it."""
    piece = {"type": "input_json_delta", "partial_json": '{"query": "sky"}'}
    events: list[StreamEvent] = [OpaqueBlock(start_json=json.dumps(SEARCH)), OpaqueBlock(delta_json=json.dumps(piece))]
    payloads = _encode(AnthropicStream(response_id="msg_rp1", model="m"), [*events, BlockStop()])
    [start] = [p for p in payloads if p["type"] == "content_block_start"]
    assert start["content_block"] == SEARCH
    assert [p["delta"] for p in payloads if p["type"] == "content_block_delta"] == [piece]
