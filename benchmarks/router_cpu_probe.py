"""The router's own work per call, over an in-process transport: what ``call_provider`` adds to the
same request sent directly with the same ``httpx.AsyncClient``.

``python [-O] -m benchmarks.router_cpu_probe [--calls N] [--rounds R] [--count]``

The provider's transport is ``httpx.MockTransport`` answering a canned Chat Completions body, so no
socket, no mock server and no other process is involved: the difference between the two arms is the
router (kernel step, planning, ledger, normalisation, instrumentation, timers) plus the provider's
request building and parsing. Arms alternate in blocks (rotated rounds, one process), CPU from
``time.process_time``; ``--count`` instead counts Python function calls per call with
``sys.setprofile`` (repeatable whatever the machine's load). Prints one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx

from routeproof import Router, resolve
from routeproof.core.types import ChatRequest, Message, ProviderKind, TenantPolicy
from routeproof.providers.openai import OpenAIProvider

ANSWER = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1,
    "model": "gpt-4o",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "4"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 12, "completion_tokens": 1, "total_tokens": 13},
}
BODY = json.dumps(ANSWER).encode()
PAYLOAD = {"model": "gpt-4o", "messages": [{"role": "user", "content": "What is 2 + 2?"}], "max_tokens": 16}
URL = "http://probe.invalid/v1"


def _answer(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, content=BODY, headers={"content-type": "application/json"})


async def _arms() -> tuple[Callable[[], Awaitable[object]], Callable[[], Awaitable[object]], Router]:
    client = httpx.AsyncClient(transport=httpx.MockTransport(_answer))
    router = Router([OpenAIProvider(api_key="sk-probe", base_url=URL, client=client)])
    tenant = TenantPolicy(primary={"a": (ProviderKind.OPENAI, "gpt-4o")})
    request = ChatRequest(messages=(Message.user("What is 2 + 2?"),), max_tokens=16, alias="a")
    resolved = resolve("a", tenant)
    assert resolved is not None
    loop = asyncio.get_running_loop()

    async def direct() -> object:
        response = await client.post(f"{URL}/chat/completions", json=PAYLOAD, headers={"authorization": "Bearer k"})
        return response.json()

    async def routed() -> object:
        return await router.call_provider(request, resolved, loop.time() + 30, tenant)

    return direct, routed, router


async def _cpu(calls: int, rounds: int) -> dict[str, Any]:
    direct, routed, router = await _arms()
    for _ in range(200):  # warm-up: imports, caches, first-call paths
        await direct()
        await routed()
    per: dict[str, list[float]] = {"direct": [], "routed": []}
    for r in range(rounds):
        order = [("direct", direct), ("routed", routed)]
        for name, arm in order if r % 2 == 0 else order[::-1]:
            t0 = time.process_time()
            for _ in range(calls):
                await arm()
            per[name].append((time.process_time() - t0) * 1e3 / calls)
    await router.aclose()
    d, rt = statistics.median(per["direct"]), statistics.median(per["routed"])
    return {
        "optimize": sys.flags.optimize,
        "calls": calls,
        "rounds": rounds,
        "direct_cpu_ms": d,
        "routed_cpu_ms": rt,
        "router_own_cpu_ms": rt - d,
        "per_round": per,
    }


async def _count(calls: int) -> dict[str, Any]:
    direct, routed, router = await _arms()
    for _ in range(50):
        await direct()
        await routed()
    out: dict[str, Any] = {"optimize": sys.flags.optimize, "calls": calls}
    for name, arm in (("direct", direct), ("routed", routed)):
        seen = [0]

        def profile(frame: object, event: str, arg: object, seen: list[int] = seen) -> None:
            if event == "call":
                seen[0] += 1

        sys.setprofile(profile)
        try:
            for _ in range(calls):
                await arm()
        finally:
            sys.setprofile(None)
        out[f"{name}_python_calls_per_call"] = seen[0] / calls
    out["router_own_python_calls_per_call"] = out["routed_python_calls_per_call"] - out["direct_python_calls_per_call"]
    await router.aclose()
    return out


def main(argv: list[str] | None = None) -> int:
    """Run and print one JSON object."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--count", action="store_true", help="count Python calls per call instead of CPU")
    args = parser.parse_args(argv)
    result = asyncio.run(_count(args.calls) if args.count else _cpu(args.calls, args.rounds))
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
