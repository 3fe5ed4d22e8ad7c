"""What the gateway adds: one chat completion through ``routeproof serve`` vs the same request sent
straight to the mock it routes to (both real processes on loopback), and the gateway's throughput
with 1, 10 and 100 requests in flight. The LiteLLM proxy runs side by side when it is installed.

Run: ``tox -e bench -- -k gateway`` (or ``pytest benchmarks/test_gateway_bench.py
-p no:looptime -s``). Numbers are printed; nothing asserts a time (measure, don't gate).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import statistics
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import uvloop

from routeproof.core.translate import parse_openai_request
from routeproof.gateway.backend import Backend
from tools.gateway_stack import GatewayStack, gateway_stack

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")

SEQUENTIAL = 1_000
PER_LEVEL = 1_000
PAYLOAD = {"model": "chat", "max_tokens": 16, "messages": [{"role": "user", "content": "What is 2 + 2?"}]}


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayStack]:
    """The mock and the gateway as separate processes, for the whole module."""
    with gateway_stack(tmp_path_factory.mktemp("gateway-bench")) as running:
        yield running


def _latencies(url: str, headers: dict[str, str], n: int) -> list[float]:
    with httpx.Client(headers=headers, timeout=30) as client:
        for _ in range(50):  # warm-up: connections, caches
            client.post(url, json=PAYLOAD).raise_for_status()
        samples = []
        for _ in range(n):
            t0 = time.perf_counter()
            client.post(url, json=PAYLOAD).raise_for_status()
            samples.append(time.perf_counter() - t0)
        return samples


def _p(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def test_gateway_added_latency(stack: GatewayStack) -> None:
    """p50/p99 of the same request direct to the mock and through the gateway, and the gateway's CPU per call."""
    direct = _latencies(f"{stack.mock_url}/v1/chat/completions", {"authorization": "Bearer sk"}, SEQUENTIAL)
    cpu_before, preempted_before = stack.gateway_cpu_s(), stack.gateway_preemptions()
    gateway_url, auth = f"{stack.gateway_url}/v1/chat/completions", {"authorization": f"Bearer {stack.key}"}
    via = _latencies(gateway_url, auth, SEQUENTIAL)
    cpu_after, preempted_after = stack.gateway_cpu_s(), stack.gateway_preemptions()
    d50, g50 = statistics.median(direct) * 1000, statistics.median(via) * 1000
    print(f"\ndirect to the mock, {SEQUENTIAL} sequential calls: p50 {d50:.3f} ms, p99 {_p(direct, 0.99):.3f} ms")
    print(f"through the gateway: p50 {g50:.3f} ms, p99 {_p(via, 0.99):.3f} ms; added p50 {g50 - d50:.3f} ms")
    if cpu_before is not None and cpu_after is not None:  # independent of how busy the other cores are
        per_call_ms = (cpu_after - cpu_before) / (SEQUENTIAL + 50) * 1000
        load = os.getloadavg()[0]
        print(f"gateway CPU per call: {per_call_ms:.3f} ms (user + system from /proc; load average {load:.1f})")
    if preempted_before is not None and preempted_after is not None:  # the CPU taken away mid-call
        print(f"gateway preempted per call: {(preempted_after - preempted_before) / (SEQUENTIAL + 50):.2f} times")


ROUNDS = 3
PER_ROUND = 300


def test_gateway_production_mode_side_by_side(stack: GatewayStack, tmp_path: Path) -> None:
    """Direct to the mock, through the gateway, and through ``serve --optimize`` (python -O), in
    rotated rounds in one run: each arm's p50 and the gateway's CPU per call, as added ms over direct."""
    with gateway_stack(tmp_path, optimize=True) as production:
        auth = {"authorization": f"Bearer {stack.key}"}
        arms: dict[str, tuple[str, dict[str, str], GatewayStack | None]] = {
            "direct": (f"{stack.mock_url}/v1/chat/completions", {"authorization": "Bearer sk"}, None),
            "gateway": (f"{stack.gateway_url}/v1/chat/completions", auth, stack),
            "gateway --optimize": (f"{production.gateway_url}/v1/chat/completions", auth, production),
        }
        samples: dict[str, list[float]] = {name: [] for name in arms}
        cpu_s: dict[str, float] = dict.fromkeys(arms, 0.0)
        order = list(arms)
        for round_index in range(ROUNDS):
            for name in order[round_index % len(order) :] + order[: round_index % len(order)]:
                url, headers, running = arms[name]
                before = running.gateway_cpu_s() if running is not None else None
                samples[name] += _latencies(url, headers, PER_ROUND)
                after = running.gateway_cpu_s() if running is not None else None
                if before is not None and after is not None:
                    cpu_s[name] += after - before
    direct50 = statistics.median(samples["direct"]) * 1000
    print(f"\n{ROUNDS} rotated rounds of {PER_ROUND} sequential calls; load average {os.getloadavg()[0]:.1f}")
    for name, arm_samples in samples.items():
        p50 = statistics.median(arm_samples) * 1000
        cpu = f"; gateway CPU per call {cpu_s[name] / (ROUNDS * (PER_ROUND + 50)) * 1000:.3f} ms" if cpu_s[name] else ""
        print(
            f"{name:>20}: p50 {p50:.3f} ms (+{p50 - direct50:.3f} ms over direct), "
            f"p99 {_p(arm_samples, 0.99):.3f} ms{cpu}"
        )


