"""The provider-neutral streaming events a provider yields and the Router relays."""

from __future__ import annotations

from dataclasses import dataclass

from routeproof.core.responses import FinishReason, Usage

__all__ = [
    "BlockStop",
    "MessageStop",
    "OpaqueBlock",
    "StreamError",
    "StreamEvent",
    "TextDelta",
    "ThinkingDelta",
    "ToolUseDelta",
    "ToolUseStart",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class TextDelta:
    """A piece of answer text; ``logprobs_json``: the OpenAI chunk's ``choices[0].logprobs`` object
    for this piece, as compact JSON (None: the stream carries none), so an OpenAI caller gets it back."""

    text: str
    logprobs_json: str | None = None
    # An Anthropic ``citations_delta``: one citation (compact JSON) of the text block being streamed; the
    # ``text`` of such a delta is empty. Carried to an Anthropic caller; other shapes have no place for it.
    citation_json: str | None = None
    # OpenAI's ``delta.refusal``: the piece is refusal text (an OpenAI caller gets it back as ``refusal``;
    # other shapes read it as the answer's text, the stream ending as a refusal / content filter).
    refusal: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class ThinkingDelta:
    """A piece of a thinking block: its text, its signature, or a redacted block's opaque data.

    The first ``ThinkingDelta`` after another block opens a thinking block; ``BlockStop`` closes it.
    The signature and the redacted data are kept byte-exact: a client sends them back on the next
    turn (Anthropic rejects a tool loop whose thinking block was altered).
    """

    thinking: str = ""
    signature: str = ""
    redacted_data: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class OpaqueBlock:
    """A piece of a content block routeproof does not model (an Anthropic server tool's use or result,
    a block type newer than this code), carried as the provider sent it to a caller of its protocol.

    The first piece opens the block (``start_json``: the ``content_block_start``'s block, compact
    JSON); the following ones are its deltas (``delta_json``); ``BlockStop`` closes it. Other shapes
    have no place for it (and such blocks only come from features carried to the caller's own protocol).
    """

    start_json: str | None = None
    delta_json: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolUseStart:
    """The model starts a tool call."""

    id: str
    name: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolUseDelta:
    """A piece of a tool call's JSON arguments."""

    id: str
    partial_json: str


@dataclass(frozen=True, slots=True, kw_only=True)
class BlockStop:
    """A content block ended."""


@dataclass(frozen=True, slots=True, kw_only=True)
class MessageStop:
    """The message ended cleanly; carries the stop reason and the usage."""

    stop_reason: FinishReason
    usage: Usage


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamError:
    """The stream failed; no MessageStop follows.

    ``usage`` is the final usage the provider reported before the stream was cut (Anthropic's
    ``message_delta``, OpenAI's usage chunk), which it bills; None when none arrived.
    """

    message: str
    usage: Usage | None = None


StreamEvent = (
    TextDelta | ThinkingDelta | ToolUseStart | ToolUseDelta | BlockStop | MessageStop | StreamError | OpaqueBlock
)
