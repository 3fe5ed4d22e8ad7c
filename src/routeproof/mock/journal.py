"""The request journal: one frozen ``JournalEntry`` per request a mock server received."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["SECRET_HEADERS", "JournalEntry", "entry_to_json", "parse_json_body", "public_headers"]

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
