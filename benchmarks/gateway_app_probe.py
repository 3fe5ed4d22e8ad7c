"""The gateway app's own CPU per request: ``GatewayApp`` called as ASGI in this process, with no
server in front and the router's answer canned (one real call to an in-process mock first), so what
is timed is only auth, tenant lookup, body read, JSON parse, the disconnect watch, the response and
its headers.

    python -O -m benchmarks.gateway_app_probe [--requests 5000]

A/B another checkout's app: ``PYTHONPATH=/tmp/before/src python -O -m benchmarks.gateway_app_probe``
(``git archive main src | tar -x -C /tmp/before``). Prints the CPU per request of the second of two
passes (the first warms). A measurement tool, not a test.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

import uvloop

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from routeproof.core.formats.translate import parse_openai_request
from routeproof.core.types import ChatRequest, ProviderResponse
from routeproof.gateway.app import GatewayApp
from routeproof.gateway.backend import Backend, Route
from routeproof.mock import MockProviderServer, Shape
from tools.gateway_stack import AGENT_TOML, GATEWAY_KEY

BODY = json.dumps(
    {"model": "chat", "max_tokens": 16, "messages": [{"role": "user", "content": "What is 2 + 2?"}]}
).encode()
HEADERS = [  # what httpx sends
    (b"host", b"127.0.0.1:8080"),
    (b"accept", b"*/*"),
    (b"accept-encoding", b"gzip, deflate"),
    (b"connection", b"keep-alive"),
    (b"user-agent", b"python-httpx/0.28.1"),
    (b"authorization", f"Bearer {GATEWAY_KEY}".encode()),
    (b"content-length", str(len(BODY)).encode()),
    (b"content-type", b"application/json"),
]


def _receiver() -> Callable[[], Awaitable[MutableMapping[str, Any]]]:
    """One request's ``receive``: the body, then (never, here) the disconnect."""
    connected = asyncio.Event()  # never set: the client stays
    pending: list[MutableMapping[str, Any]] = [{"type": "http.request", "body": BODY, "more_body": False}]

    async def receive() -> MutableMapping[str, Any]:
        if pending:
            return pending.pop()
        await connected.wait()
        return {"type": "http.disconnect"}

    return receive


async def _probe(requests: int) -> tuple[float, int]:
    async with MockProviderServer(Shape.OPENAI, require_auth=False) as mock:
        with tempfile.TemporaryDirectory() as tmp:
            agent = Path(tmp) / "agent.toml"
            agent.write_text(AGENT_TOML.format(mock_url=mock.base_url))
            backend = Backend.load(agent, environ={"OPENAI_API_KEY": "sk", "ROUTEPROOF_BENCH_KEY": GATEWAY_KEY})
        try:
            route = backend.route(backend.settings.tenants[0], "chat")
            assert route is not None
            canned = await backend.call(route, parse_openai_request(json.loads(BODY))[0], 30)

            async def call(route: Route, req: ChatRequest, timeout_s: float) -> ProviderResponse:
                return canned

            backend.call = call  # type: ignore[method-assign]  # the router's answer, canned
            app = GatewayApp(backend)
            scope = {"type": "http", "method": "POST", "path": "/v1/chat/completions", "headers": HEADERS}
            statuses: list[int] = []

            async def send(message: MutableMapping[str, Any]) -> None:
                if message["type"] == "http.response.start":
                    statuses.append(message["status"])

            per_request_s = 0.0
            for _ in range(2):  # the first pass warms caches
                cpu0 = time.process_time()
                for _ in range(requests):
                    await app(scope, _receiver(), send)
                per_request_s = (time.process_time() - cpu0) / requests
            return per_request_s, statuses[-1]
        finally:
            await backend.aclose()


def main(argv: list[str] | None = None) -> int:
    """Print the app's CPU per request."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--requests", type=int, default=5000)
    args = parser.parse_args(argv)
    per_request_s, status = uvloop.run(_probe(args.requests))
    mode = "python -O" if sys.flags.optimize else "python"
    print(f"gateway app CPU per request: {per_request_s * 1e6:.1f} us (status {status}; {mode}; canned router answer)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
