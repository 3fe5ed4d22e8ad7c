"""The noisy-tenant measurement over real loopback sockets: ``python -m tests.hardening.noisy_tenant``.

Tenant A keeps 10x its share of calls open (a 200 ms provider); tenant B sends calls one at a time.
B's latency (p50, p99) is printed alone, with per-tenant shares (isolation), and with one shared
router-wide FIFO (no isolation: the gateway's shares made huge, the router's per-provider limit equal
to the isolated total). Not a test: timings depend on the machine's load (print ``uptime`` beside them).
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

from routeproof.gateway import Backend
from routeproof.mock import MockProviderServer, Scripted, Shape
from tests.gateway.conftest import serve

TOTAL = 20  # in-flight calls: the isolated gateway's limit (10 per tenant), the shared router's limit
NOISY = 100  # tenant A's concurrent callers: 10x its isolated share
QUIET_CALLS = 40
DELAY_S = 0.2
BODY = {"model": "chat", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]}


def _toml(url: str, *, isolated: bool) -> str:
    gateway_limit = TOTAL if isolated else 100 * TOTAL
    return f"""
[driver.providers.openai]
base_url = "{url}/v1"
model = "gpt-4o"

[driver.admission]
max_in_flight = {100 * TOTAL}
max_in_flight_per_provider = {TOTAL}

[gateway]
aliases = ["chat"]
max_in_flight = {gateway_limit}
max_queued_per_tenant = {10 * NOISY}

[gateway.tenants.a]
key = "key-a"

[gateway.tenants.b]
key = "key-b"
"""


async def _run(*, isolated: bool, noisy: bool) -> list[float]:
    async with MockProviderServer(Shape.OPENAI) as mock:
        mock.set_default(Scripted(delay_before_headers_s=DELAY_S))
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "agent.toml"
            path.write_text(_toml(mock.base_url, isolated=isolated))
            async with serve(Backend.load(path, environ={"OPENAI_API_KEY": "sk-x"}), None) as (url, _app, _stop):
                limits = httpx.Limits(max_connections=NOISY + 10)
                async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as client:
                    stop = asyncio.Event()

                    async def noisy_caller() -> None:
                        while not stop.is_set():
                            await client.post("/v1/chat/completions", json=BODY, headers={"x-api-key": "key-a"})

                    tasks = [asyncio.create_task(noisy_caller()) for _ in range(NOISY if noisy else 0)]
                    await asyncio.sleep(1.0)  # A's calls fill the slots and queue
                    latencies = []
                    for _ in range(QUIET_CALLS):
                        start = time.perf_counter()
                        answer = await client.post("/v1/chat/completions", json=BODY, headers={"x-api-key": "key-b"})
                        latencies.append(time.perf_counter() - start)
                        assert answer.status_code == 200, answer.text
                    stop.set()
                    await asyncio.gather(*tasks)
    return latencies


def _p(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1] * 1000


async def main() -> None:
    """Print B's p50/p99 alone, with isolation and without."""
    for label, isolated, noisy in (("B alone", True, False), ("A 10x, shares", True, True),
                                   ("A 10x, one shared FIFO", False, True)):  # fmt: skip
        latencies = await _run(isolated=isolated, noisy=noisy)
        print(f"{label:24s} B p50 {_p(latencies, 50):7.1f} ms  p99 {_p(latencies, 99):7.1f} ms", flush=True)


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
