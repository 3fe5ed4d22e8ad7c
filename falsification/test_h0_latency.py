"""H0-LATENCY: "provider failover does NOT improve p99 latency vs a single provider".

The experiment, fixed before looking at any result:

* **Arms.** The same router (same providers, the default retry policy and health settings) called
  with a one-entry chain (the *single provider*: A) or a three-entry chain (the *cascade*: A, B, C).
* **Failure injection.** Every attempt on every provider fails independently with probability
  10 %: half are a 5xx after 50-300 ms, half a hang that only the router's attempt timeout ends.
  Normal answers take U(0.5, 2.0) s.
* **Attempt timeout 5 s.** Well above the slowest normal answer; with the default 30 s a single hang
  spends the whole 30 s failover budget and neither arm can do anything after it.
* **Load.** Open loop: 4,000 calls per arm arriving as a Poisson process at 2/s (the same arrival
  times and provider seeds in both arms), on virtual time (looptime).
* **Measure.** Time from the call to its outcome; a call that ends in an error never answered, so
  it counts as +inf. p99 is the nearest-rank 99th percentile over every call.
  Improvement = 1 - p99(cascade) / p99(single) (0 when both are inf, 100 % when only single is).
* **Verdict.** H0 is rejected (the claim survives) iff the improvement is >= 20 %.

A small real-socket run over the mock servers (time scaled down: answers 50-200 ms, attempt
timeout 0.5 s, 80 calls per arm at 40/s) anchors the simulation; it is printed, not a verdict.
"""

from __future__ import annotations

import asyncio
import math
import random

import httpx
import pytest

from falsification.report import record_verdict
from falsification.rig import SHAPES, mock_providers, percentile, policy, request, resolved_for, wall
from falsification.sim import FailureMix, SimProvider
from routeproof.core.types import ProviderKind, TenantPolicy
from routeproof.errors import RouterError
from routeproof.mock import MockProviderServer, Scripted
from routeproof.providers.protocol import Provider
from routeproof.router import Router

pytestmark = [pytest.mark.falsify, pytest.mark.asyncio]

A, B, C = ProviderKind.ANTHROPIC, ProviderKind.OPENAI, ProviderKind.BEDROCK
FAILURE_RATE = 0.10
N_VIRTUAL = 4_000
ARRIVALS_PER_S = 2.0
ATTEMPT_TIMEOUT_S = 5.0
REQUIRED_IMPROVEMENT = 0.20
INF = math.inf


def _improvement(single: float, cascade: float) -> float:
    if single == INF:
        return 0.0 if cascade == INF else 1.0
    return 1.0 - cascade / single


def _fmt(seconds: float) -> str:
    return "inf" if seconds == INF else f"{seconds:.2f} s"


async def _open_loop(router: Router, tenant: TenantPolicy, calls: int, rate: float, seed: int) -> list[float]:
    """Latency of each call (inf for an error), calls arriving as a seeded Poisson process."""
    loop = asyncio.get_running_loop()
    arrivals = random.Random(seed)
    latencies: list[float] = []

    async def one(i: int) -> None:
        start = loop.time()
        try:
            await router.call_provider(request(f"latency {i}"), resolved_for(tenant), start + 60, tenant)
        except RouterError:
            latencies.append(INF)
        else:
            latencies.append(loop.time() - start)

    tasks = []
    for i in range(calls):
        tasks.append(asyncio.create_task(one(i)))
        await asyncio.sleep(arrivals.expovariate(rate))
    await asyncio.gather(*tasks)
    return latencies


def _sim_providers(seed: int) -> list[Provider]:
    mix = FailureMix(http_5xx=1.0, http_429=0.0, hang=1.0)
    return [SimProvider(k, seed=seed + n, failure_rate=FAILURE_RATE, mix=mix) for n, k in enumerate((A, B, C))]


def _summary(name: str, latencies: list[float]) -> str:
    done = [x for x in latencies if x != INF]
    return (
        f"{name}: p50 {_fmt(percentile(latencies, 0.5))}, p99 {_fmt(percentile(latencies, 0.99))}, "
        f"completion {len(done) / len(latencies):.2%}, p99 of answered {_fmt(percentile(done, 0.99))}"
    )


@pytest.mark.looptime(end=1_000_000)
async def test_h0_latency_cascade_vs_single_provider() -> None:
    """H0-LATENCY on virtual time: 4,000 open-loop calls per arm, 10 % independent failures."""
    with wall("H0-LATENCY (virtual time)"):
        single = await _open_loop(
            Router(_sim_providers(11), rng=random.Random(17), attempt_timeout_s=ATTEMPT_TIMEOUT_S),
            policy(A),
            N_VIRTUAL,
            ARRIVALS_PER_S,
            5,
        )
        cascade = await _open_loop(
            Router(_sim_providers(11), rng=random.Random(17), attempt_timeout_s=ATTEMPT_TIMEOUT_S),
            policy(A, [B, C]),
            N_VIRTUAL,
            ARRIVALS_PER_S,
            5,
        )
    p99_single, p99_cascade = percentile(single, 0.99), percentile(cascade, 0.99)
    gain = _improvement(p99_single, p99_cascade)
    survived = gain >= REQUIRED_IMPROVEMENT
    record_verdict(
        "H0-LATENCY",
        evidence=(
            f"virtual time, {N_VIRTUAL} calls/arm at {ARRIVALS_PER_S:.0f}/s, {FAILURE_RATE:.0%} failures "
            f"(5xx or hang past {ATTEMPT_TIMEOUT_S:.0f} s), answers 0.5-2 s: {_summary('single', single)}; "
            f"{_summary('cascade', cascade)}; p99 improvement {gain:.1%} (needed >= {REQUIRED_IMPROVEMENT:.0%})"
        ),
        survived=survived,
    )
    assert survived


def _anchor_steps(rng: random.Random, n: int) -> list[Scripted]:
    steps = []
    for _ in range(n):
        if rng.random() < FAILURE_RATE:
            steps.append(rng.choice((Scripted(status=500), Scripted(hang=True))))
        else:
            steps.append(Scripted(delay_before_headers_s=rng.uniform(0.05, 0.2)))
    return steps


async def test_h0_latency_real_socket_anchor() -> None:
    """H0-LATENCY anchor over real sockets: 80 calls per arm at 40/s, answers 50-200 ms, 10 %
    failures (500 or hang past a 0.5 s attempt timeout); p99s printed, no verdict of its own."""
    with wall("H0-LATENCY (real-socket anchor)"):
        async with asyncio.timeout(60):
            results = {}
            for name, tenant in (("single", policy(A)), ("cascade", policy(A, [B, C]))):
                rng = random.Random(13)
                servers = {kind: MockProviderServer(SHAPES[kind]) for kind in (A, B, C)}
                for server in servers.values():
                    await server.start()
                    server.script(*_anchor_steps(rng, 400))
                try:
                    async with httpx.AsyncClient() as client:
                        router = Router(mock_providers(client, servers), attempt_timeout_s=0.5)
                        results[name] = await _open_loop(router, tenant, 80, 40.0, 5)
                        await router.aclose()
                finally:
                    for server in servers.values():
                        await server.stop()
    gain = _improvement(percentile(results["single"], 0.99), percentile(results["cascade"], 0.99))
    print(
        f"H0-LATENCY anchor (real sockets, 80 calls/arm): {_summary('single', results['single'])}; "
        f"{_summary('cascade', results['cascade'])}; p99 improvement {gain:.1%}"
    )
