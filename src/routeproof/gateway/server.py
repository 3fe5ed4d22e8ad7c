"""Run the gateway on uvicorn: bind, serve until SIGINT/SIGTERM, then shut down gracefully.

On a signal uvicorn stops accepting connections, lets in-flight calls and streams finish for the
configured grace period (``[gateway] grace_period_ms``), then cancels what is left: a cancelled
stream ends with an SSE error event, a cancelled call cancels its router call. Then the lifespan
shutdown closes the router's providers and HTTP client.

Connection hygiene (uvicorn has neither): a connection must deliver a request's headers within
``[gateway] header_timeout_ms`` of opening or of its first byte after an answer, else it is closed
(5,000 half-sent requests used to stay open for good); idle keep-alive connections close after
:data:`KEEP_ALIVE_S`. Past ``[gateway] max_connections`` open connections a new one is answered 503
(JSON, ``Retry-After``) and closed at once, before any of its bytes are read.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import socket
from typing import Any

import uvicorn
from uvicorn.config import HTTP_PROTOCOLS
from uvicorn.importer import import_from_string

from routeproof.clock import s_of_ms
from routeproof.gateway.app import GatewayApp
from routeproof.gateway.backend import Backend
from routeproof.gateway.disconnect import LINK, ClientLink
from routeproof.gateway.telemetry import MetricsSource
from routeproof.gateway.write_batch import BatchedWrites

__all__ = ["KEEP_ALIVE_S", "bind", "guarded_protocol", "make_server"]

KEEP_ALIVE_S = 65
"""How long an idle client connection stays open."""


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket (``port`` 0: an ephemeral one) whose connections have Nagle off.

    ``proto`` must say TCP: asyncio's transports set TCP_NODELAY only on a socket whose ``proto`` is
    IPPROTO_TCP, and accepted sockets copy the listener's, so a ``proto`` 0 listener left Nagle on for
    every client connection whenever uvicorn ran on asyncio's loop rather than uvloop (as the tests
    do). TCP_NODELAY on the listener is inherited by what it accepts on Linux, too.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((host, port))
    sock.listen(2048)
    sock.setblocking(False)
    return sock


_FULL_BODY = json.dumps(
    {"error": {"message": "too many open connections; retry shortly", "type": "server_error", "param": None,
               "code": "too_many_connections"}, "routeproof": {"code": "too_many_connections", "attempts": []}},
    separators=(",", ":"),
).encode()  # fmt: skip
_FULL = (
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\n"
    b"connection: close\r\ncontent-length: " + str(len(_FULL_BODY)).encode() + b"\r\n\r\n" + _FULL_BODY
)


def guarded_protocol(base: type[Any], *, header_timeout_s: float, max_connections: int) -> type[Any]:
    """``base`` (uvicorn's httptools or h11 protocol) with a header-read timeout, a connection cap,
    each loop iteration's writes sent as one (:class:`BatchedWrites`), and (httptools) a
    :class:`ClientLink` in each request's scope, lost with its connection (``disconnect.py``)."""

    class Guarded(base):  # type: ignore[misc]  # subclassing a class typed Any (uvicorn picks it at import)
        _header_timer: asyncio.TimerHandle | None = None

        def _in_request(self) -> bool:
            cycle = self.cycle
            return cycle is not None and not cycle.response_complete

        def _arm(self) -> None:
            if self._header_timer is None:
                self._header_timer = self.loop.call_later(header_timeout_s, self._headers_too_slow)

        def _disarm(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _headers_too_slow(self) -> None:
            self._header_timer = None
            if not self._in_request() and not self.transport.is_closing():
                self.transport.close()

        def connection_made(self, transport: asyncio.Transport) -> None:
            super().connection_made(transport)
            if len(self.connections) > max_connections:
                transport.write(_FULL)
                transport.close()
                return
            self.transport = BatchedWrites(transport, self.loop)  # an answer's head and body: one send
            self._arm()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self._in_request():
                self._disarm()
            else:
                self._arm()  # bytes of a next request: its headers must come within the timeout

        if hasattr(base, "on_message_begin"):  # httptools: each request's scope is made here

            def on_message_begin(self) -> None:
                super().on_message_begin()
                self.scope[LINK] = ClientLink()  # the app learns of a lost connection at once

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            cycle = self.cycle
            super().connection_lost(exc)
            if cycle is not None and not cycle.response_complete:
                link = cycle.scope.get(LINK)
                if link is not None:
                    link.lose()  # cancels the request's task: no provider request starts after this

    Guarded.__name__ = Guarded.__qualname__ = f"Guarded{base.__name__}"
    return Guarded


def make_server(
    backend: Backend, *, metrics_reader: MetricsSource | None = None, log_level: str = "warning"
) -> uvicorn.Server:
    """A uvicorn server for ``backend``; ``/metrics`` prints what ``metrics_reader`` holds; uvicorn's
    loggers at ``log_level`` (``routeproof serve --log-level``)."""
    app = GatewayApp(backend, metrics_reader=metrics_reader)
    settings = backend.settings
    protocol = guarded_protocol(
        import_from_string(HTTP_PROTOCOLS["auto"]),
        header_timeout_s=s_of_ms(settings.header_timeout_ms),
        max_connections=settings.max_connections,
    )
    config = uvicorn.Config(
        app,
        lifespan="on",
        log_level=log_level,
        access_log=False,
        timeout_graceful_shutdown=math.ceil(s_of_ms(backend.settings.grace_period_ms)),  # uvicorn takes whole seconds
        server_header=False,
        # uvicorn's X-Forwarded-* middleware rewrites scope["client"] and "scheme", which the app never
        # reads: one coroutine layer and a header scan per request for nothing
        proxy_headers=False,
        # SDK clients pool connections; uvicorn's default 5 s idle close races a pooled client's next
        # request (the benchmark at 100 in flight saw ReadError). 65 s outlives the usual 60 s LB idle.
        timeout_keep_alive=KEEP_ALIVE_S,
        http=protocol,
    )
    server = uvicorn.Server(config)
    app.shutting_down = lambda: server.should_exit
    logging.getLogger("uvicorn.error").addFilter(_graceful_cut_is_a_warning)  # after Config's dictConfig
    return server


def _graceful_cut_is_a_warning(record: logging.LogRecord) -> bool:
    """uvicorn logs cancelling what outlived the grace period as an ERROR; it is the configured
    behaviour (streams end with an SSE error event, calls with a 503), so it is a WARNING here."""
    if record.levelno == logging.ERROR and str(record.msg).startswith("Cancel %s running task(s)"):
        record.levelno, record.levelname = logging.WARNING, "WARNING"
    return True
