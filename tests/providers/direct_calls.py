"""A provider call straight through ``post_json`` or ``stream_events`` on a given client, reduced to
what a test compares: shared by the direct-path and the environment-proxy tests."""

from __future__ import annotations

import asyncio

import httpx

from routeproof.core.formats.sse import StreamDecoder, WireProtocol
from routeproof.errors import ProviderCallFailed
from routeproof.providers._http import post_json
from routeproof.providers._stream import stream_events

__all__ = ["_outcome", "_streamed"]


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
