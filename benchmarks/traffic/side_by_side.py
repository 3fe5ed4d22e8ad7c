"""routeproof's router and LiteLLM's, side by side, on the weighted and the rate-limit scenarios of
issue 32, against the same mock servers (LiteLLM runs in its own virtualenv as a subprocess).

``python benchmarks/traffic/side_by_side.py [--litellm /work/venv-litellm/bin/python]``. Weighted:
600 calls, 20 in flight, weights 0.5/0.3/0.2, chi-square p-value. Rate limit: two deployments at
30 rpm, 120 calls arriving over 30 s (twice the first minute's capacity): the arrivals each server
saw in the minute, and how many a provider enforcing 30 rpm would have answered 429.
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


async def servers(n: int) -> list[MockProviderServer]:
    made = [
        MockProviderServer(Shape.OPENAI, name=f"dep-{i}", default=Scripted(delay_before_headers_s=0.01))
        for i in range(n)
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


async def run(scenario: str, litellm: str | None) -> dict[str, object]:
    n = 3 if scenario == "weighted" else 2
    made = await servers(n)
    try:
        if litellm is None:
            extra = await (routeproof_weighted if scenario == "weighted" else routeproof_rate_limit)(made)
        else:
            proc = await asyncio.create_subprocess_exec(
                litellm, str(HERE / "litellm_side.py"), scenario, *(s.base_url for s in made), stdout=subprocess.PIPE
            )
            out, _ = await proc.communicate()
            extra = json.loads(out.decode().strip().splitlines()[-1])
        arrivals = [[e.arrived_monotonic_s for e in s.journal] for s in made]
    finally:
        for server in made:
            await server.stop()
    counts = [len(a) for a in arrivals]
    result: dict[str, object] = {
        "router": "litellm" if litellm else "routeproof",
        "scenario": scenario,
        "served": counts,
        **extra,
    }
    if scenario == "weighted":
        result["chi_square_p"] = round(chi_square_p(counts), 4)
    else:
        result["provider_429s"] = [would_429(a, RPM) for a in arrivals]
        result["capacity_used"] = round(sum(min(c, RPM) for c in counts) / (RPM * n), 3)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--litellm", default="/work/venv-litellm/bin/python")
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    for _ in range(args.runs):
        for scenario in ("weighted", "rate_limit"):
            for who in (None, args.litellm):
                print(json.dumps(asyncio.run(run(scenario, who))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
