"""Measure the Redis health store: how long until another replica has applied an effect, and what
``apply`` costs on the call path. Not a test (no timing assertions); run it by hand:

``python -m tests.health_store.measure [N]`` starts its own redis-server on a free loopback port and
prints one JSON line (milliseconds, microseconds).
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from routeproof.core.classify import HealthEffect
from routeproof.core.types import ProviderKind
from routeproof.health_store.redis_store import RedisHealthStore
from tests.health_store.replica import HEALTH
from tools.redis_server import RedisServer, redis_server_binary


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def _measure(url: str, n: int) -> dict[str, float]:
    a = RedisHealthStore(url, HEALTH, namespace="measure")
    b = RedisHealthStore(url, HEALTH, namespace="measure")
    await a.start()
    await b.start()
    loop = asyncio.get_running_loop()
    propagation_ms: list[float] = []
    apply_us: list[float] = []
    for i in range(n):
        seen = b.remote_effects
        started = time.perf_counter()
        a.apply(ProviderKind.OPENAI, HealthEffect.FAILURE, now_ms=round(loop.time() * 1000))
        apply_us.append((time.perf_counter() - started) * 1e6)
        while b.remote_effects == seen:  # noqa: ASYNC110  (yield only: polling every 10 ms would blur the numbers)
            await asyncio.sleep(0)
        propagation_ms.append((time.perf_counter() - started) * 1000)
        if i % 50 == 49:
            a.apply(ProviderKind.OPENAI, HealthEffect.SUCCESS, now_ms=round(loop.time() * 1000))
            await asyncio.sleep(0.05)
    await a.aclose()
    await b.aclose()
    return {
        "effects": n,
        "propagation_p50_ms": round(statistics.median(propagation_ms), 2),
        "propagation_p99_ms": round(_percentile(propagation_ms, 0.99), 2),
        "apply_p50_us": round(statistics.median(apply_us), 1),
        "apply_p99_us": round(_percentile(apply_us, 0.99), 1),
    }


def main(argv: list[str]) -> int:
    """Start a redis-server, measure, print one JSON line."""
    binary = redis_server_binary()
    if binary is None:
        print("redis-server is not installed (python tools/redis_server.py --install)", file=sys.stderr)
        return 2
    with RedisServer(binary, Path(tempfile.mkdtemp(prefix="health-measure-"))) as server:
        print(json.dumps(asyncio.run(_measure(server.url, int(argv[1]) if len(argv) > 1 else 500))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
