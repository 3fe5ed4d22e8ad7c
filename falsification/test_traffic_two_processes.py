"""TRAFFIC-WEIGHTED-2P and TRAFFIC-RATE-LIMIT-2P (issue 32): the weighted and rate-limit rows again,
with **two gateway processes** (``routeproof serve``) sharing one Redis traffic store.

* **TRAFFIC-WEIGHTED-2P.** Three OpenAI-compatible mock deployments of ``chat`` at one priority,
  weights 0.5/0.3/0.2; 600 calls through the two gateways alternately, 20 in flight. Survives when
  Pearson's chi-square p-value of the shares against the weights is >= 0.001.
* **TRAFFIC-RATE-LIMIT-2P.** Two mock deployments, each declared at ``rpm = 30`` and each
  *enforcing* 30 requests per minute itself (``MockRateLimit``: a 429 past it); 120 calls offered
  over 30 s through the two gateways alternately (twice the minute's capacity), ``wait_for_capacity
  = false``. Survives with **0 provider 429s** (counted by the mocks) and >= 95 % of the capacity
  used. Each gateway alone would admit 30 per deployment: only the shared Redis window keeps the sum there.
"""

from __future__ import annotations

import asyncio
import math
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx
import pytest

from falsification.report import record_verdict
from routeproof.mock import MockProviderServer, Scripted, Shape
from routeproof.mock.rate_headers import MockRateLimit
from tools.redis_server import RedisServer, redis_server_binary

pytestmark = [pytest.mark.falsify, pytest.mark.asyncio, pytest.mark.looptime(False)]

KEY = "gw-two-process-key-0001"
WEIGHTS = {"dep-a": 0.5, "dep-b": 0.3, "dep-c": 0.2}
RPM = 30
P_FLOOR = 0.001
MIN_USED = 0.95
_SERVE = "import sys; from routeproof.cli import main; sys.exit(main())"


def agent(urls: dict[str, str], redis_url: str, namespace: str, *, rpm: int | None, weighted: bool) -> str:
    """Deployments of ``chat`` at one priority over a shared Redis traffic store."""
    parts = []
    for name, url in urls.items():
        limit = "" if rpm is None else f"rpm = {rpm}\n"
        weight = f"weight = {WEIGHTS[name]}\n" if weighted else ""
        head = f'[driver.providers.{name}]\nkind = "openai"\nbase_url = "{url}/v1"\nmodel = "gpt-4o"\n'
        parts.append(f"{head}priority = 1\n{weight}{limit}")
    strategy = '"weighted"' if weighted else '"ordered"'
    parts.append(f"[driver.traffic]\nstrategy = {strategy}\nwait_for_capacity = false\n")
    parts.append(f'[traffic]\nbackend = "redis"\nurl = "{redis_url}"\nnamespace = "{namespace}"\n')
    parts.append(f'[gateway]\naliases = ["chat"]\nmax_in_flight = 200\n\n[gateway.tenants.t]\nkey = "{KEY}"\n')
    return "\n".join(parts)


@contextmanager
def gateways(config: Path, n: int) -> Iterator[list[str]]:
    """``n`` ``routeproof serve`` processes on one agent.toml; their base URLs."""
    with ExitStack() as stack:
        urls = []
        env = {**os.environ, "VLLM_API_KEY": "sk-x", "OPENAI_API_KEY": "sk-x"}
        for _ in range(n):
            args = [sys.executable, "-c", _SERVE, "serve", "--config", str(config), "--port", "0"]
            proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True, env=env)

            def stop(proc: subprocess.Popen[str] = proc) -> None:
                if proc.stdout is not None:
                    proc.stdout.close()
                proc.terminate()
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()

            stack.callback(stop)
            assert proc.stdout is not None
            line = proc.stdout.readline()  # serve prints its address first, or exits
            if not line:
                raise RuntimeError(f"routeproof serve exited (status {proc.wait()!r})")
            urls.append(line.split()[3])
        yield urls


@pytest.fixture
def redis(tmp_path: Path) -> Iterator[RedisServer]:
    """A redis-server of this test's own."""
    binary = redis_server_binary()
    if binary is None:
        pytest.skip("redis-server is not installed")
    server = RedisServer(binary, tmp_path / "redis")
    server.start()
    yield server
    server.stop()


