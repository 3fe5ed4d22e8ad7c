"""What the gateway adds: one chat completion through ``routeproof serve`` vs the same request sent
straight to the mock it routes to (both real processes on loopback), and the gateway's throughput
with 1, 10 and 100 requests in flight. The LiteLLM proxy runs side by side when it is installed
(``ROUTEPROOF_LITELLM_BIN``, or ``litellm`` on PATH; see ``test_litellm_proxy_side_by_side``).

Run: ``tox -e bench`` (all benchmarks; its posargs go to loadbench) or
``pytest benchmarks/test_gateway_bench.py -p no:looptime -s``. Numbers are printed; nothing asserts a
time (measure, don't gate).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import socket
import statistics
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import httpx
import pytest
import uvloop

from benchmarks._gateways import LITELLM_KEY, LITELLM_YAML  # one LiteLLM proxy config for both benches
from routeproof.core.formats.translate import parse_openai_request
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
    """Requests per second of ``total`` calls, ``in_flight`` at a time, on one pooled aiohttp session.

    aiohttp, not httpx: httpx's pool (anyio locks, a per-request pool scan) collapsed at 100 in flight
    on this machine (direct to the mock 157 req/s vs 1,677 at 10), so the client, not the server, set
    the number. aiohttp's connector holds 100 connections at a few percent of the CPU.
    """
    body = json.dumps(PAYLOAD).encode()
    send_headers = {**headers, "content-type": "application/json"}
    connector = aiohttp.TCPConnector(limit=in_flight)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=60)) as session:

        async def one() -> None:
            async with session.post(url, data=body, headers=send_headers) as response:
                response.raise_for_status()
                await response.read()

        queue = iter(range(total))

        async def worker() -> None:
            for _ in queue:
                await one()

        await asyncio.gather(*(one() for _ in range(in_flight)))  # warm-up: open the connections
        t0 = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(in_flight)))
        return total / (time.perf_counter() - t0)


@pytest.mark.parametrize("in_flight", [1, 10, 100])
def test_gateway_throughput(stack: GatewayStack, in_flight: int) -> None:
    """Requests per second through the gateway and direct to the mock, with ``in_flight`` concurrent callers."""
    gateway = (f"{stack.gateway_url}/v1/chat/completions", {"authorization": f"Bearer {stack.key}"})
    mock = (f"{stack.mock_url}/v1/chat/completions", {"authorization": "Bearer sk"})
    via = uvloop.run(_throughput(*gateway, in_flight, PER_LEVEL))
    direct = uvloop.run(_throughput(*mock, in_flight, PER_LEVEL))
    print(f"\n{in_flight:>3} in flight: gateway {via:.0f} req/s, direct to the mock {direct:.0f} req/s")


LITELLM_BIN_ENV = "ROUTEPROOF_LITELLM_BIN"
"""The ``litellm`` executable to compare with (its own virtualenv: it is no dependency of routeproof)."""
LITELLM_START_TIMEOUT_S = 120.0  # the proxy imports for 15-20 s on this machine
LITELLM_OFFLINE_ENV = {
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # the bundled price map, not a download at import
    "LITELLM_TELEMETRY": "False",
    "DISABLE_ADMIN_UI": "True",
    "DISABLE_SCHEMA_UPDATE": "True",
    "NO_DOCS": "True",
}
"""Set for the proxy; ``DATABASE_URL`` is removed (no database: keys are checked against the master key)."""


def _litellm_bin() -> str | None:
    return os.environ.get(LITELLM_BIN_ENV) or shutil.which("litellm")


def _cpu_s(pid: int) -> float | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextmanager
def _litellm_proxy(executable: str, mock_url: str, workdir: Path) -> Iterator[tuple[str, int]]:
    """``litellm --config`` on a free loopback port, in front of ``mock_url``: its base URL and pid."""
    config = workdir / "litellm.yaml"  # beside the gateway stack's files, under other names
    config.write_text(LITELLM_YAML.format(mock_url=mock_url, key=LITELLM_KEY))
    with socket.socket() as probe:  # a free port: litellm has no "port 0, print it" mode
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    log = (workdir / "litellm.log").open("wb")  # a file, not a pipe: its access log would fill a pipe and block
    env = {**{k: v for k, v in os.environ.items() if k != "DATABASE_URL"}, **LITELLM_OFFLINE_ENV}
    argv = [executable, "--config", str(config), "--host", "127.0.0.1", "--port", str(port)]
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + LITELLM_START_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"litellm exited with {proc.returncode}; see {workdir / 'litellm.log'}")
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"{url}/health/liveliness", timeout=2).status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError(f"litellm not ready in {LITELLM_START_TIMEOUT_S} s; see {workdir / 'litellm.log'}")
            time.sleep(0.5)  # polling a process's start, not a test's timing
        yield url, proc.pid
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


@dataclass(frozen=True, slots=True, kw_only=True)
class _Arm:
    url: str
    headers: dict[str, str]
    pid: int | None  # the process in front of the mock, whose CPU is counted


def _rotated(names: list[str], round_index: int) -> list[str]:
    shift = round_index % len(names)
    return names[shift:] + names[:shift]


def test_litellm_proxy_side_by_side(stack: GatewayStack, tmp_path: Path) -> None:
    """The LiteLLM proxy on the same mock, when installed (it is not a dependency): direct, ``serve``,
    ``serve --optimize`` and the proxy in rotated rounds of one run (sequential p50/p99 and CPU per
    call of the process in front), then throughput at 1/10/100 in flight, rotated the same way.

    Enable it: ``python3.11 -m venv .venv-litellm && .venv-litellm/bin/pip install 'litellm[proxy]==1.108.7'``
    then ``ROUTEPROOF_LITELLM_BIN=$PWD/.venv-litellm/bin/litellm`` before
    ``pytest benchmarks/test_gateway_bench.py -p no:looptime -s -k litellm`` or ``tox -e bench`` (it passes it on).
    """
    executable = _litellm_bin()
    if executable is None:
        pytest.skip(f"skipped: the litellm proxy is not installed (set {LITELLM_BIN_ENV}; see this test's docstring)")
    with (
        gateway_stack(tmp_path, optimize=True) as production,
        _litellm_proxy(executable, stack.mock_url, tmp_path) as (litellm_url, litellm_pid),
    ):
        auth = {"authorization": f"Bearer {stack.key}"}
        arms = {
            "direct": _Arm(
                url=f"{stack.mock_url}/v1/chat/completions", headers={"authorization": "Bearer sk"}, pid=None
            ),
            "gateway": _Arm(url=f"{stack.gateway_url}/v1/chat/completions", headers=auth, pid=stack.gateway_pid),
            "gateway --optimize": _Arm(
                url=f"{production.gateway_url}/v1/chat/completions", headers=auth, pid=production.gateway_pid
            ),
            "litellm proxy": _Arm(
                url=f"{litellm_url}/v1/chat/completions",
                headers={"authorization": f"Bearer {LITELLM_KEY}"},
                pid=litellm_pid,
            ),
        }
        names = list(arms)
        samples: dict[str, list[float]] = {name: [] for name in arms}
        cpu_s = dict.fromkeys(arms, 0.0)
        for round_index in range(ROUNDS):
            for name in _rotated(names, round_index):
                arm = arms[name]
                before = _cpu_s(arm.pid) if arm.pid is not None else None
                samples[name] += _latencies(arm.url, arm.headers, PER_ROUND)
                after = _cpu_s(arm.pid) if arm.pid is not None else None
                if before is not None and after is not None:
                    cpu_s[name] += after - before
        rates: dict[tuple[str, int], list[float]] = {}
        for round_index, in_flight in enumerate((1, 10, 100)):
            for name in _rotated(names, round_index):
                arm = arms[name]
                rate = uvloop.run(_throughput(arm.url, arm.headers, in_flight, PER_LEVEL))
                rates.setdefault((name, in_flight), []).append(rate)
    direct50 = statistics.median(samples["direct"]) * 1000
    print(f"\n{ROUNDS} rotated rounds of {PER_ROUND} sequential calls; load average {os.getloadavg()[0]:.1f}")
    for name, arm_samples in samples.items():
        p50 = statistics.median(arm_samples) * 1000
        cpu = f"; CPU per call {cpu_s[name] / (ROUNDS * (PER_ROUND + 50)) * 1000:.3f} ms" if cpu_s[name] else ""
        print(
            f"{name:>20}: p50 {p50:.3f} ms (+{p50 - direct50:.3f} ms over direct), "
            f"p99 {_p(arm_samples, 0.99):.3f} ms{cpu}"
        )
    for in_flight in (1, 10, 100):
        row = ", ".join(f"{name} {statistics.median(rates[name, in_flight]):.0f}" for name in names)
        print(f"{in_flight:>3} in flight (req/s, aiohttp client): {row}")
