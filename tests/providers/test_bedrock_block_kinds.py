"""The ConverseStream decoder keeps each content block's kind (core's BlockKind): a delta of the
other kind for an open block is a malformed stream, naming the block's kind and index."""

from __future__ import annotations

import pytest

from routeproof.core.types import BlockStop, StreamError, TextDelta, ThinkingDelta, ToolUseStart
from routeproof.mock.eventstream import encode_event
from routeproof.providers.bedrock_stream import ConverseStreamDecoder


def _start(index: int, start: dict[str, object]) -> bytes:
    return encode_event("contentBlockStart", {"contentBlockIndex": index, "start": start})


def _delta(index: int, payload: dict[str, object]) -> bytes:
    return encode_event("contentBlockDelta", {"contentBlockIndex": index, "delta": payload})


TOOL_START = _start(0, {"toolUse": {"toolUseId": "tu1", "name": "search"}})


@pytest.mark.parametrize(
    ("frames", "first", "named"),
    [
        (
            [TOOL_START, _delta(0, {"text": "x"})],
            [ToolUseStart(id="tu1", name="search")],
            "a text delta for tool block 0",
        ),
        ([_delta(0, {"text": "x"}), _delta(0, {"toolUse": {"input": "{}"}})], [TextDelta(text="x")], "text block 0"),
        ([_start(0, {"reasoning": {}}), _delta(0, {"toolUse": {"input": "{}"}})], [], "for ignored block 0"),
        ([_delta(3, {"toolUse": {"input": "{}"}})], [], "a toolUse delta for unknown block 3"),
    ],
    ids=["text-into-tool", "tool-into-text", "tool-into-ignored", "tool-into-unknown"],
)
def test_a_delta_of_the_wrong_kind_is_malformed(frames: list[bytes], first: list[object], named: str) -> None:
    """A delta whose kind differs from its block's is a 'malformed' StreamError naming kind and index."""
    events = ConverseStreamDecoder().feed(b"".join(frames))
    assert events[:-1] == first
    assert isinstance(events[-1], StreamError)
    assert "malformed" in events[-1].message
    assert named in events[-1].message


def test_streamed_reasoning_is_relayed_with_its_signature_byte_exact() -> None:
    """reasoningContent deltas are ThinkingDeltas (text, then the signature; a redacted block's data),
    each block closed by a BlockStop, before the answer's text: an Anthropic client gets its thinking."""
    frames = [
        _delta(0, {"reasoningContent": {"text": "Let me "}}),
        _delta(0, {"reasoningContent": {"text": "think."}}),
        _delta(0, {"reasoningContent": {"signature": "EqQB+/sig=="}}),
        encode_event("contentBlockStop", {"contentBlockIndex": 0}),
        _delta(1, {"reasoningContent": {"redactedContent": "ZW5jcnlwdGVk"}}),
        encode_event("contentBlockStop", {"contentBlockIndex": 1}),
        _delta(2, {"text": "Hi"}),
    ]
    assert ConverseStreamDecoder().feed(b"".join(frames)) == [
        ThinkingDelta(thinking="Let me "),
        ThinkingDelta(thinking="think."),
        ThinkingDelta(signature="EqQB+/sig=="),
        BlockStop(),
        ThinkingDelta(redacted_data="ZW5jcnlwdGVk"),
        BlockStop(),
        TextDelta(text="Hi"),
    ]


def test_a_reasoning_delta_of_no_known_kind_is_malformed() -> None:
    """A reasoningContent with none of text, signature, redactedContent is a malformed stream, naming them."""
    events = ConverseStreamDecoder().feed(_delta(0, {"reasoningContent": {"future": 1}}))
    assert isinstance(events[-1], StreamError)
    assert "text, signature, redactedContent" in events[-1].message