async def _post(client: httpx.AsyncClient, url: str) -> int:
    body = {"model": "chat", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 8}
    response = await client.post(f"{url}/v1/chat/completions", json=body, headers={"authorization": f"Bearer {KEY}"})
    return response.status_code


async def test_traffic_weighted_with_two_processes_on_one_redis(redis: RedisServer, tmp_path: Path) -> None:
    """TRAFFIC-WEIGHTED-2P: 600 calls through two gateways, shares vs 0.5/0.3/0.2 by chi-square."""
    servers = {
        n: MockProviderServer(Shape.OPENAI, name=n, default=Scripted(delay_before_headers_s=0.01)) for n in WEIGHTS
    }
    for server in servers.values():
        await server.start()
    config = tmp_path / "agent.toml"
    urls = {n: s.base_url for n, s in servers.items()}
    config.write_text(agent(urls, redis.url, "weighted-2p", rpm=None, weighted=True), encoding="utf-8")
    try:
        with gateways(config, 2) as fronts:
            async with httpx.AsyncClient(timeout=30) as client:
                gate = asyncio.Semaphore(20)

                async def one(i: int) -> int:
                    async with gate:
                        return await _post(client, fronts[i % 2])

                statuses = await asyncio.gather(*(one(i) for i in range(600)))
    finally:
        for server in servers.values():
            await server.stop()
    counts = {n: len(s.journal) for n, s in servers.items()}
    total = sum(counts.values())
    x = sum((counts[n] - total * w) ** 2 / (total * w) for n, w in WEIGHTS.items())
    p = math.exp(-x / 2)  # chi-square with 2 degrees of freedom
    survived = p >= P_FLOOR and statuses.count(200) == 600
    record_verdict(
        "TRAFFIC-WEIGHTED-2P",
        evidence=f"two gateway processes, one Redis; 600 calls, 20 in flight: served {counts}, "
        f"chi-square p = {p:.3f} (>= {P_FLOOR}); statuses 200: {statuses.count(200)}",
        survived=survived,
        procedure="the mock servers' journals counted; Pearson chi-square against the weights",
        seeds="none: each gateway draws from its own unseeded generator (the bound holds for any seed)",
    )
    assert survived


async def test_traffic_rate_limit_with_two_processes_on_one_redis(redis: RedisServer, tmp_path: Path) -> None:
    """TRAFFIC-RATE-LIMIT-2P: 2x capacity through two gateways, 0 provider 429s, >= 95 % used."""
    names = ["dep-a", "dep-b"]
    servers = {n: MockProviderServer(Shape.OPENAI, name=n, rate_limit=MockRateLimit(requests=RPM)) for n in names}
    for server in servers.values():
        await server.start()
    config = tmp_path / "agent.toml"
    urls = {n: s.base_url for n, s in servers.items()}
    config.write_text(agent(urls, redis.url, "rate-2p", rpm=RPM, weighted=False), encoding="utf-8")
    try:
        with gateways(config, 2) as fronts:
            async with httpx.AsyncClient(timeout=30) as client:
                loop = asyncio.get_running_loop()
                started = loop.time()
                tasks = []
                for i in range(4 * RPM):  # 120 calls over 30 s: twice the two deployments' minute
                    await asyncio.sleep(max(0.0, started + i * 0.25 - loop.time()))
                    tasks.append(asyncio.create_task(_post(client, fronts[i % 2])))
                statuses = await asyncio.gather(*tasks)
    finally:
        for server in servers.values():
            await server.stop()
    provider_429s = {n: s.rate_window.refused if s.rate_window else -1 for n, s in servers.items()}
    served = {n: len(s.journal) - provider_429s[n] for n, s in servers.items()}
    used = sum(served.values()) / (RPM * len(names))
    survived = sum(provider_429s.values()) == 0 and used >= MIN_USED
    record_verdict(
        "TRAFFIC-RATE-LIMIT-2P",
        evidence=f"two gateway processes, one Redis; 120 calls over 30 s at 2x capacity ({RPM} rpm x 2): "
        f"served {served}, used {used:.1%} (>= {MIN_USED:.0%}); provider 429s (the mocks' own limit) "
        f"{provider_429s}; gateway statuses {sorted((s, statuses.count(s)) for s in set(statuses))}",
        survived=survived,
        procedure="the mock servers enforce the limit themselves and count their 429s",
        seeds="none: a deterministic arrival schedule (4/s for 30 s)",
    )
    assert survived
