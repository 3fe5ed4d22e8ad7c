"""The router's own work per call, over an in-process transport: what ``call_provider`` adds to the
same request sent directly with the same ``httpx.AsyncClient``.

``python [-O] -m benchmarks.router_cpu_probe [--calls N] [--rounds R] [--count] [--socket]``

The provider's transport is ``httpx.MockTransport`` answering a canned Chat Completions body, so no
socket, no mock server and no other process is involved: the difference between the two arms is the
router (kernel step, planning, ledger, normalisation, instrumentation, timers) plus the provider's
request building and parsing. Arms alternate in blocks (rotated rounds, one process), CPU from
``time.process_time``; ``--count`` instead counts Python function calls per call with
``sys.setprofile`` (repeatable whatever the machine's load; ``--by-module`` also splits the router's
own calls by source file); ``--conditions`` counts the icontract
conditions evaluated per routed call (0 under ``-O``: the contracts' cost scales with it). Prints one
JSON object.

``--socket``: the same over the default transport instead, against ``routeproof mock`` in its own
process on loopback: the direct arm is a plain aiohttp ``post`` (JSON in, JSON out), the routed arm
the router as built with no client (aiohttp, and its direct path past httpx's client). CPU is this
process's only (the mock's is not counted); both arms make the same socket calls.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from types import FrameType
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


def _routed(router: Router) -> Callable[[], Awaitable[object]]:
    """The routed arm: one call of the probe's request through ``router`` (one OpenAI provider)."""
    tenant = TenantPolicy(primary={"a": (ProviderKind.OPENAI, "gpt-4o")})
    request = ChatRequest(messages=(Message.user("What is 2 + 2?"),), max_tokens=16, alias="a")
    resolved = resolve("a", tenant)
    assert resolved is not None
    loop = asyncio.get_running_loop()

    async def routed() -> object:
        return await router.call_provider(request, resolved, loop.time() + 30, tenant)

    return routed


async def _arms() -> tuple[Callable[[], Awaitable[object]], Callable[[], Awaitable[object]], Router]:
    client = httpx.AsyncClient(transport=httpx.MockTransport(_answer))
    router = Router([OpenAIProvider(api_key="sk-probe", base_url=URL, client=client)])

    async def direct() -> object:
        response = await client.post(f"{URL}/chat/completions", json=PAYLOAD, headers={"authorization": "Bearer k"})
        return response.json()

    return direct, _routed(router), router


async def _socket_arms(
    base_url: str,
) -> tuple[Callable[[], Awaitable[object]], Callable[[], Awaitable[object]], Router]:
    import aiohttp

    router = Router([OpenAIProvider(api_key="sk-probe", base_url=f"{base_url}/v1")])
    session = aiohttp.ClientSession()
    router_close = router.aclose

    async def close_both() -> None:
        await session.close()
        await router_close()

    router.aclose = close_both  # type: ignore[method-assign]  # the probe's one cleanup closes both

    async def direct() -> object:
        url, headers = f"{base_url}/v1/chat/completions", {"authorization": "Bearer k"}
        async with session.post(url, json=PAYLOAD, headers=headers) as response:
            return await response.json()

    return direct, _routed(router), router


async def _cpu(calls: int, rounds: int, base_url: str | None = None) -> dict[str, Any]:
    direct, routed, router = await (_arms() if base_url is None else _socket_arms(base_url))
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
        "transport": "httpx.MockTransport" if base_url is None else "default (aiohttp), loopback mock",
        "per_round": per,
    }


def _where(frame: FrameType) -> str:
    """A frame's source file from its package on (``<string>``: a generated ``__init__``)."""
    from benchmarks.gateway_profile import source_path

    return source_path(frame.f_code.co_filename)


async def _count(calls: int, by_module: bool = False) -> dict[str, Any]:
    direct, routed, router = await _arms()
    for _ in range(50):
        await direct()
        await routed()
    out: dict[str, Any] = {"optimize": sys.flags.optimize, "calls": calls}
    files: dict[str, Counter[str]] = {}
    for name, arm in (("direct", direct), ("routed", routed)):
        seen = files[name] = Counter()

        def profile(frame: FrameType, event: str, arg: object, seen: Counter[str] = seen) -> None:
            if event == "call":
                seen[_where(frame) if by_module else ""] += 1

        sys.setprofile(profile)
        try:
            for _ in range(calls):
                await arm()
        finally:
            sys.setprofile(None)
        out[f"{name}_python_calls_per_call"] = seen.total() / calls
    out["router_own_python_calls_per_call"] = out["routed_python_calls_per_call"] - out["direct_python_calls_per_call"]
    if by_module:  # the routed arm's calls per call by source file, less the direct arm's (the 30 largest)
        own = files["routed"].copy()
        own.subtract(files["direct"])
        out["router_own_python_calls_by_file"] = {f: round(n / calls, 1) for f, n in own.most_common(30)}
    await router.aclose()
    return out


async def _conditions(calls: int) -> dict[str, Any]:
    """icontract conditions evaluated per routed call (each costs its wrapper about nine Python calls)."""
    import icontract._checkers as checkers  # icontract's own hook: every condition goes through it once

    _, routed, router = await _arms()
    for _ in range(50):
        await routed()
    seen = [0]
    select = checkers.select_condition_kwargs

    def counted(*args: Any, **kwargs: Any) -> Any:
        seen[0] += 1
        return select(*args, **kwargs)

    checkers.select_condition_kwargs = counted
    try:
        for _ in range(calls):
            await routed()
    finally:
        checkers.select_condition_kwargs = select
    await router.aclose()
    return {"optimize": sys.flags.optimize, "calls": calls, "conditions_per_routed_call": seen[0] / calls}


def _over_socket(calls: int, rounds: int) -> dict[str, Any]:
    """:func:`_cpu` over the default transport, with ``routeproof mock`` running in its own process."""
    import os
    import tempfile
    from contextlib import ExitStack
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tools.gateway_stack import MOCK_TOML, _start

    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        (Path(tmp) / "mock.toml").write_text(MOCK_TOML)
        _, line = _start(["mock", "--config", str(Path(tmp) / "mock.toml")], dict(os.environ), stack)
        return asyncio.run(_cpu(calls, rounds, base_url=line.split()[-1]))


def main(argv: list[str] | None = None) -> int:
    """Run and print one JSON object."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--count", action="store_true", help="count Python calls per call instead of CPU")
    parser.add_argument("--by-module", action="store_true", help="with --count: the router's own calls by file")
    parser.add_argument("--conditions", action="store_true", help="count icontract conditions per routed call")
    parser.add_argument("--socket", action="store_true", help="the default transport against a loopback mock")
    args = parser.parse_args(argv)
    if args.socket:
        result = _over_socket(args.calls, args.rounds)
    elif args.conditions:
        result = asyncio.run(_conditions(args.calls))
    else:
        result = asyncio.run(_count(args.calls, args.by_module) if args.count else _cpu(args.calls, args.rounds))
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
