"""One benchmark arm at one concurrency level, in its own process (so peak RSS and CPU are its own).

``python [-O] -m benchmarks._arms ARM MODE IN_FLIGHT CALLS BASE_URL`` prints one JSON object:

* MODE ``calls``: CALLS non-streamed calls with IN_FLIGHT of them in flight at any time (after a
  warm-up of IN_FLIGHT calls): latency p50/p99, calls/s, CPU per call, peak RSS, failures.
* MODE ``burst``: CALLS calls started at once (IN_FLIGHT is ignored): failures, and the peak RSS
  growth per call in flight.
* MODE ``stream``: CALLS streamed calls one at a time: time to first and to last token.

ARM is ``httpx``, ``httpx+aiohttp`` (httpx over routeproof's chosen aiohttp transport), ``aiohttp``,
``routeproof`` (the router as ``load_router`` builds it: one ``OpenAIProvider`` over
``transport.make_client()``, the default transport; before that existed, over the provider's default
client), ``routeproof-pool`` (the router over ``make_client("httpx")``, the tuned httpx pool over
``IndexedPool``, the default before issue 25), ``routeproof-httpx`` (the router over a plain
``httpx.AsyncClient()`` passed in, as the README's "Using the router" builds it) or ``litellm``
(the LiteLLM Router, when installed).

``ROUTEPROOF_BENCH_ENDPOINT`` (JSON ``{"headers": {...}, "model": "..."}``) points the ``aiohttp``
arm at a gateway instead of the mock (``benchmarks.loadbench``'s gateway arms): its headers and the
model name it asks for.
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import statistics
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

PAYLOAD = {"model": "gpt-4o", "messages": [{"role": "user", "content": "What is 2 + 2?"}], "max_tokens": 16}
STREAM_PAYLOAD = {**PAYLOAD, "stream": True, "stream_options": {"include_usage": True}}
KEY = "sk-bench"

Call = Callable[[], Awaitable[None]]
Stream = Callable[[Callable[[], None]], Awaitable[None]]


def _pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


async def _arm(arm: str, base_url: str) -> tuple[Call, Stream, Callable[[], Awaitable[None]]]:
    """The arm's one-call and one-stream coroutines, and how to close it."""
    url = f"{base_url}/v1/chat/completions"
    headers = {"authorization": f"Bearer {KEY}"}
    endpoint = json.loads(os.environ.get("ROUTEPROOF_BENCH_ENDPOINT", "{}"))
    payload, stream_payload = PAYLOAD, STREAM_PAYLOAD
    if endpoint:  # a gateway in front of the mock: its key and routing headers, its model name
        headers = dict(endpoint.get("headers", headers))
        payload = {**PAYLOAD, "model": endpoint.get("model", PAYLOAD["model"])}
        stream_payload = {**STREAM_PAYLOAD, "model": payload["model"]}
    if arm in ("httpx", "httpx+aiohttp"):
        import httpx

        if arm == "httpx":
            client = httpx.AsyncClient()
        else:  # the transport routeproof picks (transport.py), with no router on top
            from routeproof.transport import make_client

            client = make_client("aiohttp")

        async def call() -> None:
            response = await client.post(url, json=PAYLOAD, headers=headers)
            response.raise_for_status()
            response.json()

        async def stream(token: Callable[[], None]) -> None:
            async with client.stream("POST", url, json=STREAM_PAYLOAD, headers=headers) as response:
                async for line in response.aiter_lines():
                    if line.startswith("data: ") and '"content"' in line:
                        token()

        return call, stream, client.aclose
    if arm == "aiohttp":
        import aiohttp

        session = aiohttp.ClientSession()

        async def call() -> None:
            async with session.post(url, json=payload, headers=headers) as response:
                response.raise_for_status()
                await response.json()

        async def stream(token: Callable[[], None]) -> None:
            async with session.post(url, json=stream_payload, headers=headers) as response:
                async for raw in response.content:
                    if raw.startswith(b"data: ") and b'"content"' in raw:
                        token()

        return call, stream, session.close
    if arm in ("routeproof", "routeproof-httpx", "routeproof-pool"):
        import httpx

        from routeproof import Router, resolve
        from routeproof.core.types import ChatRequest, Message, ProviderKind, TenantPolicy, TextDelta
        from routeproof.providers.openai import OpenAIProvider

        tenant = TenantPolicy(primary={"a": (ProviderKind.OPENAI, "gpt-4o")})
        request = ChatRequest(messages=(Message.user("What is 2 + 2?"),), max_tokens=16, alias="a")
        plain: httpx.AsyncClient | None = httpx.AsyncClient()  # routeproof-httpx: the README's client
        if arm == "routeproof-pool":
            from routeproof.transport import make_client

            plain = make_client("httpx")
        elif arm == "routeproof":  # as the factory builds it: the measured default transport, when there is one
            try:
                from routeproof.transport import make_client
            except ImportError:  # before issue 13: the provider's default client
                plain = None
            else:
                plain = make_client()
        router = Router([OpenAIProvider(api_key=KEY, base_url=f"{base_url}/v1", client=plain)])
        resolved = resolve("a", tenant)
        assert resolved is not None
        loop = asyncio.get_running_loop()

        async def call() -> None:
            await router.call_provider(request, resolved, loop.time() + 30, tenant)

        async def stream(token: Callable[[], None]) -> None:
            async for event in router.call_provider_streaming(request, resolved, loop.time() + 30, tenant):
                if isinstance(event, TextDelta):
                    token()

        async def close() -> None:
            await router.aclose()
            if plain is not None:
                await plain.aclose()

        return call, stream, close
    if arm == "litellm":
        import litellm  # type: ignore[import-not-found, unused-ignore]  # optional: measured only when installed

        lrouter: Any = litellm.Router(
            model_list=[
                {
                    "model_name": "a",
                    "litellm_params": {"model": "openai/gpt-4o", "api_key": KEY, "api_base": f"{base_url}/v1"},
                }
            ]
        )
        messages = PAYLOAD["messages"]

        async def call() -> None:
            await lrouter.acompletion(model="a", messages=messages, max_tokens=16)

        async def stream(token: Callable[[], None]) -> None:
            response = await lrouter.acompletion(model="a", messages=messages, max_tokens=16, stream=True)
            async for chunk in response:
                if chunk.choices and chunk.choices[0].delta.content:
                    token()

        async def noop() -> None:
            return None

        return call, stream, noop
    raise SystemExit(f"unknown arm {arm!r}")


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def _calls(call: Call, in_flight: int, calls: int) -> dict[str, object]:
    errors: Counter[str] = Counter()
    latencies: list[float] = []

    async def worker(todo: list[int]) -> None:
        while todo:
            todo.pop()
            t0 = time.perf_counter()
            try:
                await call()
            except Exception as exc:  # counted and reported: a failure is a result here, not a crash
                errors[type(exc).__name__] += 1
            else:
                latencies.append(time.perf_counter() - t0)

    warm = list(range(in_flight))
    await asyncio.gather(*(worker(warm) for _ in range(in_flight)))
    errors.clear()
    latencies.clear()
    todo = list(range(calls))
    cpu0, t0 = _cpu_s(), time.perf_counter()
    await asyncio.gather(*(worker(todo) for _ in range(in_flight)))
    wall_s, cpu_s = time.perf_counter() - t0, _cpu_s() - cpu0
    return {
        "calls": calls,
        "failures": sum(errors.values()),
        "errors": dict(errors),
        "p50_ms": statistics.median(latencies) * 1e3 if latencies else None,
        "p99_ms": _pct(latencies, 0.99) * 1e3 if latencies else None,
        "calls_per_s": len(latencies) / wall_s,
        "cpu_ms_per_call": cpu_s * 1e3 / calls,
        "wall_s": wall_s,
    }


