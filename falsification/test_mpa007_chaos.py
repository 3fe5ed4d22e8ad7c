"""FALSIFY-MPA-007 through the full router over real sockets: every provider (Anthropic, OpenAI and
Bedrock mocks) fails about half its requests at random (429, 500, or no answer within the attempt
timeout); N calls, 20 at a time, must still complete.

Claim: completion >= 99 %. With 3 providers x 3 attempts each and independent 50 % failures,
P(a call sees 9 failures) = 0.5**9 ~ 0.2 %, so a router that really retries and cascades completes
~99.8 % of calls; one that stops early (no retry, or no failover) completes at most 1 - 0.5**3 =
87.5 %. The verdict is a one-sided binomial test, not a raw cut-off (a raw ">= 99 %" at N = 200
falsifies a router whose true completion is 99.5 % about one run in twelve): the claim is
falsified when the observed failures would happen with probability < 0.1 % if the true failure
rate were 1 %. At N = 200 that is >= 9 failed calls; a router without retries or without failover
fails ~25 and is falsified with certainty.

**The real-socket attempt timeout is calibrated to this machine** (since 2026-11-30). It was a
fixed 0.3 s, 6x the slowest scripted answer (50 ms); on a machine at load average ~10 the mocks'
*healthy* answers, served by the same event loop as the router, took longer than that, so answers
timed out as if they were failures and the row was falsified by load (190/200 at load ~10, 199/200
at ~7.5, same seed). The claim is about the router (it retries and fails over through random
failures), not about how fast this machine serves the mock, so the timeout now keeps the 6x margin
against what the machine really delivers: before the run, 80 calls whose answers are the chaos
run's healthy answers (0-50 ms, no failures), 20 in flight, go through the same router path with a
10 s timeout; the first 20 warm up (connections, first-use imports) and are not counted; the
attempt timeout is 6x the slowest of the other 60 round trips, at least 0.3 s (so an
idle machine runs the row exactly as before) and at most 2 s (9 attempts of 2 s plus the backoff
sleeps fit the 30 s failover budget). Nothing else changes: the same failures, the same N, the same
binomial test, and a hang still never answers whatever the timeout, so a router that does not retry
or fail over is falsified as before (a teeth break pins that for this run). The evidence gives the
calibration's round trips, the timeout used and the load average.

Two runs record the row: the real-socket run the seed asks for (200 calls, 20 in flight), and a
large-N run on virtual time with in-process providers drawing the same failures (1,000 calls
arriving at 20/s, open loop, the router's default health settings), because at N = 200 a
completion rate near 99 % cannot be told from 99 % by chance. The virtual run is judged over
pre-registered seeds (``ROUTEPROOF_FALSIFY_SEED``, else 7, and the 19 after it) by the sequential test
of :mod:`falsification.sequential`: the claim "the median seed completes >= 99 %" survives only when
the evidence for it reaches 20 (alpha 5 %); refuted or undecided after 20 seeds is falsified. Its
first seed repeats with the cross-call cooldown switched off (threshold 10^9) and with
``CoolingPolicy.SKIP`` as diagnostics, printed but not a verdict.
"""

from __future__ import annotations

import asyncio
import os
import random

import httpx
import pytest

from falsification.report import record_verdict
from falsification.rig import SHAPES, mock_providers, percentile, policy, request, resolved_for, wall
from falsification.seed_pool import seed_pool
from falsification.seeds import base, seed_range
from falsification.sequential import SignTest, distribution
from falsification.sim import FailureMix, SimProvider
from routeproof import HealthOptions, LimitOptions
from routeproof.clock import ms_of_s
from routeproof.core.health import HealthConfig
from routeproof.core.routing import CoolingPolicy
from routeproof.core.types import ProviderKind
from routeproof.errors import RouterError
from routeproof.mock import MockProviderServer, Scripted
from routeproof.report._stats import binomial_tail_at_least
from routeproof.router import Router

pytestmark = [pytest.mark.falsify, pytest.mark.asyncio]

VIRTUAL_CALLS = 1_000
ARRIVALS_PER_S = 20.0

N_CALLS = 200
IN_FLIGHT = 20
ATTEMPT_TIMEOUT_S = 0.3  # the virtual run's timeout, and the real-socket run's floor
CALIBRATION_CALLS = 60
WARM_UP_CALLS = IN_FLIGHT  # the first wave opens the connections: not counted
CALIBRATION_FACTOR = 6.0  # 0.3 s / the slowest scripted answer (50 ms)
MAX_ATTEMPT_TIMEOUT_S = 2.0  # 9 attempts x 2 s + backoff sleeps < the 30 s failover budget
FAILURE_RATE = 0.5
CLAIMED_FAILURE_RATE = 0.01  # the claim: >= 99 % of calls complete
SIGNIFICANCE = 0.001
SEED = base(7)  # the real-socket run's mock scripts (its router's jitter: SEED * 10)
VIRTUAL_SEEDS = range(base(7), base(7) + 20)  # the virtual run's pre-registered seeds
SEQUENTIAL_ALPHA = 0.05


