"""TRAFFIC-WEIGHTED and TRAFFIC-LEAST-OUTSTANDING (issue 32): deployment groups hold their stated
properties over real sockets, with the calls in flight at once.

Pre-registered claims, seeds and tolerances (set before the rows were first run):

* **TRAFFIC-WEIGHTED.** Three OpenAI-compatible mock deployments of one alias at one priority, weights
  0.5 / 0.3 / 0.2, strategy ``weighted``. 600 calls, 20 in flight, over 127.0.0.1. The claim: the
  observed shares are the weights, judged by Pearson's chi-square (2 degrees of freedom, so the
  p-value is exactly ``exp(-x/2)``) — falsified when p < 0.001 on the real-socket run. Because one
  run's p-value is one draw, a virtual-time run repeats the experiment with in-process deployments
  over 20 pre-registered seeds (``ROUTEPROOF_FALSIFY_SEED``, else 32, and the 19 after it), and the
  sequential sign test of :mod:`falsification.sequential` must establish "the median seed's
  p-value >= 0.05" (true weights give uniform p-values: P(p >= 0.05) = 0.95). A router that
  truncated the 0.2 weight to 0 (Bifrost #5473) or ignored weights gives p ~ 0 on every seed.
* **TRAFFIC-LEAST-OUTSTANDING.** Two equal mock deployments (each answers after 20 ms) at one
  priority, strategy ``least-outstanding``, 400 calls, 30 in flight. The in-flight count of each
  deployment (attempts sent and not yet answered, the router's own count) is sampled every 5 ms
  and the calls each got are read from the servers' journals; the claim: the max/min ratio of the
  two time-averaged in-flight counts is <= 1.25, and no deployment gets more than 60 % of the
  calls (LiteLLM's least-busy sent 93.7 % to one backend, PR #40401). Second part: a fast (10 ms)
  and a slow (80 ms) deployment, same load: the slow one gets less than half of the calls.
"""

from __future__ import annotations

import asyncio
import math
import random
import time

import httpx
import pytest

from falsification.report import record_verdict
from falsification.seeds import base, seed_range
from falsification.sequential import SignTest, distribution
from routeproof.core.routing import resolve
from routeproof.core.types import ChatRequest, FallbackProvider, Message, ProviderKind, ProviderName, TenantPolicy
from routeproof.mock import MockProviderServer, Scripted
from routeproof.mock.script import Shape
from routeproof.providers.openai import OpenAIProvider
from routeproof.router import Router
from routeproof.testing import Reply, ScriptedProvider
from routeproof.traffic import Member, Strategy, TrafficConfig

pytestmark = [pytest.mark.falsify, pytest.mark.asyncio]

ALIAS = "chat"
MODEL = "m"
WEIGHTS = {"dep-a": 500_000, "dep-b": 300_000, "dep-c": 200_000}
N_WEIGHTED = 600
IN_FLIGHT = 20
P_FLOOR = 0.001  # the real-socket run's chi-square p-value must not fall below this
SEED_P = 0.05  # the virtual run's per-seed threshold (the sign test's)
SEED = base(32)
SEEDS = range(SEED, SEED + 20)
N_LEAST = 400
LEAST_IN_FLIGHT = 30
MAX_RATIO = 1.25
MAX_SHARE = 0.60


def tenant(names: list[str]) -> TenantPolicy:
    """``names`` in order, all serving the alias."""
    first, *rest = names
    return TenantPolicy(
        primary={ALIAS: (ProviderName(first), MODEL)},
        fallback_chain=tuple(FallbackProvider(kind=ProviderName(n), model_alias_map={ALIAS: MODEL}) for n in rest),
    )


def req() -> ChatRequest:
    """A small request."""
    return ChatRequest(messages=(Message.user("hi"),), max_tokens=16, alias=ALIAS)


def chi_square_p(counts: dict[str, int], weights: dict[str, int]) -> float:
    """Pearson's chi-square p-value for ``counts`` against ``weights`` (exact for 2 degrees of freedom)."""
    total_w = sum(weights.values())
    n = sum(counts.values())
    x = sum((counts.get(k, 0) - n * w / total_w) ** 2 / (n * w / total_w) for k, w in weights.items())
    assert len(weights) == 3, "exp(-x/2) is the survival function of chi-square with 2 df only"
    return math.exp(-x / 2)


async def run_calls(router: Router, names: list[str], n: int, in_flight: int) -> None:
    """``n`` calls through ``router``, ``in_flight`` at a time."""
    policy = tenant(names)
    resolved = resolve(ALIAS, policy)
    gate = asyncio.Semaphore(in_flight)
    loop = asyncio.get_running_loop()

    async def one() -> None:
        async with gate:
            await router.call_provider(req(), resolved, loop.time() + 20, policy)

    await asyncio.gather(*(one() for _ in range(n)))


def openai_deployments(client: httpx.AsyncClient, servers: dict[str, MockProviderServer]) -> list[OpenAIProvider]:
    """One OpenAI-compatible (vllm) client per mock server, named after it."""
    return [
        OpenAIProvider(kind=ProviderKind.VLLM, api_key="sk-falsify", client=client, base_url=s.base_url + "/v1", name=n)
        for n, s in servers.items()
    ]


