"""Scripted behaviour over real sockets: statuses, delays, drips, cuts, malformed bodies, hangs."""

from __future__ import annotations

import asyncio
import itertools
import json
import time

import httpx
import pytest

from routeproof.mock import CutMode, MockProviderServer, Scripted, Shape
from tests.mock.helpers import PATHS, STREAM_PATHS, TIMEOUT_S, auth_headers, parse_sse, request_body

OPENAI = Shape.OPENAI


def client_for(srv: MockProviderServer, timeout_s: float | httpx.Timeout = TIMEOUT_S) -> httpx.AsyncClient:
    """An httpx client with the server's base URL and credentials."""
    return httpx.AsyncClient(base_url=srv.base_url, headers=auth_headers(srv.shape), timeout=timeout_s)


async def collect(resp: httpx.Response, into: bytearray) -> None:
    """Append every body byte of ``resp`` to ``into`` as it arrives."""
    async for chunk in resp.aiter_bytes():
        into += chunk


@pytest.mark.asyncio
async def test_scripted_429_with_retry_after_then_the_default_answer() -> None:
    """Steps are used in FIFO order; once the queue is empty the default applies."""
    async with MockProviderServer(OPENAI) as srv, client_for(srv) as client:
        srv.script(Scripted(status=429, headers=(("Retry-After", "2"),)), Scripted(status=503))
        first = await client.post(PATHS[OPENAI], json=request_body(OPENAI))
        second = await client.post(PATHS[OPENAI], json=request_body(OPENAI))
        third = await client.post(PATHS[OPENAI], json=request_body(OPENAI))
    assert (first.status_code, second.status_code, third.status_code) == (429, 503, 200)
    assert first.headers["retry-after"] == "2"
    assert first.json()["error"]["code"] == "rate_limit_exceeded"  # as api.openai.com answers (type "requests")


@pytest.mark.asyncio
async def test_set_default_changes_every_unscripted_answer() -> None:
    """set_default applies to every request once the queue is empty."""
    async with MockProviderServer(Shape.ANTHROPIC) as srv, client_for(srv) as client:
        srv.set_default(Scripted(status=529))
        statuses = [(await client.post("/v1/messages", json={})).status_code for _ in range(3)]
        body = (await client.post("/v1/messages", json={})).json()
    assert statuses == [529, 529, 529]
    assert body["error"]["type"] == "overloaded_error"


@pytest.mark.asyncio
async def test_scripted_bodies_dict_str_and_bytes_are_sent_as_given() -> None:
    """A dict body is JSON-encoded; str and bytes bodies are sent verbatim."""
    async with MockProviderServer(OPENAI) as srv, client_for(srv) as client:
        srv.script(Scripted(body={"custom": 1}), Scripted(status=400, body="plain"), Scripted(body=b"\x00\x01"))
        responses = [await client.post(PATHS[OPENAI], json={}) for _ in range(3)]
    assert responses[0].json() == {"custom": 1}
    assert (responses[1].status_code, responses[1].text) == (400, "plain")
    assert responses[2].content == b"\x00\x01"


@pytest.mark.asyncio
async def test_delay_before_headers_delays_the_response() -> None:
    """delay_before_headers_s holds the status line back by about that long."""
    async with MockProviderServer(OPENAI) as srv, client_for(srv) as client:
        srv.script(Scripted(delay_before_headers_s=0.2))
        started = time.monotonic()
        resp = await client.post(PATHS[OPENAI], json={})
        elapsed = time.monotonic() - started
    assert resp.status_code == 200
    assert 0.2 <= elapsed < 2.0


@pytest.mark.asyncio
async def test_delay_between_chunks_drips_the_stream() -> None:
    """Each stream chunk after the first arrives delay_between_chunks_s after the previous one."""
    async with MockProviderServer(OPENAI) as srv, client_for(srv) as client:
        srv.script(
            Scripted(stream_events=("data: a\n\n", "data: b\n\n", "data: [DONE]\n\n"), delay_between_chunks_s=0.1)
        )
        arrivals: list[float] = []
        async with client.stream("POST", PATHS[OPENAI], json={"stream": True}) as resp:
            async for _chunk in resp.aiter_raw():
                arrivals.append(time.monotonic())
    gaps = [b - a for a, b in itertools.pairwise(arrivals)]
    assert len(arrivals) >= 3
    assert all(g >= 0.08 for g in gaps)
    assert arrivals[-1] - arrivals[0] < 2.0


@pytest.mark.asyncio
@pytest.mark.parametrize("cut", [0, 10, 60, 200])
async def test_cut_after_bytes_resets_the_connection(cut: int) -> None:
    """cut_after_bytes (reset mode) makes the client fail with a transport error, whatever N."""
    async with MockProviderServer(Shape.ANTHROPIC) as srv, client_for(srv) as client:
        srv.script(Scripted(cut_after_bytes=cut))
        with pytest.raises((httpx.RemoteProtocolError, httpx.ReadError)):
            await client.post("/v1/messages", json=request_body(Shape.ANTHROPIC))
        after = await client.post("/v1/messages", json={})
    assert after.status_code == 200


