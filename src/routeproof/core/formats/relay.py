"""Same-protocol stream relay: which of a provider's own SSE frames reach the caller, as pure rules.

When the caller and the provider speak the same protocol (an OpenAI Chat Completions caller and an
OpenAI-protocol provider, an Anthropic Messages caller and Anthropic) and the request went by the
same-protocol passthrough (``core/formats/passthrough.py``), the gateway relays the provider's own
frames instead of re-encoding neutral events: the chunks' ``id``, ``system_fingerprint``,
``service_tier``, ``annotations``, ``delta.audio``, every Anthropic event type and field reach the
caller as sent. The router still decodes every frame (``core/formats/sse.py``) for its rules: the
first content event commits the call (failover only before it), the usage goes to the ledger, an
in-band error or a cut after the first content ends the stream in the shape's error event.

The decoder (with ``keep_frames``) gives each frame, as the provider's text (its own line ends,
comments and keep-alives included), to the last neutral event that frame produced (a ``Relayed*``
subclass below). A frame that produced no event (OpenAI's role chunk, its usage chunk, Anthropic's
``message_start``, ``ping``, ``message_delta``, an event type newer than this code) waits and goes
with the next event. So the frames of a tool-call block are held back with the block's events
(``core/stream_rules.hold_back``) and the frames after the last content go with ``MessageStop``.

What the router owns, and so does not relay as sent (the passthrough's router-owned fields):

============================  ==================================================================
field the router set          what reaches the caller
============================  ==================================================================
``stream_options.             OpenAI's usage-only chunk (``choices: []`` and a ``usage``) is held
include_usage`` (set for      back when the caller did not ask for usage itself: the router asked
billing)                      for it, and a client that did not expects every chunk to have a
                              choice. The other chunks' ``"usage": null`` is relayed as sent (the
                              SDK types read it as absent; removing it would re-encode each chunk).
``model`` (the alias          not rewritten: the chunks' ``model`` is the provider's report of the
resolved)                     model that answered, as a plain same-protocol answer returns it
                              (``ProviderResponse.wire_body_json``); ``x-routeproof-attempts`` names
                              the provider and the configured model
``stream``, the output cap    nothing in the answer
============================  ==================================================================

A provider's in-band error event is not relayed: the decoder turns it into a ``StreamError`` (before
the first content: a failed attempt, the next provider is tried; after it: the stream ends in the
gateway's error event for the shape, as a cut does).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, fields, replace
from typing import Any

import icontract

from routeproof.core.messages import WireFormat
from routeproof.core.types import (
    BlockStop,
    MessageStop,
    OpaqueBlock,
    StreamError,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolUseDelta,
    ToolUseStart,
)

__all__ = [
    "RELAY_PROTOCOLS",
    "RelayedBlockStop",
    "RelayedMessageStop",
    "RelayedOpaqueBlock",
    "RelayedTextDelta",
    "RelayedThinkingDelta",
    "RelayedToolUseDelta",
    "RelayedToolUseStart",
    "attach_frames",
    "is_usage_only_chunk",
    "relay_frame",
    "relayed_frames",
    "relays",
    "with_frames",
]

RELAY_PROTOCOLS = frozenset({WireFormat.OPENAI_CHAT, WireFormat.ANTHROPIC_MESSAGES})
"""The caller protocols whose streams are relayed from a provider of the same protocol."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RelayedTextDelta(TextDelta):
    """A ``TextDelta`` with the provider's frames it ends (see the module doc)."""

    frames: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class RelayedThinkingDelta(ThinkingDelta):
    """A ``ThinkingDelta`` with the provider's frames it ends."""

    frames: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class RelayedToolUseStart(ToolUseStart):
    """A ``ToolUseStart`` with the provider's frames it ends."""

    frames: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class RelayedToolUseDelta(ToolUseDelta):
    """A ``ToolUseDelta`` with the provider's frames it ends."""

    frames: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class RelayedBlockStop(BlockStop):
    """A ``BlockStop`` with the provider's frames it ends."""

    frames: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class RelayedMessageStop(MessageStop):
    """A ``MessageStop`` with the provider's frames it ends (OpenAI: the usage chunk and ``[DONE]``)."""

    frames: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class RelayedOpaqueBlock(OpaqueBlock):
    """An ``OpaqueBlock`` piece with the provider's frames it ends."""

    frames: tuple[str, ...] = ()


_RELAYED: dict[type, type] = {
    TextDelta: RelayedTextDelta,
    ThinkingDelta: RelayedThinkingDelta,
    ToolUseStart: RelayedToolUseStart,
    ToolUseDelta: RelayedToolUseDelta,
    BlockStop: RelayedBlockStop,
    MessageStop: RelayedMessageStop,
    OpaqueBlock: RelayedOpaqueBlock,
}
_RELAYED_TYPES = (
    RelayedTextDelta,
    RelayedThinkingDelta,
    RelayedToolUseStart,
    RelayedToolUseDelta,
    RelayedBlockStop,
    RelayedMessageStop,
    RelayedOpaqueBlock,
)


@icontract.ensure(lambda event, result: result is None or isinstance(event, _RELAYED_TYPES))
def relayed_frames(event: StreamEvent) -> tuple[str, ...] | None:
    """The provider frames ``event`` carries; None when it was not read for a relay (then it is encoded)."""
    return event.frames if isinstance(event, _RELAYED_TYPES) else None


_FIELDS: dict[type, tuple[str, ...]] = {base: tuple(f.name for f in fields(base)) for base in _RELAYED}


