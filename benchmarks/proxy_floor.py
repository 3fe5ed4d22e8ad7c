"""The floor under any gateway built like ``routeproof serve``: a bare ASGI proxy on the same stack
(uvicorn with uvloop and httptools, one aiohttp session to the provider) that forwards each request
body to the upstream and relays its answer, streamed or not, doing nothing else: no auth, no parse,
no routing, no retry, no telemetry.

    python -m benchmarks.proxy_floor http://127.0.0.1:PORT     # prints "proxy_floor listening on <url>"

``benchmarks.gateway_ab --floor`` runs it as an arm beside the gateways: what it adds over a direct
call is what the stack itself costs (the extra hop, the server, the client), so the gateway's own
work is the gateway's added time minus this one's. A measurement tool, not a test.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import aiohttp
import uvicorn

from routeproof.gateway.server import bind

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
_RELAYED = ("content-type", "content-length", "content-encoding")


async def read_body(receive: Receive) -> bytes:
    """A request's whole body, however many ``http.request`` messages carry it."""
    body = b""
    while True:
        message = await receive()
        body += bytes(message.get("body", b""))
        if not message.get("more_body"):
            return body


def proxy_to(upstream: str) -> Callable[[Scope, Receive, Send], Awaitable[None]]:
    """The bare proxy's ASGI app: every POST forwarded to ``upstream`` + its path, with the provider
    key the mock accepts."""
    session: list[aiohttp.ClientSession] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        body = await read_body(receive)
        if not session:
            session.append(aiohttp.ClientSession(auto_decompress=False))
        headers = {"content-type": "application/json", "authorization": "Bearer sk-floor"}
        async with session[0].post(upstream + scope["path"], data=body, headers=headers) as answer:
            relayed = [(k.encode(), v.encode()) for k, v in answer.headers.items() if k.lower() in _RELAYED]
            await send({"type": "http.response.start", "status": answer.status, "headers": relayed})
            async for chunk in answer.content.iter_any():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b""})

    return app


def main(argv: list[str] | None = None) -> int:
    """Serve the bare proxy on a free loopback port until terminated."""
    upstream = (argv if argv is not None else sys.argv[1:])[0]
    sock = bind("127.0.0.1", 0)
    config = uvicorn.Config(
        proxy_to(upstream), loop="uvloop", http="httptools", lifespan="off", log_level="warning",
        access_log=False, proxy_headers=False,
    )  # fmt: skip
    print(f"proxy_floor listening on http://127.0.0.1:{sock.getsockname()[1]}", flush=True)
    uvicorn.Server(config).run(sockets=[sock])
    return 0


if __name__ == "__main__":
    sys.exit(main())
