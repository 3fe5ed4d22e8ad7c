"""The provider-neutral streaming events a provider yields and the Router relays."""

from __future__ import annotations

from dataclasses import dataclass

from routeproof.core.responses import FinishReason, Usage

__all__ = ["BlockStop", "MessageStop", "StreamError", "StreamEvent", "TextDelta", "ToolUseDelta", "ToolUseStart"]


@dataclass(frozen=True, slots=True, kw_only=True)
class TextDelta:
    """A piece of answer text."""

    text: str


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
    """The stream failed; no MessageStop follows."""

    message: str


StreamEvent = TextDelta | ToolUseStart | ToolUseDelta | BlockStop | MessageStop | StreamError
