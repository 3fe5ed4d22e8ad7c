"""The direct path (transport.direct_post): a POST on routeproof's own aiohttp transport skips httpx's
client only when the client would add nothing, and then sends the same request and reaches the same
outcome, answer or failure, as ``client.send`` over the same transport does."""

from __future__ import annotations

import gzip
import json

import httpx
import pytest

from routeproof.core.types import AttemptFailure, AttemptFailureKind
from routeproof.providers._stream import DirectStreamed, _open
from routeproof.transport import Transport, direct_post, make_client
from tests.providers.direct_calls import _canned, _outcome, _response, _streamed

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
    # not UTF-8: httpx reads the head as Latin-1 ("café"), aiohttp's own headers hold a surrogate
    "200 Latin-1 header": _response("200 OK", ANSWER).replace(b"\r\n\r\n", b"\r\nx-request-id: caf\xe9\r\n\r\n", 1),
}


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


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
@pytest.mark.parametrize("transport", [Transport.AIOHTTP, Transport.HTTPX], ids=lambda t: t.value)
async def test_routeproofs_own_clients_keep_no_cookie(transport: Transport, host: str) -> None:
    """A provider's Set-Cookie (Cloudflare's on OpenAI's API) is neither kept nor sent back, through
    httpx's client or on the direct path: one client serves every tenant, and a kept cookie would turn
    the direct path off for good. A host by name, too: aiohttp's own cookie jar keeps no cookie for an
    IP address, so a loopback URL alone would hide a jar that keeps api.openai.com's."""
    answer = _response("200 OK", ANSWER, "set-cookie: __cf_bm=tenant-a; path=/; HttpOnly", "connection: close")
    client = make_client(transport)
    async with _canned(answer) as (loopback, seen):
        named = loopback.replace("127.0.0.1", host)
        await client.post(named, content=b"{}")  # through httpx's client: it extracts cookies
        await client.post(named, content=b"{}")
        await _outcome(client, named)  # the direct path, on the aiohttp transport
    kept = list(client.cookies.jar)
    still_direct = direct_post(client, URL) is not None
    await client.aclose()
    assert kept == []
    for request in seen[1:]:
        assert b"cookie" not in request.lower().split(b"\r\n\r\n", 1)[0].replace(b"set-cookie", b"")
    assert still_direct is (transport is Transport.AIOHTTP)


def _chunk(event: dict[str, object]) -> bytes:
    return b"data: " + json.dumps(event).encode() + b"\n\n"


