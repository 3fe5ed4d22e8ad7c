"""BatchedWrites: an answer's head reaches the transport with the write after it, anything else at once,
and the protocol the gateway serves with sends an answer's head and body that way."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from uvicorn.config import Config
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState

from routeproof.gateway.server import guarded_protocol
from routeproof.gateway.write_batch import BatchedWrites

pytestmark = pytest.mark.asyncio


class Recording(asyncio.Transport):
    """A transport that records writes and whether it was closed or aborted."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[bytes] = []
        self.closed = False
        self.aborted = False

    def write(self, data: Any) -> None:
        self.writes.append(bytes(data))

    def is_closing(self) -> bool:
        return self.closed or self.aborted

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.aborted = True

    def get_write_buffer_size(self) -> int:
        return 0

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return default

    def pause_reading(self) -> None:
        return None

    def resume_reading(self) -> None:
        return None


async def _next_iteration() -> None:
    await asyncio.sleep(0)
    await asyncio.sleep(0)


HEAD = b"HTTP/1.1 200 OK\r\ncontent-length: 4\r\n\r\n"


async def test_a_head_goes_out_with_the_write_after_it_and_the_rest_at_once() -> None:
    inner = Recording()
    batched = BatchedWrites(inner, asyncio.get_running_loop())
    batched.write(HEAD)
    batched.write(b"")
    assert inner.writes == []
    assert batched.get_write_buffer_size() == len(HEAD)
    batched.writelines([b"bo", bytearray(b"dy")])  # the body: sent at once, with the head
    assert inner.writes == [HEAD + b"bo", b"dy"]
    batched.write(b"data: event\n\n")  # a stream's event: never held
    assert inner.writes[-1] == b"data: event\n\n"


async def test_a_head_with_no_body_in_its_step_goes_out_in_the_next_iteration() -> None:
    inner = Recording()
    batched = BatchedWrites(inner, asyncio.get_running_loop())
    batched.write(HEAD)  # a stream's head, its first event not there yet
    await _next_iteration()
    assert inner.writes == [HEAD]


async def test_close_sends_what_is_held_and_abort_drops_it() -> None:
    closing, aborting, closed_under = Recording(), Recording(), Recording()
    loop = asyncio.get_running_loop()
    first, second, third = (BatchedWrites(inner, loop) for inner in (closing, aborting, closed_under))
    first.write(HEAD)
    first.close()
    second.write(HEAD)
    second.abort()
    third.write(HEAD)
    closed_under.closed = True  # the peer went away before the flush
    await _next_iteration()
    assert (closing.writes, closing.closed) == ([HEAD], True)
    assert (aborting.writes, aborting.aborted) == ([], True)
    assert closed_under.writes == []


def gateway_protocol(base: type[Any], app: Any) -> Any:
    """One connection's protocol as ``routeproof serve`` builds it (``guarded_protocol`` over ``base``)
    serving ``app``; feed it bytes with ``data_received`` over a :class:`Recording` transport."""
    config = Config(app, lifespan="off", access_log=False)
    config.load()
    return guarded_protocol(base, header_timeout_s=5, max_connections=10)(
        config=config, server_state=ServerState(), app_state={}
    )


async def _app(scope: Any, receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
    await send({"type": "http.response.body", "body": b"ok"})


@pytest.mark.parametrize("base", [HttpToolsProtocol, H11Protocol], ids=["httptools", "h11"])
async def test_the_gateway_protocol_sends_an_answer_in_one_write(base: type[Any]) -> None:
    """uvicorn writes the head and the body separately; the gateway's protocol sends them together."""
    protocol = gateway_protocol(base, _app)
    transport = Recording()
    protocol.connection_made(transport)
    protocol.data_received(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
    for _ in range(2):  # the app's task runs; nothing is left for a later iteration
        await asyncio.sleep(0)
    assert len(transport.writes) == 1
    assert transport.writes[0].startswith(b"HTTP/1.1 200 OK\r\n")
    assert transport.writes[0].endswith(b"\r\n\r\nok")
    protocol.connection_lost(None)