def binomial_tail(n: int, k: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p), in log space (the pooled N of many seeds overflows ``comb``)."""
    return binomial_tail_at_least(n, k, p)


def completion_data(n: int, outcomes: dict[str, int], *, diagnostic: bool) -> dict[str, object]:
    """One run for the report: calls, completions, outcome counts and the verdict test's parameters."""
    completed = outcomes.get("completed", 0)
    return {
        "calls": n,
        "completed": completed,
        "outcomes": dict(outcomes),
        "p_value": falsified(n, n - completed)[1],
        "claimed_completion": 1 - CLAIMED_FAILURE_RATE,
        "significance": SIGNIFICANCE,
        "diagnostic": diagnostic,
    }


def falsified(n: int, failures: int) -> tuple[bool, float]:
    """Whether ``failures`` of ``n`` calls refute a <= 1 % failure rate at the 0.1 % level, and the p-value."""
    p_value = binomial_tail(n, failures, CLAIMED_FAILURE_RATE)
    return p_value < SIGNIFICANCE, p_value


A, OA, BR = ProviderKind.ANTHROPIC, ProviderKind.OPENAI, ProviderKind.BEDROCK


def chaos_steps(rng: random.Random, n: int) -> list[Scripted]:
    """``n`` steps: half (at random) a 429, a 500 or a hang past the attempt timeout; the rest a
    well-formed answer after 0-50 ms."""
    steps = []
    for _ in range(n):
        if rng.random() < FAILURE_RATE:
            steps.append(rng.choice((Scripted(status=429), Scripted(status=500), Scripted(hang=True))))
        else:
            steps.append(Scripted(delay_before_headers_s=rng.uniform(0.0, 0.05)))
    return steps


async def test_mpa_007_completion_under_50_percent_failures() -> None:
    """FALSIFY-MPA-007: 200 calls, 20 in flight, every provider failing ~50 % of requests at random;
    completion rate and p50/p99 latency printed; survives unless the failures refute a 1 % rate."""
    with wall("FALSIFY-MPA-007 (calibration)"):
        async with asyncio.timeout(60):
            round_trips = await _calibrate()
    timeout_s = attempt_timeout_for(round_trips)
    with wall(f"FALSIFY-MPA-007 (attempt timeout {timeout_s:.2f} s)"):
        async with asyncio.timeout(90 + 60 * timeout_s):
            await _run(timeout_s, round_trips)


def attempt_timeout_for(round_trips: list[float]) -> float:
    """The real-socket run's attempt timeout: 6x the slowest healthy round trip, within [0.3, 2] s."""
    return min(MAX_ATTEMPT_TIMEOUT_S, max(ATTEMPT_TIMEOUT_S, CALIBRATION_FACTOR * max(round_trips)))


async def _calibrate() -> list[float]:
    """Round trips of ``CALIBRATION_CALLS`` calls answered by the chaos run's healthy steps (no failures),
    ``IN_FLIGHT`` at a time, through the router over real sockets with a 10 s attempt timeout, after
    ``WARM_UP_CALLS`` calls that are not counted."""
    loop = asyncio.get_running_loop()
    rng = random.Random(f"mpa-007-calibration/{SEED}")
    servers = {kind: MockProviderServer(SHAPES[kind]) for kind in (A, OA, BR)}
    tenant = policy(A, [OA, BR])
    round_trips: list[float] = []
    for server in servers.values():
        await server.start()
        steps = WARM_UP_CALLS + CALIBRATION_CALLS
        server.script(*(Scripted(delay_before_headers_s=rng.uniform(0.0, 0.05)) for _ in range(steps)))
    try:
        async with httpx.AsyncClient() as client:
            router = Router(
                mock_providers(client, servers), rng=random.Random(SEED), limits=LimitOptions(attempt_timeout_ms=10_000)
            )
            slots = asyncio.Semaphore(IN_FLIGHT)

            async def one(i: int, timed: list[float]) -> None:
                async with slots:
                    start = loop.time()
                    await router.call_provider(request(f"calibrate {i}"), resolved_for(tenant), start + 30, tenant)
                    timed.append(loop.time() - start)

            await asyncio.gather(*(one(i, []) for i in range(WARM_UP_CALLS)))
            await asyncio.gather(*(one(i, round_trips) for i in range(CALIBRATION_CALLS)))
            await router.aclose()
    finally:
        for server in servers.values():
            await server.stop()
    return round_trips


