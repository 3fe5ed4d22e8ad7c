"""What the router adds: call_provider vs a direct httpx request to the same in-process transport,
streaming time to first token vs reading the same mock stream with httpx, and how late
DeadlineExceeded surfaces with 1,000 concurrent calls. Real time, real event loop (no looptime).

Run: ``tox -e bench`` (or ``pytest benchmarks -s``). Percentiles come from each benchmark's raw
timings and are printed; nothing here asserts a time (measure, don't gate).
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from collections.abc import Callable, Coroutine
from typing import Any

import httpx
import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from benchmarks.deadline_lateness import httpx_lateness, router_lateness, summary
from routeproof import HealthOptions
from routeproof.core.health import HealthConfig
from routeproof.core.routing import resolve
from routeproof.core.types import ChatRequest, Message, ProviderKind, TenantPolicy
from routeproof.mock import MockProviderServer, Shape
from routeproof.providers.openai import OpenAIProvider
from routeproof.router import Router

# Benchmarks stop mock servers with client connections still draining; asyncio 3.11 then reports
# unraisable teardown noise (selector KeyError) that is not what these measure.
pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")

CALLS = 1_000
ANSWER = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1,
    "model": "gpt-4o",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "4"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 12, "completion_tokens": 1, "total_tokens": 13},
}
TENANT = TenantPolicy(primary={"a": (ProviderKind.OPENAI, "gpt-4o")})
REQUEST = ChatRequest(messages=(Message.user("What is 2 + 2?"),), max_tokens=16, alias="a")


def _percentiles(samples_s: list[float]) -> str:
    ordered = sorted(samples_s)
    p50 = statistics.median(ordered) * 1e6
    p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))] * 1e6
    return f"p50 {p50:.0f} us, p99 {p99:.0f} us over {len(ordered)} calls"


def _run_many(make: Callable[[], Coroutine[Any, Any, object]], n: int) -> list[float]:
    async def main() -> list[float]:
        out = []
        for _ in range(n):
            t0 = time.perf_counter()
            await make()
            out.append(time.perf_counter() - t0)
        return out

    return asyncio.run(main())


def _transport() -> httpx.MockTransport:
    body = json.dumps(ANSWER).encode()
    return httpx.MockTransport(
        lambda request: httpx.Response(200, content=body, headers={"content-type": "application/json"})
    )


def test_direct_httpx_call(benchmark: BenchmarkFixture) -> None:
    """Baseline: POST the same body to the same in-process transport with httpx alone."""
    client = httpx.AsyncClient(transport=_transport())
    payload = {"model": "gpt-4o", "messages": [{"role": "user", "content": "What is 2 + 2?"}], "max_tokens": 16}

    async def one() -> object:
        response = await client.post("https://api.openai.com/v1/chat/completions", json=payload)
        return response.json()

    samples = benchmark.pedantic(lambda: _run_many(one, CALLS), rounds=1, iterations=1)  # type: ignore[no-untyped-call]  # pytest-benchmark leaves pedantic unannotated
    benchmark.extra_info["percentiles"] = _percentiles(samples)
    print(f"\ndirect httpx: {_percentiles(samples)}")


def test_router_call_provider(benchmark: BenchmarkFixture) -> None:
    """call_provider (kernel, ledger-free, metrics, span, translation, normalisation) on the same transport."""
    client = httpx.AsyncClient(transport=_transport())
    router = Router([OpenAIProvider(api_key="sk-bench", client=client)], health=HealthOptions(config=HealthConfig()))
    resolved = resolve("a", TENANT)
    assert resolved is not None

    async def one() -> object:
        loop = asyncio.get_running_loop()
        return await router.call_provider(REQUEST, resolved, loop.time() + 30, TENANT)

    samples = benchmark.pedantic(lambda: _run_many(one, CALLS), rounds=1, iterations=1)  # type: ignore[no-untyped-call]  # pytest-benchmark leaves pedantic unannotated
    benchmark.extra_info["percentiles"] = _percentiles(samples)
    print(f"\nrouter.call_provider: {_percentiles(samples)}")


def _ttft_samples(use_router: bool, n: int = 300) -> list[float]:
    async def main() -> list[float]:
        async with MockProviderServer(Shape.OPENAI) as server, httpx.AsyncClient() as client:
            router = Router([OpenAIProvider(api_key="sk-bench", client=client, base_url=f"{server.base_url}/v1")])
            resolved = resolve("a", TENANT)
            assert resolved is not None
            body = {"model": "gpt-4o", "stream": True, "max_tokens": 16,
                    "messages": [{"role": "user", "content": "hi"}]}  # fmt: skip
            out = []
            for _ in range(n):
                t0 = time.perf_counter()
                if use_router:
                    stream = router.call_provider_streaming(
                        REQUEST, resolved, asyncio.get_running_loop().time() + 30, TENANT
                    )
                    await anext(stream)
                    out.append(time.perf_counter() - t0)
                    await stream.aclose()
                else:
                    headers = {"authorization": "Bearer sk-bench"}
                    async with client.stream(
                        "POST", f"{server.base_url}/v1/chat/completions", json=body, headers=headers
                    ) as response:
                        async for line in response.aiter_lines():
                            if line.startswith("data: ") and '"content"' in line:
                                break
                        out.append(time.perf_counter() - t0)
            return out

    return asyncio.run(main())


def test_ttft_direct_httpx_stream(benchmark: BenchmarkFixture) -> None:
    """Baseline: time to the first content chunk reading the mock stream with httpx."""
    samples = benchmark.pedantic(lambda: _ttft_samples(False), rounds=1, iterations=1)  # type: ignore[no-untyped-call]  # pytest-benchmark leaves pedantic unannotated
    print(f"\nTTFT direct httpx: {_percentiles(samples)}")


def test_ttft_router_stream(benchmark: BenchmarkFixture) -> None:
    """Time to the first TextDelta through call_provider_streaming against the same mock stream."""
    samples = benchmark.pedantic(lambda: _ttft_samples(True), rounds=1, iterations=1)  # type: ignore[no-untyped-call]  # pytest-benchmark leaves pedantic unannotated
    print(f"\nTTFT router: {_percentiles(samples)}")


def test_deadline_lateness_with_1000_concurrent_calls() -> None:
    """1,000 concurrent calls to a provider that never answers: how late past the deadline each fails."""
    lateness = asyncio.run(router_lateness(1_000))
    assert len(lateness) == 1_000
    print(f"\nDeadlineExceeded lateness, 1000 concurrent calls: {summary(lateness)}")
    print(f"bare httpx under asyncio.timeout_at: {summary(asyncio.run(httpx_lateness(1_000)))}")
