"""Which ASGI stack the gateway runs on, by measurement: POST a small JSON body to a trivial
app on each stack (real loopback sockets, keep-alive) and print p50/p99 per request and the
throughput with 50 requests in flight.

Run: ``python -m benchmarks.asgi_stack_probe [requests]`` (needs the ``gateway`` extra, starlette and granian).
The app does what the gateway's hot path does before the router: read the body, parse JSON,
answer JSON.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import httpx

from benchmarks.proxy_floor import read_body

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ANSWER = json.dumps({"id": "x", "choices": [{"message": {"content": "hello"}}]}).encode()


async def raw_app(scope: Scope, receive: Receive, send: Send) -> None:
    """A raw ASGI app: read the body, parse it, answer JSON."""
    if scope["type"] != "http":
        return
    json.loads(await read_body(receive) or b"{}")
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": ANSWER})


def starlette_app() -> Any:
    """The same endpoint as a Starlette route (imported by name: starlette is not a dependency)."""
    applications = importlib.import_module("starlette.applications")
    responses = importlib.import_module("starlette.responses")
    routing = importlib.import_module("starlette.routing")

    async def endpoint(request: Any) -> Any:
        json.loads(await request.body() or b"{}")
        return responses.Response(ANSWER, media_type="application/json")

    return applications.Starlette(routes=[routing.Route("/v1/chat/completions", endpoint, methods=["POST"])])


starlette = starlette_app() if __name__ != "__main__" else None

STACKS = {
    "uvicorn+raw": [
        "-m", "uvicorn", "benchmarks.asgi_stack_probe:raw_app", "--log-level", "warning", "--no-access-log",
    ],
    "uvicorn+starlette": [
        "-m", "uvicorn", "benchmarks.asgi_stack_probe:starlette", "--log-level", "warning", "--no-access-log",
    ],
    "granian+raw": [
        "-m", "granian", "--interface", "asgi", "--log-level", "warning", "benchmarks.asgi_stack_probe:raw_app",
    ],
}  # fmt: skip


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def _measure(url: str, n: int) -> tuple[list[float], float]:
    payload = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    async with httpx.AsyncClient(limits=httpx.Limits(max_connections=50)) as client:
        for _ in range(50):
            await client.post(url, json=payload)
        samples = []
        for _ in range(n):
            t0 = time.perf_counter()
            (await client.post(url, json=payload)).raise_for_status()
            samples.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        await asyncio.gather(*(client.post(url, json=payload) for _ in range(n)))
        return samples, n / (time.perf_counter() - t0)


def main() -> None:
    """Start each stack in turn, measure it, stop it."""
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    for name, args in STACKS.items():
        port = _free_port()
        bind = ["--host", "127.0.0.1", "--port", str(port)]
        proc = subprocess.Popen([sys.executable, *args, *bind])
        try:
            url = f"http://127.0.0.1:{port}/v1/chat/completions"
            for _ in range(100):
                try:
                    httpx.get(url)
                    break
                except httpx.TransportError:
                    time.sleep(0.05)
            samples, rps = asyncio.run(_measure(url, n))
            ordered = sorted(samples)
            p50 = statistics.median(ordered) * 1e6
            p99 = ordered[int(0.99 * (len(ordered) - 1))] * 1e6
            print(f"{name:20} p50 {p50:6.0f} us  p99 {p99:6.0f} us  {rps:7.0f} req/s at 50 in flight")
        finally:
            proc.terminate()
            proc.wait(timeout=10)


if __name__ == "__main__":
    main()
