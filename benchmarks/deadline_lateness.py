"""How late DeadlineExceeded surfaces when many concurrent calls share one deadline (real time).

``python -m benchmarks.deadline_lateness [N]`` runs N calls (default 1,000) against a provider that never
answers and prints p50/p99/max lateness for the router and for bare httpx under
``asyncio.timeout_at``. Run it under ``python -O`` too: that switches icontract's run-time checks
off, as a production deployment may. The benchmark suite calls :func:`router_lateness`.
"""

from __future__ import annotations

import asyncio
import statistics
import sys

import httpx

from routeproof import DeadlineExceeded, Router, resolve
from routeproof.core.types import ChatRequest, Message, ProviderKind, TenantPolicy
from routeproof.providers.openai import OpenAIProvider

TENANT = TenantPolicy(primary={"a": (ProviderKind.OPENAI, "gpt-4o")})
REQUEST = ChatRequest(messages=(Message.user("What is 2 + 2?"),), max_tokens=16, alias="a")
URL = "https://api.openai.com/v1/chat/completions"


async def _hang(request: httpx.Request) -> httpx.Response:
    await asyncio.sleep(3600)
    raise AssertionError("unreachable")


async def router_lateness(calls: int, deadline_in_s: float = 1.0, gap_s: float = 0.0) -> list[float]:
    """Seconds past its deadline at which each call's DeadlineExceeded was caught, in the order caught.

    The calls start together; call i's deadline is ``deadline_in_s + i * gap_s`` from now (0: one
    shared deadline)."""
    client = httpx.AsyncClient(transport=httpx.MockTransport(_hang))
    router = Router([OpenAIProvider(api_key="sk-bench", client=client)])
    resolved = resolve("a", TENANT)
    assert resolved is not None
    loop = asyncio.get_running_loop()
    start = loop.time() + deadline_in_s
    lateness: list[float] = []

    async def one(deadline: float) -> None:
        try:
            await router.call_provider(REQUEST, resolved, deadline, TENANT)
        except DeadlineExceeded:
            lateness.append(loop.time() - deadline)

    await asyncio.gather(*(one(start + i * gap_s) for i in range(calls)))
    await router.aclose()
    return lateness


async def httpx_lateness(calls: int, deadline_in_s: float = 1.0) -> list[float]:
    """The same for bare httpx requests under ``asyncio.timeout_at`` (the floor to compare with)."""
    client = httpx.AsyncClient(transport=httpx.MockTransport(_hang))
    loop = asyncio.get_running_loop()
    deadline = loop.time() + deadline_in_s
    lateness: list[float] = []

    async def one() -> None:
        try:
            async with asyncio.timeout_at(deadline):
                await client.post(URL, json={"a": 1})
        except TimeoutError:
            lateness.append(loop.time() - deadline)

    await asyncio.gather(*(one() for _ in range(calls)))
    await client.aclose()
    return lateness


async def _single(deadline_in_s: float) -> float:
    lateness = await router_lateness(1, deadline_in_s)
    return lateness[0] if lateness else float("nan")


def single_lateness(runs: int, deadline_in_s: float = 1.0) -> list[float]:
    """Seconds past the deadline for ``runs`` single calls, one after another, each on a fresh loop
    (the caller's deadline ends during a stalled attempt; ``deadline_in_s=30`` for the budget case)."""
    return [asyncio.run(_single(deadline_in_s)) for _ in range(runs)]


async def staggered_lateness(calls: int, first_in_s: float = 0.5, gap_s: float = 0.02) -> list[float]:
    """Seconds past its own deadline for each of ``calls`` calls whose deadlines are ``gap_s`` apart,
    so they expire one at a time (the single-call case, sampled often enough for a p99 in seconds:
    a p99 of 20 sequential calls is their maximum). The first deadline's sample (cold paths) is dropped."""
    return (await router_lateness(calls + 1, first_in_s, gap_s))[1:]


def summary(lateness: list[float]) -> str:
    """p50, p99 and max in milliseconds."""
    ordered = sorted(lateness)
    p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
    return (
        f"p50 {statistics.median(ordered) * 1e3:.1f} ms, p99 {p99 * 1e3:.1f} ms, max {ordered[-1] * 1e3:.1f} ms "
        f"over {len(ordered)} calls"
    )


def main(argv: list[str]) -> int:
    """Measure and print both."""
    calls = int(argv[0]) if argv else 1_000
    contracts = "on" if __debug__ else "off (-O)"
    print(f"router, contracts {contracts}: {summary(asyncio.run(router_lateness(calls)))}")
    print(f"bare httpx: {summary(asyncio.run(httpx_lateness(calls)))}")
    print(f"router, single call, contracts {contracts}: {summary(single_lateness(10))}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
