"""routeproof's router and LiteLLM's, side by side, on the weighted and the rate-limit scenarios of
issue 32, against the same mock servers (LiteLLM runs in its own virtualenv as a subprocess).

``nice python benchmarks/traffic/side_by_side.py [--litellm /work/peers/litellm-venv/bin/python] [--runs N]``.
Weighted: 600 calls, 20 in flight, weights 0.5/0.3/0.2, chi-square p-value. Least-busy: a fast
(20 ms) and a slow (200 ms) deployment, 400 calls, 30 in flight (routeproof's ``least-outstanding``,
LiteLLM's ``least-busy``): shares and each deployment's peak in flight. Rate limit: two deployments
declared at 30 rpm, each mock *enforcing* 30 per minute itself (429 past it), 120 calls arriving over
30 s (twice the minute's capacity): served, the mocks' 429s, capacity used. Ends with a table.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import random
import subprocess
import sys
from pathlib import Path

import httpx

from routeproof.core.routing import resolve
from routeproof.core.types import ChatRequest, FallbackProvider, Message, ProviderKind, ProviderName, TenantPolicy
from routeproof.errors import RouterError
from routeproof.mock import MockProviderServer, Scripted, Shape
from routeproof.mock.rate_headers import MockRateLimit
from routeproof.providers.openai import OpenAIProvider
from routeproof.router import Router
from routeproof.traffic import DeploymentLimits, Member, Strategy, TrafficConfig

HERE = Path(__file__).resolve().parent
WEIGHTS = (0.5, 0.3, 0.2)
RPM = 30


def chi_square_p(counts: list[int]) -> float:
    n = sum(counts)
    x = sum((c - n * w) ** 2 / (n * w) for c, w in zip(counts, WEIGHTS, strict=True))
    return math.exp(-x / 2)  # 2 degrees of freedom


def would_429(arrivals: list[float], limit: int, window_s: float = 60.0) -> int:
    accepted: list[float] = []
    refused = 0
    for t in sorted(arrivals):
        accepted = [a for a in accepted if a > t - window_s]
        if len(accepted) >= limit:
            refused += 1
        else:
            accepted.append(t)
    return refused


DELAYS = {"weighted": (0.01, 0.01, 0.01), "least_busy": (0.02, 0.2), "rate_limit": (0.01, 0.01)}


def peak_in_flight(arrivals: list[float], delay_s: float) -> int:
    """The most requests a server held at once (each held ``delay_s`` from its arrival)."""
    events = sorted([(t, 1) for t in arrivals] + [(t + delay_s, -1) for t in arrivals])
    peak = level = 0
    for _, step in events:
        level += step
        peak = max(peak, level)
    return peak


async def servers(scenario: str) -> list[MockProviderServer]:
    limit = MockRateLimit(requests=RPM) if scenario == "rate_limit" else None
    made = [
        MockProviderServer(Shape.OPENAI, name=f"dep-{i}", default=Scripted(delay_before_headers_s=d), rate_limit=limit)
        for i, d in enumerate(DELAYS[scenario])
    ]
    for server in made:
        await server.start()
    return made


def policy(names: list[str]) -> TenantPolicy:
    first, *rest = names
    return TenantPolicy(
        primary={"chat": (ProviderName(first), "gpt-4o")},
        fallback_chain=tuple(FallbackProvider(kind=ProviderName(n), model_alias_map={"chat": "gpt-4o"}) for n in rest),
    )


def providers(client: httpx.AsyncClient, made: list[MockProviderServer]) -> list[OpenAIProvider]:
    return [
        OpenAIProvider(
            kind=ProviderKind.OPENAI, api_key="sk-x", client=client, base_url=s.base_url + "/v1", name=s.name
        )
        for s in made
    ]


async def routeproof_weighted(made: list[MockProviderServer]) -> dict[str, object]:
    names = [s.name for s in made]
    members = {n: Member(priority=0, weight_micro=int(w * 1_000_000)) for n, w in zip(names, WEIGHTS, strict=True)}
    async with httpx.AsyncClient() as client:
        router = Router(
            providers(client, made),
            traffic=TrafficConfig(strategy=Strategy.WEIGHTED, members=members),
            rng=random.Random(1),
        )
        tenant = policy(names)
        gate = asyncio.Semaphore(20)
        loop = asyncio.get_running_loop()
        req = ChatRequest(messages=(Message.user("hi"),), max_tokens=8, alias="chat")

        async def one() -> None:
            async with gate:
                await router.call_provider(req, resolve("chat", tenant), loop.time() + 20, tenant)

        await asyncio.gather(*(one() for _ in range(600)))
    return {}


async def routeproof_least_busy(made: list[MockProviderServer]) -> dict[str, object]:
    names = [s.name for s in made]
    members = {n: Member(priority=0) for n in names}
    async with httpx.AsyncClient() as client:
        router = Router(
            providers(client, made),
            traffic=TrafficConfig(strategy=Strategy.LEAST_OUTSTANDING, members=members),
            rng=random.Random(1),
        )
        tenant = policy(names)
        gate = asyncio.Semaphore(30)
        loop = asyncio.get_running_loop()
        req = ChatRequest(messages=(Message.user("hi"),), max_tokens=8, alias="chat")

        async def one() -> None:
            async with gate:
                await router.call_provider(req, resolve("chat", tenant), loop.time() + 20, tenant)

        await asyncio.gather(*(one() for _ in range(400)))
    return {}


async def routeproof_rate_limit(made: list[MockProviderServer]) -> dict[str, object]:
    names = [s.name for s in made]
    limits = {n: DeploymentLimits(rpm=RPM) for n in names}
    refused = failures = 0
    async with httpx.AsyncClient() as client:
        router = Router(providers(client, made), traffic=TrafficConfig(limits=limits))
        tenant = policy(names)
        loop = asyncio.get_running_loop()
        req = ChatRequest(messages=(Message.user("hi"),), max_tokens=8, alias="chat")

        async def one() -> None:
            nonlocal refused, failures
            try:
                await router.call_provider(req, resolve("chat", tenant), loop.time() + 5, tenant)
            except RouterError as exc:
                if "rate limit" in str(exc):
                    refused += 1
                else:
                    failures += 1

        tasks = []
        started = loop.time()
        for i in range(4 * RPM):
            await asyncio.sleep(max(0.0, started + i * 0.25 - loop.time()))
            tasks.append(asyncio.create_task(one()))
        await asyncio.gather(*tasks)
    return {"refused": refused, "failures": failures}


SCENARIOS = {"weighted": routeproof_weighted, "least_busy": routeproof_least_busy, "rate_limit": routeproof_rate_limit}


async def run(scenario: str, litellm: str | None) -> dict[str, object]:
    made = await servers(scenario)
    n = len(made)
    try:
        if litellm is None:
            extra = await SCENARIOS[scenario](made)
        else:
            proc = await asyncio.create_subprocess_exec(
                litellm, str(HERE / "litellm_side.py"), scenario, *(s.base_url for s in made), stdout=subprocess.PIPE
            )
            out, _ = await proc.communicate()
            extra = json.loads(out.decode().strip().splitlines()[-1])
        arrivals = [[e.arrived_monotonic_s for e in s.journal] for s in made]
        provider_429s = [s.rate_window.refused if s.rate_window else 0 for s in made]
    finally:
        for server in made:
            await server.stop()
    counts = [len(a) - r for a, r in zip(arrivals, provider_429s, strict=True)]
    result: dict[str, object] = {
        "router": "litellm" if litellm else "routeproof",
        "scenario": scenario,
        "served": counts,
        "shares": [round(c / max(1, sum(counts)), 3) for c in counts],
        **extra,
    }
    if scenario == "weighted":
        result["chi_square_p"] = round(chi_square_p(counts), 4)
    elif scenario == "least_busy":
        result["peak_in_flight"] = [peak_in_flight(a, d) for a, d in zip(arrivals, DELAYS[scenario], strict=True)]
    else:
        result["provider_429s"] = provider_429s
        result["capacity_used"] = round(sum(min(c, RPM) for c in counts) / (RPM * n), 3)
    return result


def table(results: list[dict[str, object]]) -> str:
    """One markdown row per run."""
    lines = [
        "| scenario | router | served | shares | chi-square p | peak in flight | provider 429s | capacity used |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        cells = [r.get(k, "") for k in ("scenario", "router", "served", "shares", "chi_square_p", "peak_in_flight",
                                          "provider_429s", "capacity_used")]  # fmt: skip
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--litellm", default="/work/peers/litellm-venv/bin/python")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--scenarios", default="weighted,least_busy,rate_limit")
    args = parser.parse_args()
    results = []
    for _ in range(args.runs):
        for scenario in args.scenarios.split(","):
            for who in (None, args.litellm):
                result = asyncio.run(run(scenario, who))
                results.append(result)
                print(json.dumps(result), flush=True)
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
