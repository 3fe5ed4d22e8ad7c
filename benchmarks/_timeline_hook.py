"""Stamps in a running gateway, for ``benchmarks/gateway_timeline.py``: installed by a
``sitecustomize`` in the gateway's process, it wraps the points one plain call passes (uvicorn's
``data_received``, aiohttp's request write and answer read, the provider's ``post_json`` and
``complete``, ``Backend.call``, the answer's write) and writes the median time between them.

It patches library internals by name (uvicorn's httptools protocol, aiohttp's ``StreamWriter`` and
``ResponseHandler``): another version of either may need it changed. Sequential calls only (one
request in flight at a time), as the tool sends them. A measurement tool, not a test.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any

__all__ = ["INSIDE", "PHASES", "install"]

PHASES = (
    ("request in -> request to the provider", "in", "up_write"),
    ("the provider (the mock and both hops)", "up_write", "up_read"),
    ("answer in -> post_json returns (aiohttp's read, the transport code)", "up_read", "post_json"),
    ("post_json -> complete returns (normalising)", "post_json", "complete"),
    ("complete -> Backend.call returns (the router's bookkeeping)", "complete", "backend"),
    ("Backend.call -> answer out (the app's answer)", "backend", "out"),
    ("answer out -> the app returns", "out", "done"),
)
INSIDE = (
    ("of which driver.observe (the attempt's metrics, latency samples, health)", "observe"),
    ("of which kernel.step (every step of the call)", "step"),
)
_WARM = 200  # the first calls (connections opened, caches filled) are left out


def install(out: Path, every: int = 500) -> None:
    """Wrap the stamped points; every ``every`` calls, write the medians so far to ``out``."""
    import aiohttp.client_proto
    import aiohttp.http_writer
    from uvicorn.protocols.http import httptools_impl

    from routeproof import driver
    from routeproof.core import kernel
    from routeproof.gateway import app, backend, write_batch
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

    def wrap_async(owner: Any, attribute: str, name: str) -> None:
        original = getattr(owner, attribute)

        async def stamped(*args: Any, **kwargs: Any) -> Any:
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
    wrap_sync(aiohttp.http_writer.StreamWriter, "_write", "up_write")
    wrap_sync(aiohttp.http_writer.StreamWriter, "_writelines", "up_write")
    wrap_sync(aiohttp.client_proto.ResponseHandler, "data_received", "up_read")
    wrap_async(openai, "post_json", "post_json")
    wrap_async(openai.OpenAIProvider, "complete", "complete")
    wrap_async(backend.Backend, "call", "backend")
    flush = write_batch.BatchedWrites.flush

    def stamped_flush(self: Any) -> None:
        if self._held:
            first("out")
        flush(self)

    write_batch.BatchedWrites.flush = stamped_flush  # type: ignore[method-assign]
    call = app.GatewayApp.__call__

    async def stamped_call(self: Any, scope: Any, receive: Any, send: Any) -> None:
        await call(self, scope, receive, send)
        if scope["type"] != "http" or "out" not in stamps or "backend" not in stamps:
            return
        stamps["done"] = now()
        rows.append(dict(stamps))
        if len(rows) > _WARM and (len(rows) - _WARM) % every == 0:
            _write(out, rows[_WARM:])

    app.GatewayApp.__call__ = stamped_call  # type: ignore[method-assign]


def _write(out: Path, rows: list[dict[str, int]]) -> None:
    lines = [f"{len(rows)} calls, median µs per phase"]
    for label, start, end in PHASES:
        lines.append(f"{statistics.median(row[end] - row[start] for row in rows) / 1000:8.1f}  {label}")
    for label, name in INSIDE:
        lines.append(f"{statistics.median(row.get(name, 0) for row in rows) / 1000:8.1f}    {label}")
    out.write_text("\n".join(lines) + "\n")