@pytest.mark.asyncio
async def test_cut_mid_stream_with_clean_close_delivers_the_prefix_then_fails() -> None:
    """In close mode the client reads the first events, then gets an incomplete-body error."""
    async with MockProviderServer(Shape.ANTHROPIC) as srv, client_for(srv) as client:
        srv.script(Scripted(cut_after_bytes=500, cut_mode=CutMode.CLOSE))
        received = bytearray()
        async with client.stream("POST", "/v1/messages", json=request_body(Shape.ANTHROPIC, stream=True)) as resp:
            assert resp.status_code == 200
            with pytest.raises(httpx.RemoteProtocolError):
                await collect(resp, received)
    assert received.startswith(b"event: message_start")
    assert b"message_stop" not in received


@pytest.mark.asyncio
async def test_cut_with_stall_leaves_the_client_waiting_until_its_timeout() -> None:
    """In stall mode the server stops writing but keeps the socket open: the client times out.

    Only the read is bounded short (0.2 s): with every phase at 0.2 s, a connect or a write delayed
    by a loaded machine would time out as another kind first (the test failed once in a full local
    run at load about 2; not reproduced alone or beside two busy loops)."""
    stall_only = httpx.Timeout(TIMEOUT_S, read=0.2)
    async with MockProviderServer(OPENAI) as srv, client_for(srv, timeout_s=stall_only) as client:
        srv.script(Scripted(cut_after_bytes=30, cut_mode=CutMode.STALL))
        started = time.monotonic()
        with pytest.raises(httpx.ReadTimeout):
            await client.post(PATHS[OPENAI], json={})
    assert time.monotonic() - started < 2.0


@pytest.mark.asyncio
@pytest.mark.parametrize("shape", list(Shape))
async def test_malformed_body_is_a_200_with_broken_json(shape: Shape) -> None:
    """malformed_body answers 200 with a body that is not valid JSON."""
    async with MockProviderServer(shape) as srv, client_for(srv) as client:
        srv.script(Scripted(malformed_body=True))
        resp = await client.post(PATHS[shape], json=request_body(shape))
    assert resp.status_code == 200
    with pytest.raises(json.JSONDecodeError):
        json.loads(resp.content)


@pytest.mark.asyncio
@pytest.mark.parametrize("shape", [Shape.ANTHROPIC, Shape.OPENAI])
async def test_malformed_stream_has_an_event_with_broken_json(shape: Shape) -> None:
    """On a streamed request malformed_body sends valid events, then one whose data is not JSON."""
    async with MockProviderServer(shape) as srv, client_for(srv) as client:
        srv.script(Scripted(malformed_body=True))
        resp = await client.post(STREAM_PATHS[shape], json=request_body(shape, stream=True))
    data = [d for _, d in parse_sse(resp.text)]
    json.loads(data[0])
    with pytest.raises(json.JSONDecodeError):
        json.loads(data[-1])


@pytest.mark.asyncio
async def test_hang_never_answers_until_the_client_gives_up() -> None:
    """hang accepts the request and sends nothing; the client's read timeout fires."""
    async with MockProviderServer(OPENAI) as srv, client_for(srv, timeout_s=0.15) as client:
        srv.script(Scripted(hang=True))
        started = time.monotonic()
        with pytest.raises(httpx.ReadTimeout):
            await client.post(PATHS[OPENAI], json={})
        elapsed = time.monotonic() - started
        assert len(srv.journal) == 1
        assert srv.pending == 0
    assert 0.15 <= elapsed < 2.0


@pytest.mark.asyncio
async def test_hang_after_headers_sends_the_head_and_then_nothing() -> None:
    """hang_after_headers: the client sees status 200 and then times out reading the body."""
    async with MockProviderServer(Shape.ANTHROPIC) as srv, client_for(srv, timeout_s=0.15) as client:
        srv.script(Scripted(hang_after_headers=True))
        async with client.stream("POST", "/v1/messages", json=request_body(Shape.ANTHROPIC, stream=True)) as resp:
            assert resp.status_code == 200
            with pytest.raises(httpx.ReadTimeout):
                await resp.aread()


@pytest.mark.asyncio
async def test_explicit_stream_events_carry_an_in_band_error() -> None:
    """stream_events sends exactly the scripted events, e.g. an Anthropic in-band error event."""
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    async with MockProviderServer(Shape.ANTHROPIC) as srv, client_for(srv) as client:
        srv.script(Scripted(stream_events=({"event": "error", "data": error},)))
        resp = await client.post("/v1/messages", json=request_body(Shape.ANTHROPIC, stream=True))
    assert parse_sse(resp.text) == [("error", json.dumps(error))]


