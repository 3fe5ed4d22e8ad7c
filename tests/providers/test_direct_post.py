"""The direct path (transport.direct_post): a POST on routeproof's own aiohttp transport skips httpx's
client only when the client would add nothing, and then sends the same request and reaches the same
outcome, answer or failure, as ``client.send`` over the same transport does."""

from __future__ import annotations

import asyncio
import gzip
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
import pytest

from routeproof.errors import ProviderCallFailed
from routeproof.providers._http import post_json
from routeproof.transport import Transport, direct_post, make_client

pytestmark = pytest.mark.asyncio
URL = httpx.URL("http://127.0.0.1:9/v1/chat/completions")
ANSWER = json.dumps({"id": "x", "choices": []}).encode()


async def _noop_hook(_: object) -> None:
    return None


def _subclass_client() -> httpx.AsyncClient:
    class Logged(httpx.AsyncClient):
        pass

    return Logged(transport=make_client(Transport.AIOHTTP)._transport)


async def test_the_direct_path_is_taken_only_when_httpx_would_add_nothing() -> None:
    plain = make_client(Transport.AIOHTTP)
    assert direct_post(plain, URL) is not None
    changed = {
        "the httpx transport": make_client(Transport.HTTPX),
        "auth": make_client(Transport.AIOHTTP),
        "cookies": make_client(Transport.AIOHTTP),
        "a request hook": make_client(Transport.AIOHTTP),
        "a response hook": make_client(Transport.AIOHTTP),
        "redirects followed": make_client(Transport.AIOHTTP),
        "a subclass": _subclass_client(),
    }
    changed["auth"].auth = ("user", "pass")
    changed["cookies"].cookies.set("session", "1")
    changed["a request hook"].event_hooks = {"request": [_noop_hook]}
    changed["a response hook"].event_hooks = {"response": [_noop_hook]}
    changed["redirects followed"].follow_redirects = True
    own = make_client(Transport.AIOHTTP)._transport
    mounts = {"http://127.0.0.1": httpx.AsyncHTTPTransport()}
    changed["a mount for the URL"] = httpx.AsyncClient(transport=own, mounts=mounts)
    taken = [name for name, client in changed.items() if direct_post(client, URL) is not None]
    for client in (plain, *changed.values()):
        await client.aclose()
    assert taken == []


@asynccontextmanager
async def _canned(answer: bytes) -> AsyncIterator[tuple[str, list[bytes]]]:
    """A loopback server answering every request with ``answer`` (then closing); yields its URL and the
    requests it read (head and body)."""
    seen: list[bytes] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        length = next((int(line[15:]) for line in lines if line.lower().startswith(b"content-length:")), 0)
        seen.append(head + await reader.readexactly(length))
        writer.write(answer)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        yield f"http://127.0.0.1:{port}/v1/chat/completions", seen


def _response(status: str, body: bytes, *headers: str) -> bytes:
    head = [f"HTTP/1.1 {status}", "content-type: application/json", f"content-length: {len(body)}", *headers]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


ANSWERS = {
    "200": _response("200 OK", ANSWER, "x-request-id: req-1", "x-ratelimit-remaining-requests: 7"),
    "200 gzip": _response("200 OK", gzip.compress(ANSWER), "content-encoding: gzip"),
    "200 not JSON": _response("200 OK", b"<html>oops</html>"),
    "200 over the cap": _response("200 OK", b'{"pad": "' + b"x" * 5000 + b'"}'),
    "200 gzip over the cap": _response("200 OK", gzip.compress(b"[" + b"0," * 5000 + b"0]"), "content-encoding: gzip"),
    "200 bad gzip": _response("200 OK", b"not gzip at all", "content-encoding: gzip"),
    "429 retry-after": _response("429 Too Many Requests", b'{"error": {"message": "slow down"}}', "retry-after: 3"),
    "400 context": _response("400 Bad Request", b'{"error": {"message": "maximum context length is 8192 tokens"}}'),
    "503 latin-1": (
        b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=latin-1\r\ncontent-length: 4\r\n\r\n"
        b"caf\xe9"
    ),
    "cut in the body": b'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 500\r\n\r\n{"id": ',
}


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


def _normalised(request: bytes) -> tuple[list[bytes], bytes]:
    head, body = request.split(b"\r\n\r\n", 1)
    lines = head.split(b"\r\n")
    headers = sorted(line.split(b":", 1)[0].lower() + b":" + line.split(b":", 1)[1].strip() for line in lines[1:])
    return [lines[0], *headers], body


@pytest.mark.parametrize("answer", list(ANSWERS))
async def test_the_direct_path_sends_and_reaches_what_client_send_does(answer: str) -> None:
    """The same request bytes (headers in any order) and the same outcome, answer or failure, as
    through ``client.send`` on the same aiohttp transport (a no-op hook turns the direct path off)."""
    direct = make_client(Transport.AIOHTTP)
    through_httpx = make_client(Transport.AIOHTTP)
    through_httpx.event_hooks = {"request": [_noop_hook]}
    assert direct_post(direct, URL) is not None
    assert direct_post(through_httpx, URL) is None
    async with _canned(ANSWERS[answer]) as (url, seen):
        got = await _outcome(direct, url)
        expected = await _outcome(through_httpx, url)
    await direct.aclose()
    await through_httpx.aclose()
    assert got == expected
    assert _normalised(seen[0]) == _normalised(seen[1])


@pytest.mark.parametrize("transport", [Transport.AIOHTTP, Transport.HTTPX], ids=lambda t: t.value)
async def test_routeproofs_own_clients_keep_no_cookie(transport: Transport) -> None:
    """A provider's Set-Cookie (Cloudflare's on OpenAI's API) is neither kept nor sent back: one client
    serves every tenant, and a kept cookie would turn the direct path off for good."""
    answer = _response("200 OK", ANSWER, "set-cookie: __cf_bm=tenant-a; path=/; HttpOnly", "connection: close")
    client = make_client(transport)
    async with _canned(answer) as (url, seen):
        await client.post(url, content=b"{}")  # through httpx's client: it extracts cookies
        await client.post(url, content=b"{}")
    kept = list(client.cookies.jar)
    still_direct = direct_post(client, URL) is not None
    await client.aclose()
    assert kept == []
    assert b"cookie" not in seen[1].lower().split(b"\r\n\r\n", 1)[0].replace(b"set-cookie", b"")
    assert still_direct is (transport is Transport.AIOHTTP)