def test_router_in_process(stack: GatewayStack) -> None:
    """The same routed call made in this process, on uvloop, with no HTTP in front: its p50 and CPU per call."""
    body = json.dumps(PAYLOAD).encode()
    env = {**os.environ, "OPENAI_API_KEY": "sk-bench", "ROUTEPROOF_BENCH_KEY": stack.key}

    async def run() -> tuple[list[float], float]:
        backend = Backend.load(stack.agent_toml, environ=env)
        tenant = backend.settings.tenants[0]
        try:
            samples, cpu0 = [], 0.0
            for i in range(50 + SEQUENTIAL):
                if i == 50:  # after the warm-up
                    cpu0 = time.process_time()
                t0 = time.perf_counter()
                req, extras = parse_openai_request(json.loads(body))
                route = backend.route(tenant, extras.model)
                assert route is not None
                await backend.call(route, req, 30)
                if i >= 50:
                    samples.append(time.perf_counter() - t0)
            return samples, (time.process_time() - cpu0) / SEQUENTIAL * 1000
        finally:
            await backend.aclose()

    samples, cpu_ms = uvloop.run(run())  # the loop the gateway runs on
    print(f"\nthe router in process, {SEQUENTIAL} sequential calls: p50 {statistics.median(samples) * 1000:.3f} ms,"
          f" p99 {_p(samples, 0.99):.3f} ms; CPU per call {cpu_ms:.3f} ms")  # fmt: skip


async def _throughput(url: str, headers: dict[str, str], in_flight: int, total: int) -> float:
    limits = httpx.Limits(max_connections=in_flight, max_keepalive_connections=in_flight)
    async with httpx.AsyncClient(headers=headers, timeout=60, limits=limits) as client:
        queue = iter(range(total))

        async def worker() -> None:
            for _ in queue:
                (await client.post(url, json=PAYLOAD)).raise_for_status()

        await asyncio.gather(*(client.post(url, json=PAYLOAD) for _ in range(in_flight)))  # warm-up
        t0 = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(in_flight)))
        return total / (time.perf_counter() - t0)


@pytest.mark.parametrize("in_flight", [1, 10, 100])
def test_gateway_throughput(stack: GatewayStack, in_flight: int) -> None:
    """Requests per second through the gateway and direct to the mock, with ``in_flight`` concurrent callers."""
    via = asyncio.run(
        _throughput(
            f"{stack.gateway_url}/v1/chat/completions", {"authorization": f"Bearer {stack.key}"}, in_flight, PER_LEVEL
        )
    )
    direct = asyncio.run(
        _throughput(f"{stack.mock_url}/v1/chat/completions", {"authorization": "Bearer sk"}, in_flight, PER_LEVEL)
    )
    print(f"\n{in_flight:>3} in flight: gateway {via:.0f} req/s, direct to the mock {direct:.0f} req/s")


def test_litellm_proxy_side_by_side(tmp_path: Path) -> None:
    """The LiteLLM proxy on the same mock, when installed (it is not a dependency).

    Not written yet: no machine this was built on had the proxy, and an unrun comparison would be a
    guess. The skip says which of the two is the case.
    """
    if shutil.which("litellm") is None:
        pytest.skip("skipped: the litellm proxy is not installed (pip install 'litellm[proxy]' to compare)")
    pytest.skip(f"skipped: litellm found at {shutil.which('litellm')!r}, but the side-by-side run is not written")