@pytest.mark.looptime(False)
async def test_traffic_weighted_shares_over_real_sockets() -> None:
    """TRAFFIC-WEIGHTED, real sockets: 600 calls, 20 in flight, shares vs 0.5/0.3/0.2 by chi-square."""
    servers = {n: MockProviderServer(Shape.OPENAI, name=n) for n in WEIGHTS}
    for server in servers.values():
        await server.start()
    members = {n: Member(priority=0, weight_micro=w) for n, w in WEIGHTS.items()}
    try:
        async with httpx.AsyncClient() as client:
            router = Router(
                openai_deployments(client, servers),
                traffic=TrafficConfig(strategy=Strategy.WEIGHTED, members=members),
                rng=random.Random(SEED),
            )
            started = time.monotonic()
            await run_calls(router, list(WEIGHTS), N_WEIGHTED, IN_FLIGHT)
            took = time.monotonic() - started
        counts = {n: len(s.journal) for n, s in servers.items()}
    finally:
        for server in servers.values():
            await server.stop()
    p = chi_square_p(counts, WEIGHTS)
    survived = p >= P_FLOOR and sum(counts.values()) == N_WEIGHTED
    record_verdict(
        "TRAFFIC-WEIGHTED",
        evidence=f"served {counts} of {N_WEIGHTED} (weights 0.5/0.3/0.2), chi-square p = {p:.3g} "
        f"(floor {P_FLOOR}), {took:.1f} s wall",
        survived=survived,
        procedure="Pearson chi-square, 2 df, p >= 0.001 on the real-socket run",
        seeds=f"router rng {SEED}",
        data={"counts": counts},
    )
    assert survived


@pytest.mark.looptime(end=10_000)
async def test_traffic_weighted_over_seeds_in_virtual_time() -> None:
    """TRAFFIC-WEIGHTED over 20 pre-registered seeds: the median seed's chi-square p >= 0.05 (sign test)."""
    test = SignTest(threshold=SEED_P)
    members = {n: Member(priority=0, weight_micro=w) for n, w in WEIGHTS.items()}
    for seed in SEEDS:
        deployments = [ScriptedProvider(name=n, default=Reply(delay_s=0.01)) for n in WEIGHTS]
        router = Router(
            deployments,
            traffic=TrafficConfig(strategy=Strategy.WEIGHTED, members=members),
            rng=random.Random(seed),
        )
        await run_calls(router, list(WEIGHTS), N_WEIGHTED, IN_FLIGHT)
        test.update(chi_square_p({p.name: len(p.calls) for p in deployments}, WEIGHTS))
        if test.decided:
            break
    record_verdict(
        "TRAFFIC-WEIGHTED",
        evidence=f"{test.outcome}; per-seed p-values: {distribution(test.values)}",
        survived=test.survived,
        procedure="sequential sign test (median seed's chi-square p >= 0.05), alpha 0.05",
        seeds=seed_range(list(SEEDS)[: len(test.values)]),
    )
    assert test.survived


async def _least_outstanding(delays_s: dict[str, float]) -> tuple[dict[str, int], dict[str, float]]:
    """Run N_LEAST calls over mock deployments answering after ``delays_s``; the calls each got and
    each server's time-averaged in-flight count (from its journal and its answers)."""
    servers = {
        n: MockProviderServer(Shape.OPENAI, name=n, default=Scripted(delay_before_headers_s=d))
        for n, d in delays_s.items()
    }
    for server in servers.values():
        await server.start()
    members = {n: Member(priority=0) for n in delays_s}
    samples: dict[str, list[int]] = {n: [] for n in delays_s}
    try:
        async with httpx.AsyncClient() as client:
            router = Router(
                openai_deployments(client, servers),
                traffic=TrafficConfig(strategy=Strategy.LEAST_OUTSTANDING, members=members),
                rng=random.Random(SEED),
            )
            traffic = router._ports.traffic
            done = asyncio.Event()

            async def sample() -> None:
                while not done.is_set():
                    counts = traffic.in_flight()
                    for name in delays_s:
                        samples[name].append(counts.get(name, 0))
                    await asyncio.sleep(0.005)

            sampler = asyncio.create_task(sample())
            await run_calls(router, list(delays_s), N_LEAST, LEAST_IN_FLIGHT)
            done.set()
            await sampler
        calls = {n: len(s.journal) for n, s in servers.items()}
    finally:
        for server in servers.values():
            await server.stop()
    return calls, {n: sum(v) / max(1, len(v)) for n, v in samples.items()}


@pytest.mark.looptime(False)
async def test_traffic_least_outstanding_balances_equal_and_unequal_deployments() -> None:
    """TRAFFIC-LEAST-OUTSTANDING: equal deployments keep a max/min in-flight ratio <= 1.25 and no
    share above 60 %; a slow deployment gets less than half of the calls."""
    calls, mean_in_flight = await _least_outstanding({"dep-a": 0.02, "dep-b": 0.02})
    low = min(mean_in_flight.values())
    ratio = max(mean_in_flight.values()) / low if low > 0 else math.inf
    top_share = max(calls.values()) / sum(calls.values())
    slow_calls, slow_in_flight = await _least_outstanding({"fast": 0.01, "slow": 0.08})
    slow_share = slow_calls["slow"] / sum(slow_calls.values())
    survived = ratio <= MAX_RATIO and top_share <= MAX_SHARE and slow_share < 0.5
    record_verdict(
        "TRAFFIC-LEAST-OUTSTANDING",
        evidence=f"equal: calls {calls}, mean in flight { ({k: round(v, 2) for k, v in mean_in_flight.items()}) }, "
        f"max/min {ratio:.3f} (<= {MAX_RATIO}), top share {top_share:.1%} (<= {MAX_SHARE:.0%}); "
        f"fast 10 ms / slow 80 ms: calls {slow_calls}, slow share {slow_share:.1%} (< 50 %), "
        f"mean in flight { ({k: round(v, 2) for k, v in slow_in_flight.items()}) }",
        survived=survived,
        procedure="time-averaged in-flight counts sampled every 5 ms; fixed bounds",
        seeds=f"router rng {SEED}",
    )
    assert survived