async def _run(attempt_timeout_s: float, round_trips: list[float]) -> None:
    loop = asyncio.get_running_loop()
    rng = random.Random(SEED)
    servers = {kind: MockProviderServer(SHAPES[kind]) for kind in (A, OA, BR)}
    for server in servers.values():
        await server.start()
        server.script(*chaos_steps(rng, 3 * N_CALLS))
        server.set_default(Scripted(status=500))  # never reached: 600 scripted steps per server
    tenant = policy(A, [OA, BR])
    latencies: list[float] = []
    outcomes: dict[str, int] = {}
    attempts_made = 0
    try:
        async with httpx.AsyncClient() as client:
            router = Router(
                mock_providers(client, servers),
                rng=random.Random(SEED * 10),
                limits=LimitOptions(attempt_timeout_ms=ms_of_s(attempt_timeout_s)),
            )
            slots = asyncio.Semaphore(IN_FLIGHT)

            async def one(i: int) -> None:
                nonlocal attempts_made
                async with slots:
                    start = loop.time()
                    try:
                        resp = await router.call_provider(
                            request(f"chaos {i}"), resolved_for(tenant), loop.time() + 30, tenant
                        )
                    except RouterError as exc:
                        outcomes[type(exc).__name__] = outcomes.get(type(exc).__name__, 0) + 1
                        latencies.append(float("inf"))
                        attempts_made += len(exc.attempts)
                    else:
                        outcomes["completed"] = outcomes.get("completed", 0) + 1
                        latencies.append(loop.time() - start)
                        attempts_made += len(resp.attempts)

            await asyncio.gather(*(one(i) for i in range(N_CALLS)))
            await router.aclose()
    finally:
        for server in servers.values():
            await server.stop()
    served = {k.value: len(s.journal) for k, s in servers.items()}
    completed = outcomes.get("completed", 0)
    rate = completed / N_CALLS
    done = [x for x in latencies if x != float("inf")]
    p50, p99 = percentile(done, 0.5), percentile(done, 0.99)
    refuted, p_value = falsified(N_CALLS, N_CALLS - completed)
    survived = not refuted
    record_verdict(
        "FALSIFY-MPA-007",
        evidence=(
            f"{N_CALLS} calls, {IN_FLIGHT} in flight, 3 real-socket mocks each failing ~{FAILURE_RATE:.0%} "
            f"(429/500/hang past the {attempt_timeout_s:.2f} s attempt timeout, calibrated: healthy round trips "
            f"p50 {percentile(round_trips, 0.5) * 1000:.0f} ms, max {max(round_trips) * 1000:.0f} ms, load average "
            f"{os.getloadavg()[0]:.1f}): completion {rate:.1%} (P(>= this many failures | "
            f"1 % failure rate) = {p_value:.3g}, falsified below {SIGNIFICANCE}), "
            f"outcomes {outcomes}, {attempts_made} attempts (requests per provider {served}); "
            f"latency of completed calls p50 {p50 * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms"
        ),
        survived=survived,
        procedure=f"one run, one-sided binomial test: falsified when the failures refute a 1 % failure rate at "
        f"{SIGNIFICANCE} (at the virtual run's ~99.7 % completion P(>= 9 failures of 200) < 1e-6, so the seed "
        f"hardly matters); attempt timeout {CALIBRATION_FACTOR:.0f}x the slowest of {CALIBRATION_CALLS} healthy "
        f"round trips measured just before, within [{ATTEMPT_TIMEOUT_S}, {MAX_ATTEMPT_TIMEOUT_S}] s, so machine "
        "load does not turn healthy answers into failures",
        seeds=f"{SEED} (mock scripts), {SEED * 10} (router jitter)",
        data={"real_socket": completion_data(N_CALLS, outcomes, diagnostic=False)},
    )
    assert survived


async def _open_loop(router: Router, calls: int, seed: int) -> dict[str, int]:
    loop = asyncio.get_running_loop()
    tenant = policy(A, [OA, BR])
    arrivals = random.Random(seed)
    outcomes: dict[str, int] = {}

    async def one(i: int) -> None:
        try:
            await router.call_provider(request(f"chaos {i}"), resolved_for(tenant), loop.time() + 30, tenant)
        except RouterError as exc:
            outcomes[type(exc).__name__] = outcomes.get(type(exc).__name__, 0) + 1
        else:
            outcomes["completed"] = outcomes.get("completed", 0) + 1

    tasks = []
    for i in range(calls):
        tasks.append(asyncio.create_task(one(i)))
        await asyncio.sleep(arrivals.expovariate(ARRIVALS_PER_S))
    await asyncio.gather(*tasks)
    return outcomes