@pytest.mark.asyncio
async def test_keep_alive_reuses_one_connection_and_close_connection_ends_it() -> None:
    """Requests share one TCP connection until a step says close_connection."""
    async with MockProviderServer(OPENAI) as srv, client_for(srv) as client:
        srv.script(Scripted(), Scripted(close_connection=True), Scripted())
        responses = [await client.post(PATHS[OPENAI], json={}) for _ in range(3)]
        conns = [e.connection_id for e in srv.journal]
        accepted = srv.connections_accepted
    assert responses[1].headers["connection"] == "close"
    assert conns == [1, 1, 2]
    assert accepted == 2


@pytest.mark.asyncio
async def test_connections_accepted_counts_every_tcp_connection() -> None:
    """Each fresh client opens one counted connection, even when it sends no request."""
    async with MockProviderServer(OPENAI) as srv:
        for _ in range(3):
            async with client_for(srv) as client:
                await client.post(PATHS[OPENAI], json={})
        _, writer = await asyncio.open_connection("127.0.0.1", srv.port)
        writer.close()
        await writer.wait_closed()
        for _ in range(100):  # the accept callback runs on a later loop turn
            if srv.connections_accepted == 4:
                break
            await asyncio.sleep(0.01)
        assert srv.connections_accepted == 4
        assert len(srv.journal) == 3


@pytest.mark.asyncio
async def test_stop_closes_hanging_connections_and_is_idempotent() -> None:
    """stop() ends connections still waiting in a hang and can be called twice."""
    srv = MockProviderServer(OPENAI, default=Scripted(hang=True))
    await srv.start()
    async with client_for(srv) as client:
        pending = asyncio.create_task(client.post(PATHS[OPENAI], json={}))
        async with asyncio.timeout(TIMEOUT_S):
            await srv.wait_for_requests(1)
        await srv.stop()
        await srv.stop()
        with pytest.raises(httpx.RemoteProtocolError):
            await pending


@pytest.mark.asyncio
async def test_stop_during_a_dripping_stream_ends_it_cleanly() -> None:
    """stop() while a slow stream is being written ends the client's read with a transport error."""
    srv = MockProviderServer(Shape.ANTHROPIC, default=Scripted(delay_between_chunks_s=0.5))
    await srv.start()
    body = request_body(Shape.ANTHROPIC, stream=True)
    async with client_for(srv) as client, client.stream("POST", "/v1/messages", json=body) as resp:
        assert resp.status_code == 200
        await srv.stop()
        with pytest.raises(httpx.RemoteProtocolError):
            await resp.aread()


@pytest.mark.asyncio
async def test_stop_during_a_scripted_delay_ends_it_without_cancelling_the_handler() -> None:
    """stop() while an answer waits out delay_before_headers_s: the handler ends by itself, so the
    loop reports no "Exception in callback" (a cancelled handler's CancelledError on Python 3.11)."""
    loop = asyncio.get_running_loop()
    reported: list[dict[str, object]] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: reported.append(context))
    try:
        srv = MockProviderServer(OPENAI, default=Scripted(delay_before_headers_s=60.0))
        await srv.start()
        async with client_for(srv) as client:
            pending = asyncio.create_task(client.post(PATHS[OPENAI], json=request_body(OPENAI)))
            async with asyncio.timeout(TIMEOUT_S):
                await srv.wait_for_requests(1)
            await srv.stop()
            with pytest.raises(httpx.RemoteProtocolError):
                await pending
        await asyncio.sleep(0)  # a done callback of the handler's task runs on the next turn
    finally:
        loop.set_exception_handler(previous)
    assert reported == []


async def raw_response_size(srv: MockProviderServer) -> int:
    """Bytes (head + body) of the default keep-alive answer, measured on a raw socket."""
    reader, writer = await asyncio.open_connection("127.0.0.1", srv.port)
    try:
        writer.write(
            b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nauthorization: Bearer k\r\ncontent-length: 2\r\n\r\n{}"
        )
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.startswith(b"content-length"))
        await reader.readexactly(length)
        return len(head) + length
    finally:
        writer.close()
        await writer.wait_closed()


@pytest.mark.asyncio
@pytest.mark.parametrize("mode", [CutMode.CLOSE, CutMode.RESET])
async def test_cut_at_every_offset_short_of_the_end_is_a_transport_error(mode: CutMode) -> None:
    """For N across the whole response (every 8th byte and the last), a cut fails the client; N = size does not."""
    async with MockProviderServer(OPENAI) as srv, client_for(srv) as client:
        total = await raw_response_size(srv)
        for n in [*range(0, total, 8), total - 1]:
            srv.script(Scripted(cut_after_bytes=n, cut_mode=mode))
            with pytest.raises((httpx.RemoteProtocolError, httpx.ReadError)):
                await client.post(PATHS[OPENAI], json={})
        srv.script(Scripted(cut_after_bytes=total, cut_mode=mode))
        resp = await client.post(PATHS[OPENAI], json={})
    assert resp.status_code == 200
