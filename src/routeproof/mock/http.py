"""A small HTTP/1.1 codec for the mock servers: read one request, format response heads and chunks.

Hand-written (not http.server, not h11) because the mock needs byte-level control of what it writes:
delay the head, drip chunks, cut the socket after exactly N bytes.
"""

from __future__ import annotations

import asyncio
import http
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["LAST_CHUNK", "BadRequest", "HttpRequest", "encode_chunk", "read_request", "response_head"]

MAX_BODY_BYTES = 16 * 1024 * 1024
LAST_CHUNK = b"0\r\n\r\n"


class BadRequest(Exception):
    """The peer sent bytes that are not an HTTP/1.1 request we can serve; answered with 400."""


@dataclass(frozen=True, slots=True, kw_only=True)
class HttpRequest:
    """One parsed request. Header names are lower-cased; order and duplicates are kept."""

    method: str
    target: str
    version: str
    headers: tuple[tuple[str, str], ...]
    body: bytes

    def header(self, name: str) -> str | None:
        """The first value of header ``name`` (lower-case), if present."""
        return next((v for k, v in self.headers if k == name), None)

    @property
    def keep_alive(self) -> bool:
        """Whether the connection may carry another request after this one."""
        tokens = {t.strip().lower() for t in (self.header("connection") or "").split(",")}
        if self.version == "HTTP/1.0":
            return "keep-alive" in tokens
        return "close" not in tokens


async def read_request(reader: asyncio.StreamReader) -> HttpRequest | None:
    """Read one request; None when the peer closed the connection cleanly before sending a byte."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as exc:
        if not exc.partial.strip():
            return None
        raise BadRequest(f"connection closed inside the request head: {exc.partial[:80]!r}") from exc
    except asyncio.LimitOverrunError as exc:
        raise BadRequest(f"request head longer than {exc.consumed!r} bytes") from exc
    lines = head.decode("latin-1").split("\r\n")
    request_line = lines[0].split(" ")
    if len(request_line) != 3 or not request_line[2].startswith("HTTP/1."):
        raise BadRequest(f"bad request line {lines[0]!r}")
    method, target, version = request_line
    headers: list[tuple[str, str]] = []
    for line in lines[1:]:
        if not line:
            continue
        name, sep, value = line.partition(":")
        if not sep or not name or name != name.strip():
            raise BadRequest(f"bad header line {line!r}")
        headers.append((name.lower(), value.strip()))
    req = HttpRequest(method=method, target=target, version=version, headers=tuple(headers), body=b"")
    body = await _read_body(reader, req)
    return HttpRequest(method=method, target=target, version=version, headers=tuple(headers), body=body)


async def _read_body(reader: asyncio.StreamReader, req: HttpRequest) -> bytes:
    if "chunked" in (req.header("transfer-encoding") or "").lower():
        return await _read_chunked(reader)
    length_text = req.header("content-length")
    if length_text is None:
        return b""
    if not length_text.isdigit() or int(length_text) > MAX_BODY_BYTES:
        raise BadRequest(f"bad content-length {length_text!r}")
    try:
        return await reader.readexactly(int(length_text))
    except asyncio.IncompleteReadError as exc:
        raise BadRequest(f"body ended after {len(exc.partial)!r} of {length_text} bytes") from exc


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    body = bytearray()
    try:
        while True:
            size_line = (await reader.readuntil(b"\r\n")).split(b";", 1)[0].strip()
            try:
                size = int(size_line, 16)
            except ValueError as exc:
                raise BadRequest(f"bad chunk size {size_line!r}") from exc
            if size == 0:
                while (await reader.readuntil(b"\r\n")) != b"\r\n":  # trailers
                    pass
                return bytes(body)
            body += await reader.readexactly(size)
            if await reader.readexactly(2) != b"\r\n" or len(body) > MAX_BODY_BYTES:
                raise BadRequest("bad chunk framing or body too large")
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError) as exc:
        raise BadRequest("connection closed inside a chunked body") from exc


def _reason(status: int) -> str:
    if status == 529:
        return "Overloaded"
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return "Unknown"


def response_head(status: int, headers: Iterable[tuple[str, str]]) -> bytes:
    """The status line and header block, ending with the blank line."""
    lines = [f"HTTP/1.1 {status} {_reason(status)}"]
    lines += [f"{name}: {value}" for name, value in headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def encode_chunk(data: bytes) -> bytes:
    """One chunk of a ``Transfer-Encoding: chunked`` body (never the zero-size last chunk)."""
    return f"{len(data):x}\r\n".encode("ascii") + data + b"\r\n"
