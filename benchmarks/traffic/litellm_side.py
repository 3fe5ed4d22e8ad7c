"""LiteLLM's router on one traffic scenario, against mock servers given on the command line.

Run with LiteLLM's own virtualenv (never routeproof's): ``/work/peers/litellm-venv/bin/python
benchmarks/traffic/litellm_side.py weighted URL_A URL_B URL_C``. Prints one JSON line of outcomes.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Mapping
from typing import Any

from litellm import Router


def deployments(urls: list[str], extra: Mapping[int, Mapping[str, object]]) -> list[dict[str, object]]:
    """LiteLLM's model list: one OpenAI-compatible deployment of ``chat`` per URL, with ``extra`` params."""
    out: list[dict[str, object]] = []
    for i, url in enumerate(urls):
        params: dict[str, object] = {"model": "openai/gpt-4o", "api_base": url + "/v1", "api_key": "sk-x"}
        params.update(extra.get(i, {}))
        out.append({"model_name": "chat", "litellm_params": params})
    return out


async def _drive(router: Any, *, in_flight: int, calls: int) -> dict[str, object]:
    """``calls`` chat calls through LiteLLM's ``router``, ``in_flight`` at a time; how many failed."""
    gate = asyncio.Semaphore(in_flight)
    failures = 0

    async def one() -> None:
        nonlocal failures
        async with gate:
            try:
                await router.acompletion(model="chat", messages=[{"role": "user", "content": "hi"}], max_tokens=8)
            except Exception:
                failures += 1

    await asyncio.gather(*(one() for _ in range(calls)))
    return {"failures": failures}


async def weighted(urls: list[str]) -> dict[str, object]:
    weights = [0.5, 0.3, 0.2]
    router = Router(
        model_list=deployments(urls, {i: {"weight": w} for i, w in enumerate(weights)}),
        routing_strategy="simple-shuffle",
        num_retries=0,
    )
    return await _drive(router, in_flight=20, calls=600)


async def least_busy(urls: list[str]) -> dict[str, object]:
    router = Router(model_list=deployments(urls, {}), routing_strategy="least-busy", num_retries=0)
    return await _drive(router, in_flight=30, calls=400)


async def rate_limit(urls: list[str]) -> dict[str, object]:
    rpm = 30
    router = Router(
        model_list=deployments(urls, {i: {"rpm": rpm} for i in range(len(urls))}),
        routing_strategy="usage-based-routing-v2",
        num_retries=0,
    )
    refused = 0
    failures = 0

    async def one() -> None:
        nonlocal refused, failures
        try:
            await router.acompletion(model="chat", messages=[{"role": "user", "content": "hi"}], max_tokens=8)
        except Exception as exc:
            if "RateLimit" in type(exc).__name__ or "No deployments available" in str(exc):
                refused += 1
            else:
                failures += 1

    tasks = []
    started = time.monotonic()
    for i in range(4 * rpm):  # twice the two deployments' capacity of the first minute, over 30 s
        await asyncio.sleep(max(0.0, started + i * 0.25 - time.monotonic()))
        tasks.append(asyncio.create_task(one()))
    await asyncio.gather(*tasks)
    return {"refused": refused, "failures": failures}


if __name__ == "__main__":
    scenario, *urls = sys.argv[1:]
    result = asyncio.run({"weighted": weighted, "least_busy": least_busy, "rate_limit": rate_limit}[scenario](urls))
    print(json.dumps(result))
