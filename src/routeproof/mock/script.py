"""What a mock server does with one request: the ``Scripted`` step, and its JSON form for the control API."""

from __future__ import annotations

import base64
import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields

__all__ = ["CutMode", "MockScriptError", "Scripted", "Shape", "StreamItem", "step_from_json", "step_to_json"]


class Shape(enum.Enum):
    """The wire shape a mock server speaks."""

    ANTHROPIC = "anthropic"  # POST /v1/messages
    OPENAI = "openai"  # POST /v1/chat/completions (or /chat/completions)
    BEDROCK = "bedrock"  # POST /model/{modelId}/converse and /converse-stream
    AZURE = "azure"  # POST /openai/deployments/{deployment}/chat/completions?api-version=... (mock/variants.py)
    GEMINI = "gemini"  # POST /v1beta/openai/chat/completions (mock/variants.py)


class CutMode(enum.Enum):
    """How a connection ends once ``cut_after_bytes`` bytes of the response have been written."""

    RESET = "reset"  # RST (SO_LINGER 0, then transport.abort()): the client sees a reset
    CLOSE = "close"  # clean FIN after the bytes are flushed: the client sees an early EOF
    STALL = "stall"  # stop writing and keep the socket open until the client gives up


class MockScriptError(ValueError):
    """A scripted step (Python or JSON) is not valid; the message names the offending value."""


# One explicit stream item: raw bytes/str are written verbatim as one chunk; a mapping is an event
# ``{"event": name, "data": dict | str}`` encoded for the shape (SSE, or AWS event-stream for Bedrock,
# where ``"message_type": "exception"`` makes an in-band exception event).
StreamItem = bytes | str | Mapping[str, object]


@dataclass(frozen=True, slots=True, kw_only=True)
class Scripted:
    """One scripted response. The defaults answer with the shape's well-formed default.

    ``body`` None means the default body for the shape (a success answer for 2xx, the shape's error
    JSON otherwise); a dict is JSON-encoded. ``stream_events`` not None forces a streamed answer with
    exactly those items; None streams the default events when the request asked for a stream
    (and ``body`` is None and the status is 2xx).
    """

    status: int = 200
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes | str | Mapping[str, object] | None = None
    delay_before_headers_s: float = 0.0
    stream_events: tuple[StreamItem, ...] | None = None
    delay_between_chunks_s: float = 0.0
    cut_after_bytes: int | None = None
    cut_mode: CutMode = CutMode.RESET
    malformed_body: bool = False
    hang: bool = False
    hang_after_headers: bool = False
    close_connection: bool = False
    cut_after_items: int | None = None  # streamed answers: end the connection (``cut_mode``) after N items
    # an OpenAI-shape mock's POST /v1/responses performs this step instead: the same answer in the
    # Responses API's shape (the conformance runner renders both; None: this step, on every route)
    on_responses: Scripted | None = None

    def __post_init__(self) -> None:
        if not 100 <= self.status <= 599:
            raise MockScriptError(f"status must be in 100..599, got {self.status!r}")
        if self.delay_before_headers_s < 0 or self.delay_between_chunks_s < 0:
            raise MockScriptError(
                f"delays must be >= 0, got {self.delay_before_headers_s!r} / {self.delay_between_chunks_s!r}"
            )
        if self.cut_after_bytes is not None and self.cut_after_bytes < 0:
            raise MockScriptError(f"cut_after_bytes must be >= 0, got {self.cut_after_bytes!r}")
        if self.cut_after_items is not None and self.cut_after_items < 0:
            raise MockScriptError(f"cut_after_items must be >= 0, got {self.cut_after_items!r}")
        for pair in self.headers:
            if len(pair) != 2 or not all(isinstance(p, str) for p in pair):
                raise MockScriptError(f"headers must be (name, value) string pairs, got {pair!r}")
            if any(c in p for p in pair for c in "\r\n"):
                raise MockScriptError(f"header contains CR/LF: {pair!r}")


_FIELD_NAMES = frozenset(f.name for f in fields(Scripted))


def _headers_from_json(value: object) -> tuple[tuple[str, str], ...]:
    if isinstance(value, Mapping):
        return tuple((str(k), str(v)) for k, v in value.items())
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        pairs: list[tuple[str, str]] = []
        for pair in value:
            if not isinstance(pair, Sequence) or isinstance(pair, str) or len(pair) != 2:
                raise MockScriptError(f"header pair must be [name, value], got {pair!r}")
            pairs.append((str(pair[0]), str(pair[1])))
        return tuple(pairs)
    raise MockScriptError(f"headers must be an object or a list of pairs, got {value!r}")


