"""Incremental, sans-I/O decoding of provider SSE streams into :data:`StreamEvent` values.

Bytes go in, split anywhere (inside a UTF-8 character, between ``\\r`` and ``\\n``); events come
out. Layer 1 follows the WHATWG event-stream rules (BOM, CR/LF/CRLF line ends, comments, multi-line
``data``, a field with no colon, ``id`` and ``retry``; an unterminated last event is discarded).
Layer 2 maps each dispatched event per protocol with small module functions over a per-stream state.

Guarantees: a stream that ends without its terminator (Anthropic ``message_stop``, OpenAI
``[DONE]``) ends in a ``StreamError`` whose message starts with ``"stream incomplete"``, never in a
``MessageStop``; a tool call whose accumulated arguments are not a JSON object is a ``StreamError``;
malformed event JSON is a ``StreamError``, not an exception; after a ``StreamError`` or
``MessageStop`` nothing more is emitted.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Sequence

import icontract

from routeproof.core.errors import InvalidResponse
from routeproof.core.formats.normalize import assemble_response
from routeproof.core.formats.relay import _attach  # attach_frames without its per-event run-time checks
from routeproof.core.formats.sse_dialects import (
    INCOMPLETE,
    AnthropicState,
    EventShapeError,
    OpenAIState,
    WireProtocol,
    map_event,
    reported_usage,
)
from routeproof.core.formats.wire import as_json_object, compact_json
from routeproof.core.types import (
    MessageStop,
    ProviderKind,
    ProviderResponse,
    StreamError,
    StreamEvent,
    TextDelta,
    ToolCall,
    ToolUseDelta,
    ToolUseStart,
    Usage,
)

__all__ = ["MAX_LINE_CHARS", "StreamDecoder", "WireProtocol", "fold_events"]

_EOL = re.compile(r"\r\n|\r|\n")
MAX_LINE_CHARS = 8 * 1024 * 1024
"""The default cap on one SSE line and on one event's data (characters): a stream over it is a StreamError."""


# --- the decoder ---------------------------------------------------------------------------------------


def _well_formed(result: list[StreamEvent]) -> bool:
    """At most one terminal event (MessageStop or StreamError), and only as the last one."""
    terminal = [i for i, e in enumerate(result) if isinstance(e, MessageStop | StreamError)]
    return not terminal or terminal == [len(result) - 1]


