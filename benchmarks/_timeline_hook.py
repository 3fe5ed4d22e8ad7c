"""Stamps in a running gateway or proxy floor, for ``benchmarks/gateway_timeline.py``: installed by a
``sitecustomize`` in the server's process, it wraps the points one plain call passes and writes the
median time between them, as JSON.

Points every server on ``serve``'s stack passes (so the gateway's phases can be read against the
proxy floor's): uvicorn's ``data_received`` (request in), aiohttp's ``ClientSession._request`` (its
start), its request write and answer read,
the app's ``http.response.start`` (answer out) and the end of uvicorn's ``run_asgi``. Points only
the gateway passes: the app's body read, ``Backend.call``, the provider's ``post_json`` and
``complete``, and time summed inside ``driver.observe`` and ``kernel.step``.

It patches library internals by name (uvicorn's httptools protocol, aiohttp's ``StreamWriter`` and
``ResponseHandler``): another version of either may need it changed. Sequential calls only (one
request in flight at a time), as the tool sends them. A measurement tool, not a test.
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path
from typing import Any

__all__ = ["INSIDE", "PHASES", "install"]

# (label, from, to, indent): an indented phase splits the one above it with less indent
PHASES = (
    ("request in -> request to the provider", "in", "up_write", 0),
    ("request in -> body read (uvicorn, the app's start)", "in", "body", 1),
    ("body read -> Backend.call (auth, parse, route, fit, admission)", "body", "call_in", 1),
    ("Backend.call -> post_json (plan, kernel, the provider's body)", "call_in", "post_in", 1),
    ("Backend.call -> driver.perform (the chain's plan, the kernel's first step)", "call_in", "perform_in", 2),
    ("driver.perform -> provider.complete (reserve, the attempt's span and timer)", "perform_in", "complete_in", 2),
    ("provider.complete -> post_json (the provider's body and headers)", "complete_in", "post_in", 2),
    ("post_json -> aiohttp's request begins (routeproof's transport code)", "post_in", "aio_in", 1),
    ("request in -> aiohttp's request begins (all of it)", "in", "aio_in", 1),
    ("aiohttp's request begins -> request to the provider (aiohttp)", "aio_in", "up_write", 1),
    ("the provider (the mock and both hops)", "up_write", "up_read", 0),
    ("answer in -> answer out", "up_read", "out", 0),
    ("answer in -> post_json returns (aiohttp's read, the transport code)", "up_read", "post_out", 1),
    ("post_json returns -> complete returns (normalising)", "post_out", "complete", 1),
    ("complete -> Backend.call returns (the router's bookkeeping)", "complete", "backend", 1),
    ("Backend.call returns -> answer out (the app's answer)", "backend", "out", 1),
    ("answer out -> the app returns (the write, what runs after it)", "out", "done", 0),
    ("request in -> the app returns", "in", "done", 0),
)
INSIDE = (
    ("of which driver.observe (the attempt's metrics, latency samples, health)", "observe"),
    ("of which kernel.step (every step of the call)", "step"),
)
_WARM = 200  # the first calls (connections opened, caches filled) are left out


def install(out: Path, every: int = 500) -> None:
    """Wrap the stamped points; every ``every`` calls, write the medians so far to ``out``."""
    import aiohttp
    import aiohttp.client_proto
    import aiohttp.http_writer
    from uvicorn.protocols.http import httptools_impl

    from routeproof import driver
    from routeproof.core import kernel
    from routeproof.gateway import app, backend
    from routeproof.providers import openai

    now = time.perf_counter_ns
    stamps: dict[str, int] = {}
    rows: list[dict[str, int]] = []

    def first(name: str) -> None:
        stamps.setdefault(name, now())

    def wrap_sync(owner: Any, attribute: str, name: str, *, begin: bool = False) -> None:
        original = getattr(owner, attribute)

        def stamped(*args: Any, **kwargs: Any) -> Any:
            if begin:
                stamps.clear()
            first(name)
            return original(*args, **kwargs)

        setattr(owner, attribute, stamped)

    def wrap_async(owner: Any, attribute: str, name: str, *, entry: str | None = None) -> None:
        original = getattr(owner, attribute)

        async def stamped(*args: Any, **kwargs: Any) -> Any:
            if entry is not None:
                first(entry)
            result = await original(*args, **kwargs)
            stamps[name] = now()
            return result

        setattr(owner, attribute, stamped)

    def timed(owner: Any, attribute: str, name: str) -> None:
        original = getattr(owner, attribute)

        def summed(*args: Any, **kwargs: Any) -> Any:
            start = now()
            try:
                return original(*args, **kwargs)
            finally:
                stamps[name] = stamps.get(name, 0) + now() - start

        setattr(owner, attribute, summed)

    timed(driver, "observe", "observe")  # the driver calls both through their module's name
    timed(kernel, "step", "step")
    wrap_sync(httptools_impl.HttpToolsProtocol, "data_received", "in", begin=True)
    wrap_async(aiohttp.ClientSession, "_request", "aio_out", entry="aio_in")
    wrap_sync(aiohttp.http_writer.StreamWriter, "_write", "up_write")
    wrap_sync(aiohttp.http_writer.StreamWriter, "_writelines", "up_write")
    wrap_sync(aiohttp.client_proto.ResponseHandler, "data_received", "up_read")
    wrap_async(app.GatewayApp, "_body", "body")
    wrap_async(openai, "post_json", "post_out", entry="post_in")
    wrap_async(openai.OpenAIProvider, "complete", "complete", entry="complete_in")
    wrap_async(driver, "perform", "perform_out", entry="perform_in")
    wrap_async(backend.Backend, "call", "backend", entry="call_in")
    cycle = httptools_impl.RequestResponseCycle
    send, run_asgi = cycle.send, cycle.run_asgi

    async def stamped_send(self: Any, message: Any) -> None:
        if message["type"] == "http.response.start":
            first("out")
        await send(self, message)

    async def stamped_run(self: Any, asgi: Any) -> None:
        await run_asgi(self, asgi)
        if "out" not in stamps or "up_read" not in stamps:
            return  # not a proxied call (a health check, a refusal)
        stamps["done"] = now()
        rows.append(dict(stamps))
        if len(rows) > _WARM and (len(rows) - _WARM) % every == 0:
            _write(out, rows[_WARM:])

    cycle.send = stamped_send  # type: ignore[method-assign]
    cycle.run_asgi = stamped_run  # type: ignore[method-assign,assignment]


def _write(out: Path, rows: list[dict[str, int]]) -> None:
    """``{"calls": n, "µs": {name: median or None}}``: None where the server never passed a point."""
    medians: dict[str, float | None] = {}
    for label, start, end, _ in PHASES:
        spans = [row[end] - row[start] for row in rows if start in row and end in row]
        medians[label] = statistics.median(spans) / 1000 if len(spans) == len(rows) else None
    for label, name in INSIDE:
        sums = [row[name] for row in rows if name in row]
        medians[label] = statistics.median(sums) / 1000 if len(sums) == len(rows) else None
    out.write_text(json.dumps({"calls": len(rows), "µs": medians}))
