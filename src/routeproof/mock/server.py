"""``MockProviderServer``: one scriptable mock provider on a real loopback socket."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import json
import socket
import struct
import time
from types import TracebackType

from routeproof.mock.control import CONTROL_PREFIX, handle_control
from routeproof.mock.features import Asks, asked, enrich_body, enrich_stream
from routeproof.mock.http import LAST_CHUNK, BadRequest, HttpRequest, encode_chunk, read_request, response_head
from routeproof.mock.journal import Bill, JournalEntry, parse_json_body, public_headers, reported_usage
from routeproof.mock.rate_headers import MockRateLimit, RateWindow
from routeproof.mock.responses import ResponsesBook, ResponsesTurn, UnknownPrevious, is_responses_path, responses_view
from routeproof.mock.script import CutMode, Scripted, Shape
from routeproof.mock.shapes import (
    RequestView,
    auth_failure_status,
    auth_present,
    default_body,
    default_stream,
    encode_stream_item,
    error_answer,
    malformed_body,
    malformed_stream,
    match_route,
    request_id,
    request_id_headers,
    stream_content_type,
)

__all__ = ["MockProviderServer"]

_Piece = tuple[float, bytes]  # (delay before writing, bytes)
_STOP_GRACE_S = 0.1  # how long stop() lets aborted connections end on their own before cancelling them


class MockProviderServer:
    """A mock LLM provider speaking one wire ``Shape`` on ``127.0.0.1`` (an ephemeral port by default).

    Each provider request takes the next ``Scripted`` step from a FIFO queue (``script``), or the
    default step (``set_default``) when the queue is empty. Every provider request is journaled.
    With ``require_auth`` (the default) a request without the shape's credentials gets the shape's
    401 (and an Anthropic request without ``anthropic-version`` a 400) without consuming a step.
    """

    def __init__(
        self,
        shape: Shape,
        *,
        name: str = "",
        host: str = "127.0.0.1",
        port: int = 0,
        default: Scripted | None = None,
        require_auth: bool = True,
        rate_limit: MockRateLimit | None = None,
    ) -> None:
        self.shape = shape
        self.name = name or shape.value
        self._host = host
        self._requested_port = port
        self._initial_default = default if default is not None else Scripted()
        self._default = self._initial_default
        self.require_auth = require_auth
        self._queue: collections.deque[Scripted] = collections.deque()
        self._journal: list[JournalEntry] = []
        self._bills: list[Bill] = []
        self._connections = 0
        self._served = 0  # provider requests answered: the serial of each request id
        self._server: asyncio.Server | None = None
        self._port: int | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()
        self._journal_grew = asyncio.Event()
        self._stopping = asyncio.Event()  # set by stop(): a scripted delay in progress ends at once
        self.responses = ResponsesBook()  # the OpenAI shape's stored Responses (mock/responses.py)
        self.rate_window: RateWindow | None = None if rate_limit is None else RateWindow(rate_limit, shape)

    # -- lifecycle -------------------------------------------------------------------------------

    async def start(self) -> None:
        """Bind and start accepting connections."""
        if self._server is not None:
            raise RuntimeError(f"mock server {self.name!r} is already started")
        self._stopping = asyncio.Event()
        self._server = await asyncio.start_server(self._on_connection, self._host, self._requested_port)
        self._port = int(self._server.sockets[0].getsockname()[1])

    async def stop(self) -> None:
        """Stop listening, end every open connection and wait for their tasks; idempotent."""
        server, self._server = self._server, None
        if server is None:
            return
        server.close()
        # Abort every connection first: an idle keep-alive connection (the normal state of a pooled
        # client's) then ends its task by EOF, and one in a scripted delay ends it at once (_pause).
        # Only tasks still busy after that are cancelled: Python 3.11's StreamReaderProtocol logs
        # "Exception in callback" for a cancelled handler.
        self._stopping.set()
        for writer in tuple(self._writers):
            writer.transport.abort()
        tasks = tuple(self._tasks)
        if tasks:
            _, busy = await asyncio.wait(tasks, timeout=_STOP_GRACE_S)
            for task in busy:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        await server.wait_closed()

    async def __aenter__(self) -> MockProviderServer:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    # -- the scripting surface ----------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The bound TCP port (after ``start``)."""
        if self._port is None:
            raise RuntimeError(f"mock server {self.name!r} is not started")
        return self._port

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>``: the base URL to configure a provider client with."""
        return f"http://{self._host}:{self.port}"

    @property
    def bills(self) -> tuple[Bill, ...]:
        """The usage the mock reported for each request it answered, in order (``journal.Bill``)."""
        return tuple(self._bills)

    @property
    def journal(self) -> tuple[JournalEntry, ...]:
        """Every provider request received so far, oldest first."""
        return tuple(self._journal)

    @property
    def connections_accepted(self) -> int:
        """TCP connections accepted since start (or the last reset), control connections included."""
        return self._connections

    @property
    def pending(self) -> int:
        """Scripted steps not yet used."""
        return len(self._queue)

    @property
    def default(self) -> Scripted:
        """The step used when the queue is empty."""
        return self._default

    async def wait_for_requests(self, count: int) -> None:
        """Return once the journal holds at least ``count`` entries (wrap it in ``asyncio.timeout``)."""
        while len(self._journal) < count:
            event = self._journal_grew
            await event.wait()

    def script(self, *steps: Scripted) -> None:
        """Append steps to the FIFO queue; each provider request uses the next one."""
        for step in steps:
            if not isinstance(step, Scripted):
                raise TypeError(f"expected Scripted steps, got {step!r}")
        self._queue.extend(steps)

    def set_default(self, step: Scripted) -> None:
        """Set the step used whenever the queue is empty."""
        if not isinstance(step, Scripted):
            raise TypeError(f"expected a Scripted step, got {step!r}")
        self._default = step

    def reset(self) -> None:
        """Empty the queue and the journal, restore the initial default step, zero the connection count."""
        self._queue.clear()
        self._journal.clear()
        self._bills.clear()
        self.responses.clear()
        self._default = self._initial_default
        self._connections = 0

    # -- connections ---------------------------------------------------------------------------

    async def _on_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None  # always inside the task asyncio.start_server created
        self._tasks.add(task)
        self._writers.add(writer)
        self._connections += 1
        connection_id = self._connections
        try:
            while True:
                try:
                    request = await read_request(reader)
                except BadRequest as exc:
                    await self._send_json(writer, 400, {"error": str(exc)}, keep_alive=False)
                    return
                if request is None or not await self._serve(request, connection_id, reader, writer):
                    return
        except ConnectionError:
            return  # the client went away; nothing to answer
        finally:
            self._tasks.discard(task)
            self._writers.discard(writer)
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    async def _serve(
        self, req: HttpRequest, connection_id: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> bool:
        """Answer one request; True when the connection stays open for another."""
        if req.target.startswith(CONTROL_PREFIX):
            status, payload = handle_control(self, req.method, req.target, req.body)
            return await self._send_json(writer, status, payload, keep_alive=req.keep_alive)
        body = parse_json_body(req.body)
        if self.shape is Shape.OPENAI and is_responses_path(req.target):
            return await self._serve_responses(req, connection_id, body, reader, writer)
        view = match_route(self.shape, req.method, req.target, body)
        self._record(req, connection_id, body, view)
        self._served += 1
        rid = request_id(self.shape, self._served)
        if isinstance(view, int):
            message = f"no route for {req.method} {req.target} on a {self.shape.value} mock"
            return await self._send_error(writer, view, message, keep_alive=req.keep_alive, rid=rid)
        if self.require_auth and not auth_present(self.shape, dict(req.headers)):
            status = auth_failure_status(self.shape)
            return await self._send_error(
                writer, status, "missing or malformed credentials", keep_alive=req.keep_alive, rid=rid
            )
        if self.require_auth and self.shape is Shape.ANTHROPIC and req.header("anthropic-version") is None:
            return await self._send_error(
                writer, 400, "anthropic-version header is required", keep_alive=req.keep_alive, rid=rid
            )
        step = self._queue.popleft() if self._queue else self._default
        if self.rate_window is not None:  # the provider's own limit, in its headers (mock/rate_headers.py)
            allowed, limit_headers = self.rate_window.take(time.time())
            if allowed:
                step = dataclasses.replace(step, headers=(*limit_headers, *step.headers))
            else:
                step = Scripted(status=429, headers=(*limit_headers, ("retry-after", "1")))
        return await self._perform(step, view, req, reader, writer, rid=rid)

    async def _serve_responses(
        self,
        req: HttpRequest,
        connection_id: int,
        body: object,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> bool:
        """``POST /v1/responses`` (mock/responses.py): OpenAI's Responses API with its store in memory."""
        request = body if isinstance(body, dict) else {}
        self._served += 1
        rid = request_id(self.shape, self._served)
        refused = 405 if req.method != "POST" else None
        if refused is None and self.require_auth and not auth_present(self.shape, dict(req.headers)):
            refused = auth_failure_status(self.shape)
        if refused is not None:
            self._record(req, connection_id, body, refused)
            message = "POST only" if refused == 405 else "missing or malformed credentials"
            return await self._send_error(writer, refused, message, keep_alive=req.keep_alive, rid=rid)
        try:
            turn = self.responses.turn(request, self._served)
        except UnknownPrevious as unknown:
            self._record(req, connection_id, body, unknown.status)
            return await self._send_json(writer, unknown.status, unknown.answer, keep_alive=req.keep_alive)
        view = responses_view(request, turn)
        self._record(req, connection_id, body, view)
        step = self._queue.popleft() if self._queue else self._default
        step = step.on_responses or step  # the scripted answer in this API's own shape, when it has one
        if step.body is None and step.stream_events is None and 200 <= step.status < 300:
            self.responses.keep(turn)  # the answer is the turn's own: a later previous_response_id finds it
        return await self._perform(step, view, req, reader, writer, rid=rid, turn=turn)

    def _record(self, req: HttpRequest, connection_id: int, body: object, view: RequestView | int) -> None:
        headers = dict(req.headers)
        self._journal.append(
            JournalEntry(
                index=len(self._journal),
                connection_id=connection_id,
                arrived_monotonic_s=time.monotonic(),
                arrived_wall_s=time.time(),
                method=req.method,
                path=req.target,
                headers=public_headers(req.headers),
                traceparent=headers.get("traceparent"),
                tracestate=headers.get("tracestate"),
                auth_present=auth_present(self.shape, headers),
                body_json=body,
                body_size=len(req.body),
                body_text=req.body.decode("utf-8", "replace"),
                model=None if isinstance(view, int) else view.model,
                stream=False if isinstance(view, int) else view.stream,
            )
        )
        self._journal_grew.set()  # wake every waiter, then arm a fresh event for the next request
        self._journal_grew = asyncio.Event()

    # -- performing a step ---------------------------------------------------------------------

    async def _perform(
        self,
        step: Scripted,
        view: RequestView,
        req: HttpRequest,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        *,
        rid: str,
        turn: ResponsesTurn | None = None,
    ) -> bool:
        if step.hang:
            await _wait_for_eof(reader)
            return False
        keep_alive = req.keep_alive and not step.close_connection
        asks = asked(self.shape, parse_json_body(req.body))  # thinking, cache, reasoning, logprobs (features.py)
        items = self._stream_items(step, view, asks, turn)
        scripted_names = {name.lower() for name, _ in step.headers}
        # A request id on every JSON answer (success or error), as the APIs send it. Streamed answers
        # keep their head byte-for-byte as before: scripted cuts (cut_after_bytes) count head bytes.
        ids = () if items is not None else request_id_headers(self.shape, rid)
        headers = [*(h for h in ids if h[0].lower() not in scripted_names), *step.headers]
        if not keep_alive:
            headers.append(("connection", "close"))
        pieces: list[_Piece] = []
        if items is None:
            content_type, payload = self._body(step, view, rid, asks, turn)
            extra = () if step.body is not None or step.status < 400 else self._error_headers(step.status)
            head = [("content-type", content_type), ("content-length", str(len(payload))), *extra, *headers]
            pieces = [(step.delay_before_headers_s, response_head(step.status, head)), (0.0, payload)]
        else:
            content_type = stream_content_type(self.shape)
            head = [("content-type", content_type), ("transfer-encoding", "chunked"), ("cache-control", "no-cache")]
            pieces = [(step.delay_before_headers_s, response_head(step.status, [*head, *headers]))]
            chunks = [encode_chunk(i) for i in items if i] + [LAST_CHUNK]
            pieces += [(step.delay_between_chunks_s if n else 0.0, c) for n, c in enumerate(chunks)]
            if step.cut_after_items is not None:  # the items, then the cut: no terminating chunk
                pieces = pieces[: 1 + step.cut_after_items]
                if await _emit(writer, reader, pieces, step, self._stopping):
                    await _cut(writer, reader, step.cut_mode)
                self._bill(step, pieces, streamed=True, cut=True)
                return False
        if step.hang_after_headers:
            pieces = pieces[:1]
        emitted = await _emit(writer, reader, pieces, step, self._stopping)
        self._bill(step, pieces, streamed=items is not None)
        if not emitted:
            return False
        if step.hang_after_headers:
            await _wait_for_eof(reader)
            return False
        return keep_alive

    def _bill(self, step: Scripted, pieces: list[_Piece], *, streamed: bool, cut: bool = False) -> None:
        """Journal the usage this answer reported in the bytes it wrote (up to ``cut_after_bytes``); an
        answer whose writing was interrupted (the server stopped while it waited) leaves no bill."""
        sent, limit, whole = [], step.cut_after_bytes, not cut and not step.hang_after_headers
        written = 0
        for _, data in pieces[1:] if streamed else pieces[1:2]:
            if limit is not None and written + len(data) + len(pieces[0][1]) >= limit:
                whole = False
                break
            sent.append(data)
            written += len(data)
        if limit is not None and len(pieces[0][1]) >= limit:
            sent, whole = [], False
        items = [_unchunk(d) for d in sent] if streamed else []
        body = sent[0] if sent and not streamed else None
        usage = reported_usage(body, items) if 200 <= step.status < 300 else ()
        self._bills.append(Bill(index=len(self._journal) - 1, status=step.status, usage=usage, complete=whole))

    def _stream_items(
        self, step: Scripted, view: RequestView, asks: Asks, turn: ResponsesTurn | None = None
    ) -> tuple[bytes, ...] | None:
        """The encoded stream items to send, or None for a Content-Length answer."""
        if step.malformed_body:
            return malformed_stream(self.shape, view) if view.stream else None
        if step.stream_events is not None:
            return tuple(encode_stream_item(self.shape, i) for i in step.stream_events)
        if view.stream and step.body is None and 200 <= step.status < 300 and turn is not None:
            return tuple(encode_stream_item(self.shape, i) for i in turn.events())
        if view.stream and step.body is None and 200 <= step.status < 300:
            events = enrich_stream(self.shape, asks, default_stream(self.shape, view))
            return tuple(encode_stream_item(self.shape, i) for i in events)
        return None

    def _body(
        self, step: Scripted, view: RequestView, rid: str, asks: Asks, turn: ResponsesTurn | None = None
    ) -> tuple[str, bytes]:
        if step.malformed_body:
            return "application/json", malformed_body(self.shape, view)
        body = step.body
        if body is None:
            if step.status < 300 and turn is not None:
                return "application/json", json.dumps(turn.body()).encode()
            if step.status < 300:
                answer_body = enrich_body(self.shape, asks, default_body(self.shape, view))
                return "application/json", json.dumps(answer_body).encode()
            answer, _ = error_answer(self.shape, step.status, f"scripted HTTP {step.status}", request_id=rid)
            return "application/json", json.dumps(answer).encode()
        if isinstance(body, bytes):
            return "application/octet-stream", body
        if isinstance(body, str):
            return "text/plain; charset=utf-8", body.encode()
        return "application/json", json.dumps(dict(body)).encode()

    def _error_headers(self, status: int) -> tuple[tuple[str, str], ...]:
        return error_answer(self.shape, status, "")[1]

    async def _send_error(
        self, writer: asyncio.StreamWriter, status: int, message: str, *, keep_alive: bool, rid: str
    ) -> bool:
        answer, extra = error_answer(self.shape, status, message, request_id=rid)
        extra = (*request_id_headers(self.shape, rid), *extra)
        return await self._send_json(writer, status, answer, keep_alive=keep_alive, extra=extra)

    async def _send_json(
        self,
        writer: asyncio.StreamWriter,
        status: int,
        payload: object,
        *,
        keep_alive: bool,
        extra: tuple[tuple[str, str], ...] = (),
    ) -> bool:
        data = json.dumps(payload).encode()
        head = [("content-type", "application/json"), ("content-length", str(len(data))), *extra]
        if not keep_alive:
            head.append(("connection", "close"))
        writer.write(response_head(status, head) + data)
        await writer.drain()
        return keep_alive