def _stream_item_from_json(value: object) -> StreamItem:
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        if "b64" in value:
            return base64.b64decode(str(value["b64"]))
        return {str(k): v for k, v in value.items()}
    raise MockScriptError(f"stream event must be a string or an object, got {value!r}")


def _number(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise MockScriptError(f"{name} must be a number, got {value!r}")
    return float(value)


def _flag(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise MockScriptError(f"{name} must be true or false, got {value!r}")
    return value


def step_from_json(data: object) -> Scripted:
    """Build a step from its JSON object (the control API). Keys are the field names of ``Scripted``.

    ``body`` may be an object (JSON-encoded), a string, or absent; ``body_b64`` gives raw bytes.
    ``stream_events`` items are strings (sent verbatim), ``{"event": ..., "data": ...}`` objects or
    ``{"b64": ...}`` raw bytes.
    """
    if not isinstance(data, Mapping):
        raise MockScriptError(f"a step must be a JSON object, got {data!r}")
    unknown = set(data) - _FIELD_NAMES - {"body_b64"}
    if unknown:
        raise MockScriptError(f"unknown step keys {sorted(unknown)!r}; known: {sorted(_FIELD_NAMES)!r}")
    kwargs: dict[str, object] = {}
    for key, value in data.items():
        if key == "status":
            if isinstance(value, bool) or not isinstance(value, int):
                raise MockScriptError(f"status must be an integer, got {value!r}")
            kwargs["status"] = value
        elif key == "headers":
            kwargs["headers"] = _headers_from_json(value)
        elif key == "body":
            if value is not None and not isinstance(value, str | Mapping):
                raise MockScriptError(f"body must be an object, a string or null, got {value!r}")
            kwargs["body"] = value
        elif key == "body_b64":
            kwargs["body"] = base64.b64decode(str(value))
        elif key in {"delay_before_headers_s", "delay_between_chunks_s"}:
            kwargs[key] = _number(key, value)
        elif key == "stream_events":
            if value is None:
                kwargs[key] = None
            elif isinstance(value, list):
                kwargs[key] = tuple(_stream_item_from_json(v) for v in value)
            else:
                raise MockScriptError(f"stream_events must be a list or null, got {value!r}")
        elif key in {"cut_after_bytes", "cut_after_items"}:
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise MockScriptError(f"{key} must be an integer or null, got {value!r}")
            kwargs[key] = value
        elif key == "on_responses":
            kwargs[key] = None if value is None else step_from_json(value)
        elif key == "cut_mode":
            try:
                kwargs[key] = CutMode(value)
            except ValueError as exc:
                raise MockScriptError(f"cut_mode must be one of {[m.value for m in CutMode]!r}, got {value!r}") from exc
        else:
            kwargs[key] = _flag(key, value)
    try:
        return Scripted(**kwargs)  # type: ignore[arg-type]  # values were checked key by key above
    except TypeError as exc:
        raise MockScriptError(f"invalid step {data!r}: {exc}") from exc


def _stream_item_to_json(item: StreamItem) -> object:
    if isinstance(item, bytes):
        return {"b64": base64.b64encode(item).decode("ascii")}
    if isinstance(item, str):
        return item
    return dict(item)


def step_to_json(step: Scripted) -> dict[str, object]:
    """The JSON object for a step (inverse of ``step_from_json``)."""
    out: dict[str, object] = {
        "status": step.status,
        "headers": [list(p) for p in step.headers],
        "delay_before_headers_s": step.delay_before_headers_s,
        "stream_events": None if step.stream_events is None else [_stream_item_to_json(i) for i in step.stream_events],
        "delay_between_chunks_s": step.delay_between_chunks_s,
        "cut_after_bytes": step.cut_after_bytes,
        "cut_mode": step.cut_mode.value,
        "malformed_body": step.malformed_body,
        "hang": step.hang,
        "hang_after_headers": step.hang_after_headers,
        "close_connection": step.close_connection,
        "cut_after_items": step.cut_after_items,
    }
    if step.on_responses is not None:
        out["on_responses"] = step_to_json(step.on_responses)
    if isinstance(step.body, bytes):
        out["body_b64"] = base64.b64encode(step.body).decode("ascii")
    else:
        out["body"] = None if step.body is None else (step.body if isinstance(step.body, str) else dict(step.body))
    return out
