"""A gateway-like process for the Redis restart test: ``python -m tests.hardening.restart_worker URL NS S``.

Prints ``ready``, then runs 20 concurrent callers for S seconds on a Redis ledger (no budget limit, a
2 s lease) and prints one JSON line: calls answered (each committed exactly COST), calls refused with
LedgerUnavailable, and any other exception (a 500 at a gateway), by type.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

import httpx

from routeproof.core.ledger import BudgetLimits
from routeproof.ledger_store import LedgerUnavailable
from routeproof.ledger_store.redis_store import RedisLedgerStore
from tests.ledger_store.worker import ANSWER, call, router_on

IN_FLIGHT = 20
LEASE_MS = 2_000


async def run(url: str, namespace: str, seconds: float) -> dict[str, object]:
    """Call until ``seconds`` have passed; the counts."""

    async def answer(request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(0.005)
        return httpx.Response(200, json=ANSWER)

    store = RedisLedgerStore(url, BudgetLimits(), namespace=namespace, lease_ms=LEASE_MS, timeout_s=0.5)
    router = router_on(store, httpx.MockTransport(answer))
    counts: dict[str, object] = {"ok": 0, "unavailable": 0, "other": []}
    end = time.monotonic() + seconds  # from here: the imports are done

    async def caller() -> None:
        while time.monotonic() < end:
            try:
                await call(router)
                counts["ok"] = int(str(counts["ok"])) + 1
            except LedgerUnavailable:
                counts["unavailable"] = int(str(counts["unavailable"])) + 1
                await asyncio.sleep(0.05)
            except Exception as exc:
                other = counts["other"]
                assert isinstance(other, list)
                other.append(f"{type(exc).__name__}: {exc}"[:200])

    print("ready", flush=True)
    async with router:
        await asyncio.gather(*(caller() for _ in range(IN_FLIGHT)))
    return counts


if __name__ == "__main__":
    print(json.dumps(asyncio.run(run(sys.argv[1], sys.argv[2], float(sys.argv[3])))), flush=True)