def _delta(delta: dict[str, object], finish: str | None = None) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return _chunk({"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [choice]})


SSE_BODY = _delta({"role": "assistant", "content": "Hi"}) + _delta({"content": " there"}) + _delta({}, "stop")
SSE_BODY += b"data: [DONE]\n\n"
FIRST_EVENT = _delta({"role": "assistant", "content": "Hi"})


def _sse(status: str, body: bytes, *headers: str) -> bytes:
    head = [f"HTTP/1.1 {status}", "content-type: text/event-stream", f"content-length: {len(body)}", *headers]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def _chunked(body: bytes, pieces: int) -> bytes:
    size = -(-len(body) // pieces)
    parts = [body[i : i + size] for i in range(0, len(body), size)]
    framed = b"".join(f"{len(p):x}\r\n".encode() + p + b"\r\n" for p in parts) + b"0\r\n\r\n"
    return b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n" + framed


STREAMS = {
    "200": _sse("200 OK", SSE_BODY, "x-ratelimit-remaining-requests: 7"),
    "200 chunked": _chunked(SSE_BODY, 3),
    "200 gzip": _sse("200 OK", gzip.compress(SSE_BODY), "content-encoding: gzip"),
    "200 cut after the first event": _sse("200 OK", FIRST_EVENT).replace(
        f"content-length: {len(FIRST_EVENT)}".encode(), b"content-length: 900"
    ),
    "200 no event before the end": _sse("200 OK", b": keep-alive\n\n"),
    "200 in-band error first": _sse("200 OK", _chunk({"error": {"message": "overloaded", "type": "server_error"}})),
    "200 no terminator": _sse("200 OK", FIRST_EVENT),
    "429 retry-after": _response("429 Too Many Requests", b'{"error": {"message": "slow down"}}', "retry-after: 3"),
    "400 context": _response("400 Bad Request", b'{"error": {"message": "maximum context length is 8192 tokens"}}'),
    "503 latin-1": ANSWERS["503 latin-1"],
    "503 gzip over the cap": _response("503 Service Unavailable", gzip.compress(b"x" * 9000), "content-encoding: gzip"),
}


@pytest.mark.parametrize("answer", list(STREAMS))
async def test_a_stream_on_the_direct_path_sends_and_yields_what_client_send_does(answer: str) -> None:
    """Streams skip httpx's client too: the same request bytes, and the same events or failure, as
    through ``client.send`` on the same aiohttp transport."""
    direct = make_client(Transport.AIOHTTP)
    through_httpx = make_client(Transport.AIOHTTP)
    through_httpx.event_hooks = {"request": [_noop_hook]}
    sent_direct: list[int] = []
    original = DirectStreamed.__init__

    def counted(self: DirectStreamed, *args: object) -> None:
        sent_direct.append(1)
        original(self, *args)  # type: ignore[arg-type]

    async with _canned(STREAMS[answer]) as (url, seen):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(DirectStreamed, "__init__", counted)
            got = await _streamed(direct, url)
            expected = await _streamed(through_httpx, url)
    await direct.aclose()
    await through_httpx.aclose()
    assert sent_direct == [1]  # the first went direct, the second through httpx's client
    assert got == expected
    assert _normalised(seen[0]) == _normalised(seen[1])


@pytest.mark.parametrize("value", [b"req-1", b"caf\xc3\xa9", b"caf\xe9"], ids=["ASCII", "UTF-8", "Latin-1"])
async def test_a_stream_on_the_direct_path_reads_its_headers_as_httpx_does(value: bytes) -> None:
    """A streamed answer's headers on the direct path read the bytes as ``client.send``'s do."""
    direct = make_client(Transport.AIOHTTP)
    through_httpx = make_client(Transport.AIOHTTP)
    through_httpx.event_hooks = {"request": [_noop_hook]}
    answer = _sse("200 OK", SSE_BODY, "x-ratelimit-remaining-requests: 7").replace(
        b"\r\n\r\n", b"\r\nx-request-id: " + value + b"\r\n\r\n", 1
    )
    got: list[tuple[object, object]] = []
    async with _canned(answer) as (url, _):
        for client in (direct, through_httpx):
            streamed = await _open(client, url, {}, b"{}", 5.0)
            got.append((streamed.headers.get("x-request-id"), streamed.headers.get("x-ratelimit-remaining-requests")))
            await streamed.aclose()
    await direct.aclose()
    await through_httpx.aclose()
    assert got[0] == got[1]
    assert got[0][1] == "7"


async def test_a_stream_that_stalls_on_the_direct_path_ends_as_it_does_through_httpx() -> None:
    """The idle timeout after the first event: the same interruption either way."""
    direct = make_client(Transport.AIOHTTP)
    through_httpx = make_client(Transport.AIOHTTP)
    through_httpx.event_hooks = {"request": [_noop_hook]}
    async with _canned(_sse("200 OK", FIRST_EVENT).replace(b"content-length", b"x-pad"), stall_s=1.0) as (url, _):
        got = await _streamed(direct, url, idle_timeout_s=0.2)
        expected = await _streamed(through_httpx, url, idle_timeout_s=0.2)
    await direct.aclose()
    await through_httpx.aclose()
    assert got == expected
    assert isinstance(got, list)
    assert "no data for 0.2s" in repr(got[-1])


async def test_a_stream_on_the_direct_path_may_outlast_its_first_event_bound() -> None:
    """After the first event only the idle timeout bounds a read, as through httpx (``read=None``):
    a pause longer than the attempt's first-event bound does not cut the stream."""
    direct = make_client(Transport.AIOHTTP)
    rest = SSE_BODY[len(FIRST_EVENT) :]
    head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
    answer = (head + f"content-length: {len(SSE_BODY)}\r\n\r\n".encode() + FIRST_EVENT, rest)
    async with _canned(answer, stall_s=0.6) as (url, _):
        got = await _streamed(direct, url, within_s=0.3)
    await direct.aclose()
    assert isinstance(got, list)
    assert not [event for event in got if "interrupted" in repr(event)]
    assert "there" in repr(got)


@pytest.mark.parametrize("transport", [Transport.AIOHTTP, Transport.HTTPX], ids=lambda t: t.value)
async def test_a_declared_length_over_the_cap_is_refused_before_the_body_is_read(transport: Transport) -> None:
    """``content-length: 10000`` against a 4,096-byte cap: INVALID_RESPONSE at once, naming the declared
    size, though only 8 bytes of the body ever come (the server then stalls): no byte is waited for."""
    head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 10000\r\n\r\n"
    client = make_client(transport)
    async with _canned((head, b'{"pad": '), stall_s=2.0) as (url, _seen):
        got = await _outcome(client, url)
    await client.aclose()
    assert isinstance(got, AttemptFailure)
    assert got.kind is AttemptFailureKind.INVALID_RESPONSE
    assert "body of 10000 bytes is over the 4096-byte cap" in got.message  # refused on the head alone