def _unchunk(data: bytes) -> bytes:
    """The payload of one HTTP/1.1 chunk (``<hex>\\r\\n<payload>\\r\\n``); the last chunk is empty."""
    _, _, rest = data.partition(b"\r\n")
    return rest[:-2] if rest.endswith(b"\r\n") else rest


async def _pause(delay_s: float, stopping: asyncio.Event) -> None:
    """Sleep ``delay_s``; when the server stops first, end the connection's work (as a client that
    went away does) instead of waiting to be cancelled."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(delay_s):
            await stopping.wait()
    if stopping.is_set():
        raise ConnectionAbortedError("the mock server is stopping")


async def _emit(
    writer: asyncio.StreamWriter,
    reader: asyncio.StreamReader,
    pieces: list[_Piece],
    step: Scripted,
    stopping: asyncio.Event,
) -> bool:
    """Write the pieces with their delays; False when ``cut_after_bytes`` ended the connection."""
    written = 0
    limit = step.cut_after_bytes
    for delay_s, data in pieces:
        if delay_s > 0:
            await _pause(delay_s, stopping)
        if limit is not None and written + len(data) >= limit:
            writer.write(data[: limit - written])
            await writer.drain()
            await _cut(writer, reader, step.cut_mode)
            return False
        writer.write(data)
        await writer.drain()
        written += len(data)
    return True


async def _cut(writer: asyncio.StreamWriter, reader: asyncio.StreamReader, mode: CutMode) -> None:
    if mode is CutMode.STALL:
        await _wait_for_eof(reader)
        return
    if mode is CutMode.CLOSE:
        writer.close()
        return
    for _ in range(100):  # let the transport hand every written byte to the kernel before the reset
        if writer.transport.get_write_buffer_size() == 0:
            break
        await asyncio.sleep(0.001)
    sock = writer.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


async def _wait_for_eof(reader: asyncio.StreamReader) -> None:
    """Read and drop whatever the client sends until it closes the connection."""
    while await reader.read(65536):
        pass
