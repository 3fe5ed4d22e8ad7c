"""Run the gateway on uvicorn: bind, serve until SIGINT/SIGTERM, then shut down gracefully.

On a signal uvicorn stops accepting connections, lets in-flight calls and streams finish for the
configured grace period (``[gateway] grace_period_ms``), then cancels what is left: a cancelled
stream ends with an SSE error event, a cancelled call cancels its router call. Then the lifespan
shutdown closes the router's providers and HTTP client.
"""

from __future__ import annotations

import math
import socket

import uvicorn

from routeproof.gateway.app import GatewayApp
from routeproof.gateway.backend import Backend
from routeproof.gateway.telemetry import MetricsSource

__all__ = ["KEEP_ALIVE_S", "bind", "make_server"]

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


def make_server(backend: Backend, *, metrics_reader: MetricsSource | None = None) -> uvicorn.Server:
    """A uvicorn server for ``backend``; ``/metrics`` prints what ``metrics_reader`` holds."""
    app = GatewayApp(backend, metrics_reader=metrics_reader)
    config = uvicorn.Config(
        app,
        lifespan="on",
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=math.ceil(backend.settings.grace_period_ms / 1000),  # uvicorn takes whole seconds
        server_header=False,
        # SDK clients pool connections; uvicorn's default 5 s idle close races a pooled client's next
        # request (the benchmark at 100 in flight saw ReadError). 65 s outlives the usual 60 s LB idle.
        timeout_keep_alive=KEEP_ALIVE_S,
    )
    return uvicorn.Server(config)