class StreamDecoder:
    """One stream's decoder: ``feed`` bytes as they arrive, ``finish`` at end of body. No I/O, no clock.

    With ``keep_frames`` (a same-protocol relay) each event's own text goes with the events it
    produced (``Relayed*`` events, :func:`routeproof.core.formats.relay.attach_frames`): the frames
    of all events joined are the body as received, but a leading BOM and what follows the terminator.
    """

    def __init__(
        self, protocol: WireProtocol, *, max_line_chars: int | None = MAX_LINE_CHARS, keep_frames: bool = False
    ) -> None:
        self.protocol = protocol
        self.last_event_id = ""
        self.retry_ms: int | None = None
        if max_line_chars is not None and max_line_chars < 1:
            raise ValueError(f"max_line_chars must be >= 1 or None, got {max_line_chars!r}")
        self.max_line_chars = max_line_chars
        self._utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pending: list[str] = []  # the pieces of the line not yet ended, joined once at its end
        self._pending_chars = 0
        self._data_chars = 0
        self._carry_cr = False  # the last text ended in "\r", which may be the first half of "\r\n"
        self._started = False
        self._event_type = ""
        self._data: list[str] = []
        self._done = False
        self._anthropic = AnthropicState()
        self._openai = OpenAIState()
        # keep_frames: each event's own text (its lines and line ends) goes with the events it produced
        # (core/formats/relay.py), for a same-protocol relay; off, nothing of it is kept
        self._keep_frames = keep_frames
        self._raw: list[str] = []  # the current event's lines, each with its line end
        self._waiting: tuple[str, ...] = ()  # frames that produced no event yet

    @property
    def done(self) -> bool:
        """Whether a MessageStop or StreamError has been emitted."""
        return self._done

    @property
    def reported_usage(self) -> Usage | None:
        """The final usage the provider has reported so far (billed even if the stream is then cut)."""
        return reported_usage(self.protocol, self._anthropic, self._openai)

    # The contracts sit on the text-level methods: ``feed``/``finish`` only UTF-8-decode and delegate,
    # so every call is still checked at run time, while CrossHair (whose symbolic model of the
    # incremental UTF-8 decoder raises IndexError inside its own codec code) checks the str layer.

    def feed(self, chunk: bytes) -> list[StreamEvent]:
        """The events completed by ``chunk`` (split anywhere, even inside a UTF-8 character)."""
        return self.feed_text(self._utf8.decode(chunk))

    def finish(self) -> list[StreamEvent]:
        """The end of the body: a StreamError("stream incomplete...") unless the terminator was seen."""
        return self.finish_text(self._utf8.decode(b"", final=True))

    @icontract.ensure(_well_formed)
    def feed_text(self, text: str) -> list[StreamEvent]:
        """The events completed by ``text``: the already-decoded form of :meth:`feed`.

        Use one of ``feed`` and ``feed_text`` per stream: ``feed`` may hold back the bytes of a
        split UTF-8 character that ``feed_text`` would not see.
        """
        return self._lines(text, final=False)

    @icontract.ensure(_well_formed)
    def finish_text(self, text: str = "") -> list[StreamEvent]:
        """The end of the body after its last ``text``; the already-decoded form of :meth:`finish`."""
        events = self._lines(text, final=True)
        if not self._done:
            self._done = True
            events.append(StreamError(message=f"{INCOMPLETE}: the body ended before the terminator"))
        return events

    def _lines(self, text: str, *, final: bool) -> list[StreamEvent]:
        # Linear in the stream length: only the new text is searched for line ends, and the pieces
        # of a line that spans many chunks are joined once, when it ends (never re-scanned).
        if self._done:
            return []
        if not self._started and text:
            self._started = True
            text = text.removeprefix("\ufeff")
        if self._carry_cr:
            text, self._carry_cr = "\r" + text, False
        events: list[StreamEvent] = []
        position = 0
        while not self._done:
            match = _EOL.search(text, position)
            if match is None:
                break
            if match.group() == "\r" and match.end() == len(text) and not final:
                self._carry_cr = True  # a lone trailing \r may be the first half of \r\n
                break
            events += self._ended_line(text[position : match.start()], match.group())
            position = match.end()
        if self._done:
            self._pending, self._pending_chars = [], 0
            return events
        rest = text[position : len(text) - 1 if self._carry_cr else len(text)]
        if rest:
            self._pending.append(rest)
            self._pending_chars += len(rest)
            if self.max_line_chars is not None and self._pending_chars > self.max_line_chars:
                events.append(self._too_long(self._pending_chars))
        return events

    def _too_long(self, chars: int) -> StreamError:
        self._done = True
        self._pending, self._pending_chars, self._data = [], 0, []
        return StreamError(message=f"SSE line or event longer than {self.max_line_chars} characters ({chars}+)")

    def _ended_line(self, piece: str, eol: str) -> list[StreamEvent]:
        if self._pending:
            self._pending.append(piece)
            line = "".join(self._pending)
            self._pending, self._pending_chars = [], 0
        else:
            line = piece
        if self.max_line_chars is not None and len(line) > self.max_line_chars:
            return [self._too_long(len(line))]
        if self._keep_frames:
            self._raw.append(line + eol)
        return self._line(line)

    def _line(self, line: str) -> list[StreamEvent]:
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return []
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            self._event_type = value
        elif name == "data":
            self._data.append(value)
            self._data_chars += len(value) + 1
            if self.max_line_chars is not None and self._data_chars > self.max_line_chars:
                return [self._too_long(self._data_chars)]
        elif name == "id" and "\0" not in value:
            self.last_event_id = value
        elif name == "retry" and value.isascii() and value.isdigit():
            self.retry_ms = int(value)
        return []

    def _dispatch(self) -> list[StreamEvent]:
        events = self._events()
        if self._keep_frames:
            frame, self._raw = "".join(self._raw), []
            events, self._waiting = _attach(events, (*self._waiting, frame))  # relay.attach_frames' rule
        return events

    def _events(self) -> list[StreamEvent]:
        data, self._data, self._data_chars = self._data, [], 0
        event_type, self._event_type = self._event_type or "message", ""
        if not data or not "".join(data).strip():
            return []  # an event whose data is empty carries nothing (a keep-alive); WHATWG would still fire it
        try:
            events = map_event(self.protocol, self._anthropic, self._openai, event_type, "\n".join(data))
        except (EventShapeError, InvalidResponse, ValueError) as exc:
            events = [StreamError(message=f"malformed {event_type} event: {exc}")]
        if events and isinstance(events[-1], MessageStop | StreamError):
            self._done = True
        return events


# --- fold ------------------------------------------------------------------------------------------------


def _fold(events: Sequence[StreamEvent], provider: ProviderKind, model: str, response_id: str) -> ProviderResponse:
    texts: list[str] = []
    tools: dict[str, tuple[str, list[str]]] = {}
    stop: MessageStop | None = None
    for event in events:
        if isinstance(event, StreamError):
            raise InvalidResponse(f"stream failed: {event.message}", provider=provider)
        if stop is not None:
            raise InvalidResponse(f"event after MessageStop: {event!r}", provider=provider)
        if isinstance(event, TextDelta):
            texts.append(event.text)
        elif isinstance(event, ToolUseStart):
            tools[event.id] = (event.name, [])
        elif isinstance(event, ToolUseDelta):
            if event.id not in tools:
                raise InvalidResponse(f"tool delta for unknown call {event.id!r}", provider=provider)
            tools[event.id][1].append(event.partial_json)
        elif isinstance(event, MessageStop):
            stop = event
    if stop is None:
        raise InvalidResponse(f"{INCOMPLETE}: no MessageStop", provider=provider)
    calls = []
    for tool_id, (name, parts) in tools.items():
        arguments = as_json_object("".join(parts) or "{}")
        if arguments is None:
            raise InvalidResponse(f"tool call {tool_id!r} arguments are not a JSON object", provider=provider)
        calls.append(ToolCall(id=tool_id, name=name, arguments_json=compact_json(arguments)))
    return assemble_response(
        provider=provider,
        model=model,
        response_id=response_id,
        text="".join(texts),
        tool_calls=tuple(calls),
        finish_reason=stop.stop_reason,
        usage=stop.usage,
    )


@icontract.ensure(lambda provider, response_id, result: result.provider is provider and result.id == response_id)
def fold_events(
    events: Sequence[StreamEvent], *, provider: ProviderKind, model: str, response_id: str = ""
) -> ProviderResponse:
    """The message a finished stream carried; InvalidResponse if it failed or never finished.

    :raises InvalidResponse: naming the field and the provider when the body is not the documented shape.
    """
    return _fold(events, provider, model, response_id)
