"""A gateway process for the multi-process tests: a Router on a shared ledger store, calls in flight.

``python -m tests.ledger_store.worker spend STORE IN_FLIGHT`` runs IN_FLIGHT concurrent callers,
each calling until the budget refuses it, and prints one JSON line with what it was granted.
``python -m tests.ledger_store.worker hold STORE COMMITTED HELD`` completes COMMITTED calls, then
starts HELD calls the provider never answers (their reservations held) and waits to be killed.

STORE is ``sqlite:PATH:LEASE_MS`` or ``redis:LEASE_MS:NAMESPACE:URL``. The provider is an in-process
OpenAI-shaped transport (httpx.MockTransport): the ledger, not the network, is what is under test.
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
from pathlib import Path

import httpx

from routeproof import BudgetOptions
from routeproof.core.ledger import BudgetLimits, cost_pico_usd, parse_usd, worst_case_cost_pico_usd
from routeproof.core.pricing import load_pricing
from routeproof.core.routing import resolve
from routeproof.core.types import ChatRequest, Message, ProviderKind, TenantPolicy, Usage
from routeproof.errors import BudgetExhausted
from routeproof.ledger_store import LedgerStore, SqliteLedgerStore
from routeproof.providers.openai import OpenAIProvider
from routeproof.router import Router

PRICING = load_pricing((Path(__file__).resolve().parents[2] / "config" / "pricing.toml").read_text(encoding="utf-8"))
MODEL = "gpt-4o-mini"
PRICE = PRICING.price_for(ProviderKind.OPENAI, MODEL)
BUDGET_PICO_USD = parse_usd("0.01")
LIMITS = BudgetLimits(session_limit_pico_usd=BUDGET_PICO_USD)
SESSION = "shared"
TENANT = TenantPolicy(primary={"chat": (ProviderKind.OPENAI, MODEL)})
REQUEST = ChatRequest(messages=(Message.user("Summarise the ledger."),), max_tokens=256, alias="chat")
USAGE = Usage(prompt_tokens=12, completion_tokens=100)
WORST_PICO_USD = worst_case_cost_pico_usd(PRICE, REQUEST)
COST_PICO_USD = cost_pico_usd(PRICE, USAGE)
ANSWER = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1,
    "model": MODEL,
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": USAGE.prompt_tokens, "completion_tokens": USAGE.completion_tokens, "total_tokens": 112},
}


def open_store(spec: str) -> LedgerStore:
    """The store a STORE argument names."""
    backend, _, rest = spec.partition(":")
    if backend == "sqlite":
        path, _, lease = rest.rpartition(":")
        return SqliteLedgerStore(path, LIMITS, lease_ms=int(lease))
    from routeproof.ledger_store.redis_store import RedisLedgerStore

    lease, namespace, url = rest.split(":", 2)
    return RedisLedgerStore(url, LIMITS, namespace=namespace, lease_ms=int(lease))


def router_on(store: LedgerStore, handler: httpx.AsyncBaseTransport) -> Router:
    """A Router with one OpenAI provider on ``handler`` and its ledger in ``store``."""
    client = httpx.AsyncClient(transport=handler)
    provider = OpenAIProvider(api_key="sk-test-not-a-secret", client=client)
    return Router([provider], client=client, budgets=BudgetOptions(pricing=PRICING, ledger_store=store))


async def call(router: Router) -> None:
    """One chat call for the shared session (raises BudgetExhausted when refused)."""
    loop = asyncio.get_running_loop()
    resolved = resolve("chat", TENANT)
    assert resolved is not None
    await router.call_provider(REQUEST, resolved, loop.time() + 20, TENANT, session_id=SESSION)


async def spend(spec: str | None, in_flight: int, *, store: LedgerStore | None = None) -> dict[str, int]:
    """IN_FLIGHT callers until each is refused; what they were granted (on ``store`` if given)."""
    rng = random.Random()

    async def answer(request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(rng.uniform(0.001, 0.005))
        return httpx.Response(200, json=ANSWER)

    granted = 0
    refused = 0

    async def caller() -> None:
        nonlocal granted, refused
        while True:
            try:
                await call(router)
            except BudgetExhausted:
                refused += 1
                return
            granted += 1

    shared = store if store is not None else open_store(str(spec))
    router = router_on(shared, httpx.MockTransport(answer))
    async with router:  # closes the store too (a no-op for the memory store the experiment hands in)
        await asyncio.gather(*(caller() for _ in range(in_flight)))
    return {"granted": granted, "refused": refused}


async def hold(spec: str, committed: int, held: int) -> None:
    """Complete ``committed`` calls, then hold ``held`` reservations until killed."""
    never = asyncio.Event()

    async def answer(request: httpx.Request) -> httpx.Response:
        if served[0] >= committed:
            await never.wait()
        served[0] += 1
        return httpx.Response(200, json=ANSWER)

    served = [0]
    router = router_on(open_store(spec), httpx.MockTransport(answer))
    for _ in range(committed):
        await call(router)
    tasks = [asyncio.create_task(call(router)) for _ in range(held)]
    print("holding", flush=True)
    await asyncio.gather(*tasks)


def main(argv: list[str]) -> int:
    """Run the mode argv names."""
    mode, spec, *numbers = argv[1:]
    if mode == "spend":
        print(json.dumps(asyncio.run(spend(spec, int(numbers[0])))), flush=True)
        return 0
    if mode == "hold":
        asyncio.run(hold(spec, int(numbers[0]), int(numbers[1])))
        return 0
    print(f"unknown mode {mode!r}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
