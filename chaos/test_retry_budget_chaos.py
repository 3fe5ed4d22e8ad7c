"""The retry budget under Toxiproxy faults (issue 32): a provider faulted by ``reset_peer`` (every
connection reset) or ``timeout`` (a black hole: nothing comes back), alone in its chain, health
cooling off (a huge failure threshold) so only the budget bounds the retries. 60 calls, 10 in flight,
the default budget (gRPC A6: 10 tokens, ratio 0.1). Attempts are counted by the router's own
records (each ``RouterError``'s attempts: a reset or a black hole leaves no trace in the mock's
journal). The claim: attempts <= (1 + ratio) x calls + the bucket; without a budget, each call would
make ``max_retries`` + 1 = 4 attempts.
"""

from __future__ import annotations

import asyncio

import httpx
import pytest

from chaos.toxi import Toxi
from chaos.toxi import ToxicSpec as T
from routeproof.core.health import HealthConfig
from routeproof.core.routing import resolve
from routeproof.core.types import ChatRequest, Message, ProviderKind, ProviderName, TenantPolicy
from routeproof.errors import RouterError
from routeproof.mock import MockProviderServer, Shape
from routeproof.providers.openai import OpenAIProvider
from routeproof.router import Router
from routeproof.router_options import HealthOptions, LimitOptions
from routeproof.traffic import RetryBudgetConfig, TrafficConfig

pytestmark = [pytest.mark.chaos, pytest.mark.asyncio, pytest.mark.looptime(False)]

CALLS = 60
IN_FLIGHT = 10
TOXICS = {
    "reset_peer": T(type="reset_peer", stream="upstream", attributes={"timeout": 0}),
    "timeout": T(type="timeout", attributes={"timeout": 0}),
}


@pytest.mark.parametrize("toxic", sorted(TOXICS))
async def test_the_retry_budget_bounds_attempts_under_a_toxic(toxi: Toxi, toxic: str) -> None:
    """attempts <= (1 + ratio) x calls + max_tokens with the provider faulted by ``toxic``."""
    budget = RetryBudgetConfig()
    async with MockProviderServer(Shape.OPENAI, name="faulted") as server:
        proxy = await asyncio.to_thread(toxi.create, f"budget-{toxic}", f"127.0.0.1:{server.port}")
        try:
            await asyncio.to_thread(toxi.add, proxy, TOXICS[toxic])
            async with httpx.AsyncClient() as client:
                provider = OpenAIProvider(
                    kind=ProviderKind.VLLM, api_key="sk-chaos", client=client, base_url=f"http://{proxy.listen}/v1",
                    name="faulted",
                )  # fmt: skip
                router = Router(
                    [provider],
                    traffic=TrafficConfig(retry_budget=budget),
                    limits=LimitOptions(attempt_timeout_ms=300),
                    health=HealthOptions(config=HealthConfig(failure_threshold=1_000_000, cooldown_ms=1)),
                )
                tenant = TenantPolicy(primary={"chat": (ProviderName("faulted"), "m")})
                resolved = resolve("chat", tenant)
                req = ChatRequest(messages=(Message.user("hi"),), max_tokens=8, alias="chat")
                gate = asyncio.Semaphore(IN_FLIGHT)
                loop = asyncio.get_running_loop()

                async def one() -> tuple[int, int]:
                    async with gate:
                        try:
                            answer = await router.call_provider(req, resolved, loop.time() + 10, tenant)
                        except RouterError as exc:
                            records = exc.attempts
                        else:
                            records = answer.attempts
                    return len(records), sum(r.retry_throttled for r in records)

                counted = await asyncio.gather(*(one() for _ in range(CALLS)))
        finally:
            await asyncio.to_thread(toxi.destroy, proxy)
    attempts = sum(a for a, _ in counted)
    throttled = sum(t for _, t in counted)
    bound = (1 + budget.token_ratio_milli / 1000) * CALLS + budget.max_tokens
    print(
        f"chaos retry budget [{toxic}]: {attempts} attempts for {CALLS} calls (bound {bound:.0f}), "
        f"{throttled} throttled"
    )
    assert attempts >= CALLS  # every call made its first attempt
    assert throttled > 0  # the budget did the bounding
    assert attempts <= bound
