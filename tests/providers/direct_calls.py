"""A provider call straight through ``post_json`` or ``stream_events`` on a given client, reduced to
what a test compares, and a loopback server that answers with canned bytes: shared by the
direct-path, the environment-proxy and the answer-head tests."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx

from routeproof.core.formats.sse import StreamDecoder, WireProtocol
from routeproof.errors import ProviderCallFailed
from routeproof.providers._http import post_json
from routeproof.providers._stream import stream_events

__all__ = ["_canned", "_outcome", "_response", "_streamed"]


async def _outcome(client: httpx.AsyncClient, url: str) -> object:
    """What post_json gives: the reply's status, body and rate headers, or the failure."""
    loop = asyncio.get_running_loop()
    try:
        reply = await post_json(
            client, url, content=b'{"model":"m"}', headers={"authorization": "Bearer sk-1"},
            timeout_at=loop.time() + 5, secrets=("sk-1",), max_response_bytes=4096,
        )  # fmt: skip
    except ProviderCallFailed as exc:
        return exc.failure
    headers = reply.headers
    return reply.status, reply.body, headers.get("x-request-id"), headers.get("X-Ratelimit-Remaining-Requests")


async def _streamed(client: httpx.AsyncClient, url: str, idle_timeout_s: float = 5.0, within_s: float = 5) -> object:
    """What stream_events gives: the events, or the failure raised before the first."""
    loop = asyncio.get_running_loop()
    events = stream_events(
        client, url, content=b'{"model":"m","stream":true}', headers={"authorization": "Bearer sk-1"},
        timeout_at=loop.time() + within_s, decoder=StreamDecoder(WireProtocol.OPENAI), secrets=("sk-1",),
        idle_timeout_s=idle_timeout_s, max_error_bytes=4096,
    )  # fmt: skip
    try:
        return [event async for event in events]
    except ProviderCallFailed as exc:
        return exc.failure


@asynccontextmanager
async def _canned(answer: bytes | tuple[bytes, ...], stall_s: float = 0.0) -> AsyncIterator[tuple[str, list[bytes]]]:
    """A loopback server answering every request with ``answer`` (its pieces ``stall_s`` apart, and
    ``stall_s`` after the last, closing); yields its URL and the requests it read (head and body)."""
    seen: list[bytes] = []
    writers: list[asyncio.StreamWriter] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writers.append(writer)
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        length = next((int(line[15:]) for line in lines if line.lower().startswith(b"content-length:")), 0)
        seen.append(head + await reader.readexactly(length))
        for piece in (answer,) if isinstance(answer, bytes) else answer:
            writer.write(piece)
            await writer.drain()
            await asyncio.sleep(stall_s)
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        async with server:
            yield f"http://127.0.0.1:{port}/v1/chat/completions", seen
    finally:
        for writer in writers:  # a handler still pausing (stall_s) is cut off with its connection
            writer.close()
        await asyncio.sleep(0)


def _response(status: str, body: bytes, *headers: str) -> bytes:
    head = [f"HTTP/1.1 {status}", "content-type: application/json", f"content-length: {len(body)}", *headers]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body
