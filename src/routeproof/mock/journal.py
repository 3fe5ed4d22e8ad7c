"""The request journal: one frozen ``JournalEntry`` per request a mock server received."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = [
    "SECRET_HEADERS",
    "Bill",
    "JournalEntry",
    "bill_to_json",
    "entry_to_json",
    "parse_json_body",
    "public_headers",
    "reported_usage",
]

# Headers whose values are credentials: never stored, only "auth present" is recorded.
SECRET_HEADERS = frozenset(
    {"authorization", "x-api-key", "proxy-authorization", "x-amz-security-token", "cookie", "api-key"}
)


@dataclass(frozen=True, slots=True, kw_only=True)
class JournalEntry:
    """One request as the mock server saw it. Secret header values are never kept."""

    index: int  # 0-based position in this server's journal
    connection_id: int  # 1-based serial of the TCP connection the request came on
    arrived_monotonic_s: float  # time.monotonic() when the request head was read
    arrived_wall_s: float  # time.time() at the same moment
    method: str
    path: str
    headers: tuple[tuple[str, str], ...]  # lower-cased names, secrets removed
    traceparent: str | None
    tracestate: str | None
    auth_present: bool
    body_json: object  # the parsed JSON body, or None when absent or not JSON
    body_size: int  # bytes in the request body
    model: str | None  # the model named by the body (or the Bedrock path)
    stream: bool  # whether the request asked for a streamed answer
    body_text: str = ""  # the request body exactly as received (UTF-8, undecodable bytes replaced)

    def header(self, name: str) -> str | None:
        """The first value of header ``name`` (case-insensitive), if it was sent and is not a secret."""
        wanted = name.lower()
        return next((v for k, v in self.headers if k == wanted), None)


def parse_json_body(raw: bytes) -> object:
    """The JSON value of a request body, or None when the body is empty or not JSON."""
    if not raw:
        return None
    try:
        return json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None


def public_headers(headers: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    """The headers worth keeping: every one except those in ``SECRET_HEADERS``."""
    return tuple((k, v) for k, v in headers if k not in SECRET_HEADERS)


def entry_to_json(entry: JournalEntry) -> Mapping[str, object]:
    """The JSON object served by ``GET /_mock/journal``."""
    return {
        "index": entry.index,
        "connection_id": entry.connection_id,
        "arrived_monotonic_s": entry.arrived_monotonic_s,
        "arrived_wall_s": entry.arrived_wall_s,
        "method": entry.method,
        "path": entry.path,
        "headers": [list(p) for p in entry.headers],
        "traceparent": entry.traceparent,
        "tracestate": entry.tracestate,
        "auth_present": entry.auth_present,
        "body": entry.body_json,
        "body_size": entry.body_size,
        "model": entry.model,
        "stream": entry.stream,
        "body_text": entry.body_text,
    }


# --- billing: what the mock reported ------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Bill:
    """The usage a mock reported for one request, as it wrote it: the provider's own field names
    (nested objects flattened with dots: ``cache_creation.ephemeral_1h_input_tokens``), merged over
    the stream's events in order (a later count replaces an earlier one, as Anthropic's cumulative
    ``message_delta`` usage does). ``complete`` is False when the answer was cut or left hanging:
    then ``usage`` holds only what was written before the cut (possibly nothing)."""

    index: int  # the journal entry this bill belongs to
    status: int
    usage: tuple[tuple[str, int], ...]
    complete: bool

    def count(self, name: str) -> int:
        """The reported count ``name`` (0 when the mock reported none)."""
        return dict(self.usage).get(name, 0)


def _flatten(usage: Mapping[str, object], prefix: str = "") -> dict[str, int]:
    flat: dict[str, int] = {}
    for key, value in usage.items():
        if isinstance(value, Mapping):
            flat.update(_flatten(value, f"{prefix}{key}."))
        elif isinstance(value, int) and not isinstance(value, bool):
            flat[f"{prefix}{key}"] = value
    return flat


def _usage_in(obj: object) -> dict[str, int]:
    """The usage object of one JSON body or stream event (Anthropic's message_start nests it)."""
    if not isinstance(obj, Mapping):
        return {}
    found = obj.get("usage")
    message = obj.get("message")
    if found is None and isinstance(message, Mapping):
        found = message.get("usage")
    return _flatten(found) if isinstance(found, Mapping) else {}


def reported_usage(body: bytes | None, items: Sequence[bytes]) -> tuple[tuple[str, int], ...]:
    """The usage written in a JSON ``body`` or in the SSE ``items`` that were sent, merged in order.
    (Bedrock's binary event stream is not read: its streamed bills are empty.)"""
    merged: dict[str, int] = {}
    if body is not None:
        merged.update(_usage_in(parse_json_body(body)))
    for item in items:
        for line in item.decode("utf-8", "replace").splitlines():
            if line.startswith("data:"):
                merged.update(_usage_in(parse_json_body(line[5:].strip().encode())))
    return tuple(sorted(merged.items()))


def bill_to_json(bill: Bill) -> Mapping[str, object]:
    """The JSON object of one bill (``GET /_mock/bills``)."""
    return {"index": bill.index, "status": bill.status, "usage": dict(bill.usage), "complete": bill.complete}