async def _burst(call: Call, calls: int) -> dict[str, object]:
    """CALLS calls started at once, no warm-up: failures, wall time, and RSS per call in flight."""
    errors: Counter[str] = Counter()
    rss0_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    async def one() -> None:
        try:
            await call()
        except Exception as exc:  # counted and reported: a failure is a result here, not a crash
            errors[type(exc).__name__] += 1

    t0 = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(calls)))
    wall_s = time.perf_counter() - t0
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "calls": calls,
        "failures": sum(errors.values()),
        "errors": dict(errors),
        "calls_per_s": calls / wall_s,
        "wall_s": wall_s,
        "rss_kb_per_call_in_flight": (rss_mb - rss0_mb) * 1024 / calls,
    }


async def _streams(stream: Stream, calls: int) -> dict[str, object]:
    first: list[float] = []
    last: list[float] = []
    for i in range(calls + 5):  # five warm-up streams
        t0 = time.perf_counter()
        seen: list[float] = []
        await stream(lambda: seen.append(time.perf_counter()))  # noqa: B023  # called before the loop moves on
        if i >= 5 and seen:
            first.append(seen[0] - t0)
            last.append(seen[-1] - t0)
    return {
        "calls": calls,
        "failures": calls - len(first),
        "ttft_p50_ms": statistics.median(first) * 1e3,
        "ttft_p99_ms": _pct(first, 0.99) * 1e3,
        "ttlt_p50_ms": statistics.median(last) * 1e3,
        "ttlt_p99_ms": _pct(last, 0.99) * 1e3,
    }


async def _main(arm: str, mode: str, in_flight: int, calls: int, base_url: str) -> dict[str, object]:
    call, stream, close = await _arm(arm, base_url)
    try:
        if mode == "calls":
            result = await _calls(call, in_flight, calls)
        elif mode == "burst":
            result = await _burst(call, calls)
        else:
            result = await _streams(stream, calls)
    finally:
        await close()
    return result


def main(argv: list[str]) -> int:
    """Run one arm and print its JSON line."""
    arm, mode, in_flight, calls, base_url = argv[0], argv[1], int(argv[2]), int(argv[3]), argv[4]
    result = asyncio.run(_main(arm, mode, in_flight, calls, base_url))
    peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: kB
    print(json.dumps({"arm": arm, "mode": mode, "in_flight": in_flight, "peak_rss_mb": peak_rss_mb, **result}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
