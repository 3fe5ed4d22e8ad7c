"""A gateway replica for the shared-health tests: a Router whose provider health lives in a store.

Anthropic is the primary and OpenAI the fallback, both on an in-process transport
(httpx.MockTransport) that counts the calls each provider received; Anthropic answers 503 while
``failing`` is set. A call goes to OpenAI first only when Anthropic is cooling (demoted).

``python -m tests.health_store.replica URL NAMESPACE`` is the same replica in a process of its own:
it prints ``ready`` once its store has read the shared state, waits until it learns (from Redis
only) that Anthropic is cooling, makes one call, and prints a JSON line with the calls each
provider received.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx

from routeproof import HealthOptions, LimitOptions
from routeproof.core.health import HealthConfig, is_available
from routeproof.core.routing import resolve
from routeproof.core.types import ChatRequest, FallbackProvider, Message, ProviderKind, TenantPolicy
from routeproof.health_store import HealthStore
from routeproof.providers.anthropic import AnthropicProvider
from routeproof.providers.openai import OpenAIProvider
from routeproof.router import Router

PRIMARY, FALLBACK = ProviderKind.ANTHROPIC, ProviderKind.OPENAI
HEALTH = HealthConfig(failure_threshold=2, cooldown_ms=600_000)
ALIAS = "chat"
TENANT = TenantPolicy(
    primary={ALIAS: (PRIMARY, "claude-sonnet-4-20250514")},
    fallback_chain=(FallbackProvider(kind=FALLBACK, model_alias_map={ALIAS: "gpt-4o"}),),
)
REQUEST = ChatRequest(messages=(Message.user("Which provider answers?"),), max_tokens=64, alias=ALIAS)
ANTHROPIC_ANSWER = {
    "id": "msg_01",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-20250514",
    "content": [{"type": "text", "text": "anthropic"}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 5, "output_tokens": 1},
}
OPENAI_ANSWER = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1,
    "model": "gpt-4o",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "openai"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6},
}


@dataclass(kw_only=True)
class Replica:
    """One Router on ``store``, and what each provider received from it."""

    store: HealthStore
    failing: bool = False
    calls: Counter[ProviderKind] = field(default_factory=Counter)
    router: Router = field(init=False)

    def __post_init__(self) -> None:
        client = httpx.AsyncClient(transport=httpx.MockTransport(self._answer))
        self.router = Router(
            [
                AnthropicProvider(api_key="sk-ant-test-not-a-secret", client=client),
                OpenAIProvider(api_key="sk-test-not-a-secret", client=client),
            ],
            client=client,
            limits=LimitOptions(max_attempts_per_provider=1),
            health=HealthOptions(health_store=self.store),
        )

    def _answer(self, request: httpx.Request) -> httpx.Response:
        if request.url.host == "api.anthropic.com":
            self.calls[PRIMARY] += 1
            if self.failing:
                return httpx.Response(503, json={"type": "error", "error": {"type": "overloaded_error"}})
            return httpx.Response(200, json=ANTHROPIC_ANSWER)
        self.calls[FALLBACK] += 1
        return httpx.Response(200, json=OPENAI_ANSWER)

    async def call(self) -> str:
        """One call; which provider answered it."""
        resolved = resolve(ALIAS, TENANT)
        assert resolved is not None
        deadline = asyncio.get_running_loop().time() + 20
        response = await self.router.call_provider(REQUEST, resolved, deadline, TENANT)
        assert response.provider is not None
        return response.provider.value

    def primary_cooling(self) -> bool:
        """Whether this replica holds the primary to be cooling now."""
        now_ms = round(asyncio.get_running_loop().time() * 1000)
        return not is_available(self.router.health, PRIMARY, now_ms)

    async def aclose(self) -> None:
        """Close the Router (and with it the store)."""
        await self.router.aclose()


async def until(condition: Callable[[], bool], *, within_s: float = 10.0) -> bool:
    """Whether ``condition`` holds within ``within_s`` (checked every 10 ms; real sockets, real time)."""
    loop = asyncio.get_running_loop()
    end = loop.time() + within_s
    while not condition():
        if loop.time() > end:
            return False
        await asyncio.sleep(0.01)
    return True


async def _main(url: str, namespace: str) -> None:
    from routeproof.health_store.redis_store import RedisHealthStore

    replica = Replica(store=RedisHealthStore(url, HEALTH, namespace=namespace))
    await replica.store.start()
    print("ready", flush=True)
    learned = await until(replica.primary_cooling, within_s=20)
    text = await replica.call() if learned else ""
    print(
        json.dumps({"learned": learned, "answer": text, **{k.value: n for k, n in replica.calls.items()}}), flush=True
    )
    await replica.aclose()


if __name__ == "__main__":
    asyncio.run(_main(sys.argv[1], sys.argv[2]))