def _sim_router(health: HealthConfig | None, seed: int, cooling: CoolingPolicy = CoolingPolicy.DEMOTE) -> Router:
    mix = FailureMix(http_5xx=1.0, http_429=1.0, hang=1.0)
    providers = [
        SimProvider(kind, seed=seed + n, failure_rate=FAILURE_RATE, latency_s=(0.0, 0.05), mix=mix)
        for n, kind in enumerate((A, OA, BR))
    ]
    return Router(
        providers,
        rng=random.Random(seed),
        limits=LimitOptions(attempt_timeout_ms=ms_of_s(ATTEMPT_TIMEOUT_S)),
        health=HealthOptions(config=health, cooling=cooling),
    )


async def _seed_run(seed: int) -> dict[str, int]:
    """One pre-registered seed of the large-N run: default router settings."""
    return await _open_loop(_sim_router(None, seed), VIRTUAL_CALLS, seed)


async def _no_breaker(seed: int) -> dict[str, int]:
    """The diagnostic without the cross-call cooldown."""
    return await _open_loop(_sim_router(HealthConfig(failure_threshold=10**9), seed), VIRTUAL_CALLS, seed)


async def _skipping(seed: int) -> dict[str, int]:
    """The diagnostic with cooling providers dropped, not demoted."""
    return await _open_loop(_sim_router(None, seed, CoolingPolicy.SKIP), VIRTUAL_CALLS, seed)


async def test_mpa_007_large_n_on_virtual_time() -> None:
    """FALSIFY-MPA-007 at large N over pre-registered seeds: per seed, 1,000 calls arriving at 20/s against
    3 simulated providers failing 50 % of attempts (5xx/429/hang), default router settings; a sequential
    test by betting on "the median seed completes >= 99 %"."""
    test = SignTest(threshold=1 - CLAIMED_FAILURE_RATE, alpha=SEQUENTIAL_ALPHA)
    pooled: dict[str, int] = {}
    seeds_used: list[int] = []
    first = VIRTUAL_SEEDS[0]
    label = f"FALSIFY-MPA-007 (virtual time, up to {len(VIRTUAL_SEEDS)} seeds)"
    with wall(label), seed_pool(end=10_000_000) as pool:
        # before the seeds: they run first, so none is left to run behind a seed past the stopping one
        diagnostics = pool.submit(_no_breaker, first), pool.submit(_skipping, first)
        async for seed, outcomes in pool.in_order(_seed_run, VIRTUAL_SEEDS, stop=lambda: test.decided):
            test.update(outcomes.get("completed", 0) / VIRTUAL_CALLS)
            seeds_used.append(seed)
            for key, count in outcomes.items():
                pooled[key] = pooled.get(key, 0) + count
            print(
                f"FALSIFY-MPA-007 seed {seed}: completion {test.values[-1]:.1%} "
                f"(e_for {test.e_for:.2f}, e_against {test.e_against:.2f})"
            )
        no_breaker, skipping = [await diagnostic for diagnostic in diagnostics]
    calls = VIRTUAL_CALLS * len(seeds_used)
    rate = pooled.get("completed", 0) / calls
    rate_no_breaker = no_breaker.get("completed", 0) / VIRTUAL_CALLS
    rate_skipping = skipping.get("completed", 0) / VIRTUAL_CALLS
    _, p_value = falsified(calls, calls - pooled.get("completed", 0))
    survived = test.survived
    record_verdict(
        "FALSIFY-MPA-007",
        evidence=(
            f"virtual time, {VIRTUAL_CALLS} calls/seed at {ARRIVALS_PER_S:.0f}/s, 3 simulated providers failing "
            f"{FAILURE_RATE:.0%}: {test.outcome}; {test.successes}/{len(test.values)} seeds >= "
            f"{1 - CLAIMED_FAILURE_RATE:.0%}; per-seed completion {distribution(test.values)}; pooled completion "
            f"{rate:.2%} {pooled} (binomial p = {p_value:.3g} against a 1 % failure rate, descriptive); "
            f"diagnostics on seed {first}: cross-call cooldown "
            f"off: {rate_no_breaker:.1%} {no_breaker}; CoolingPolicy.SKIP (cooling providers "
            f"dropped, not demoted): {rate_skipping:.1%} {skipping}"
        ),
        survived=survived,
        procedure=(
            f"sequential test by betting over pre-registered seeds (stop when an e-value reaches "
            f"{1 / SEQUENTIAL_ALPHA:.0f}): claim = median per-seed completion >= {1 - CLAIMED_FAILURE_RATE:.0%}, "
            f"Type-I error of 'survived' <= {SEQUENTIAL_ALPHA:.0%} (Ville); refuted or undecided = falsified"
        ),
        seeds=f"{seed_range(seeds_used)} used of the pre-registered {seed_range(VIRTUAL_SEEDS)}",
        data={
            "virtual": completion_data(calls, pooled, diagnostic=False),
            "virtual_no_cooldown": completion_data(VIRTUAL_CALLS, no_breaker, diagnostic=True),
            "virtual_skip": completion_data(VIRTUAL_CALLS, skipping, diagnostic=True),
        },
    )
    assert survived