def _with_frames(event: StreamEvent, frames: tuple[str, ...]) -> StreamEvent:
    if isinstance(event, _RELAYED_TYPES):
        return replace(event, frames=frames)
    base = type(event)
    if base not in _RELAYED:  # a subclass (another decoder's): its neutral values only
        base = next((b for b in _RELAYED if isinstance(event, b)), base)
    relayed = _RELAYED.get(base)
    if relayed is None:
        return event  # a StreamError: never relayed
    values: dict[str, Any] = {name: getattr(event, name) for name in _FIELDS[base]}
    result: StreamEvent = relayed(**values, frames=frames)
    return result


@icontract.ensure(lambda event, result: isinstance(event, StreamError) is (result is event))
@icontract.ensure(lambda event, frames, result: isinstance(event, StreamError) or relayed_frames(result) == frames)
def with_frames(event: StreamEvent, frames: tuple[str, ...]) -> StreamEvent:
    """``event``'s neutral values carrying ``frames`` (a ``StreamError`` is never relayed: returned as is)."""
    return _with_frames(event, frames)


@icontract.ensure(
    lambda caller, provider, event, result: not result or (caller is provider and caller in RELAY_PROTOCOLS),
    "only a stream of the caller's own protocol is relayed",
)
def relays(caller: WireFormat, provider: WireFormat | None, event: StreamEvent) -> bool:
    """Whether a stream whose first event is ``event``, from a provider of ``provider``'s protocol, is
    relayed to a caller of ``caller``'s shape (else its events are encoded in the caller's shape)."""
    return caller is provider and caller in RELAY_PROTOCOLS and relayed_frames(event) is not None


def _data_of(frame: str) -> str:
    lines = frame.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return "\n".join(line[5:].removeprefix(" ") for line in lines if line.startswith("data:"))


_EMPTY_CHOICES = re.compile(r'"choices"\s*:\s*\[\s*\]')


def _usage_only(frame: str) -> bool:
    if '"usage"' not in frame or _EMPTY_CHOICES.search(frame) is None:  # cheap: no other chunk has both
        return False
    try:
        payload = json.loads(_data_of(frame))
    except (ValueError, RecursionError):
        return False  # not this rule's business: the decoder has judged the frame
    return isinstance(payload, dict) and payload.get("choices") == [] and isinstance(payload.get("usage"), dict)


@icontract.ensure(lambda frame, result: not result or '"usage"' in frame)
def is_usage_only_chunk(frame: str) -> bool:
    """Whether an OpenAI SSE ``frame`` is the usage-only chunk (``choices: []`` and a ``usage`` object)."""
    return _usage_only(frame)


def _relay_frame(protocol: WireFormat, frame: str, caller_usage: bool) -> str:
    if protocol is WireFormat.OPENAI_CHAT and not caller_usage and _usage_only(frame):
        return ""
    return frame


@icontract.ensure(lambda frame, result: result in (frame, ""), "a frame is relayed as sent, or not at all")
@icontract.ensure(
    lambda protocol, frame, caller_usage, result: (
        result == frame or (protocol is WireFormat.OPENAI_CHAT and not caller_usage and is_usage_only_chunk(frame))
    ),
    "only the usage chunk the router asked for, and the caller did not, is held back",
)
def relay_frame(protocol: WireFormat, frame: str, *, caller_usage: bool) -> str:
    """What the caller gets of one provider ``frame`` of ``protocol``: the frame as sent, or nothing.

    ``caller_usage``: the caller asked for the stream's usage itself (OpenAI's
    ``stream_options.include_usage``; an Anthropic stream always has it).
    """
    return _relay_frame(protocol, frame, caller_usage)


def _attach(events: list[StreamEvent], frames: tuple[str, ...]) -> tuple[list[StreamEvent], tuple[str, ...]]:
    carrier = next((i for i in range(len(events) - 1, -1, -1) if not isinstance(events[i], StreamError)), None)
    out = [_with_frames(e, frames if i == carrier else ()) for i, e in enumerate(events)]
    return out, (frames if carrier is None else ())


def _frames_out(events: list[StreamEvent]) -> tuple[str, ...]:
    return tuple(f for e in events for f in (relayed_frames(e) or ()))


@icontract.require(
    lambda events: all(relayed_frames(e) is None for e in events),
    "the events are fresh from a decoder: none carries frames yet",
)
@icontract.ensure(
    lambda events, frames, result: _frames_out(result[0]) + result[1] == _frames_out(events) + frames,
    "every frame goes with exactly one event, in order, or waits",
)
@icontract.ensure(lambda events, result: len(result[0]) == len(events))
@icontract.ensure(
    lambda result: all(isinstance(e, StreamError) or relayed_frames(e) is not None for e in result[0]),
    "every event of a relayed stream says so (a frameless one carries ())",
)
@icontract.ensure(
    lambda events, result: not result[1] or all(isinstance(e, StreamError) for e in events),
    "frames wait only when their event batch has nothing to carry them",
)
def attach_frames(events: list[StreamEvent], frames: tuple[str, ...]) -> tuple[list[StreamEvent], tuple[str, ...]]:
    """``events`` (what one frame, and the frames waiting before it, produced) as relayed events, ``frames``
    given to the last of them that is not a ``StreamError`` (the others carry none); and the frames still
    waiting (none such: all of them).

    The last, so a frame that closes a text block and opens a tool call (OpenAI) is held back with the
    tool call, never relayed before the tool block closes.
    """
    return _attach(events, frames)
