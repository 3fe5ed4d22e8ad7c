"""Per-tenant rate limits at the gateway (issue 32): ``rpm``/``tpm`` per tenant in ``agent.toml``,
kept in the traffic store (shared across replicas). Over its limit a tenant gets 429 with
``Retry-After`` and an OpenAI/Anthropic-shaped error naming the limit; other tenants are unaffected."""

from __future__ import annotations

import asyncio
from pathlib import Path

import anthropic
import openai
import pytest
from openai.types.chat import ChatCompletionMessageParam

from routeproof.core.rate_limit import DeploymentLimits
from routeproof.errors import ConfigError
from routeproof.gateway import Backend
from routeproof.gateway.settings import parse_gateway_settings
from routeproof.mock import MockProviderServer, Shape
from routeproof.traffic_store.redis_store import RedisTrafficStore
from routeproof.traffic_store.tenant_limits import StoreTenantRateLimit
from tests.gateway.conftest import ENVIRON, GATEWAY_KEY, OTHER_KEY, serve
from tools.redis_server import RedisServer

pytestmark = [pytest.mark.looptime(False)]

A_RPM = 5


def agent(url: str) -> str:
    """One OpenAI deployment; team-a limited to 5 rpm, team-b to 100."""
    return f"""
[driver.providers.oa]
kind = "openai"
base_url = "{url}/v1"
model = "gpt-4o"

[gateway]
aliases = ["chat"]

[gateway.tenants.team-a]
key_env = "GW_KEY_A"
rpm = {A_RPM}

[gateway.tenants.team-b]
key_env = "GW_KEY_B"
rpm = 100
"""


@pytest.mark.asyncio
async def test_a_tenant_hammering_gets_429s_and_the_other_tenant_all_succeeds(tmp_path: Path) -> None:
    """team-a sends 20 calls at once: 5 served, 15 refused 429 (Retry-After, the rpm named, both SDKs'
    shapes); team-b's 20 concurrent calls all succeed."""
    async with MockProviderServer(Shape.OPENAI) as provider:
        path = tmp_path / "agent.toml"
        path.write_text(agent(provider.base_url), encoding="utf-8")
        backend = Backend.load(path, environ={**ENVIRON, "GW_KEY_B": OTHER_KEY})
        async with (
            serve(backend, None) as (url, _app, _stop),
            openai.AsyncOpenAI(base_url=f"{url}/v1", api_key=GATEWAY_KEY, max_retries=0, timeout=15) as sdk_a,
            openai.AsyncOpenAI(base_url=f"{url}/v1", api_key=OTHER_KEY, max_retries=0, timeout=15) as sdk_b,
            anthropic.AsyncAnthropic(base_url=url, api_key=GATEWAY_KEY, max_retries=0, timeout=15) as claude_a,
        ):
            hello: list[ChatCompletionMessageParam] = [{"role": "user", "content": "hi"}]

            async def one(sdk: openai.AsyncOpenAI) -> openai.RateLimitError | None:
                try:
                    await sdk.chat.completions.create(model="chat", messages=hello, max_tokens=8)
                except openai.RateLimitError as exc:
                    return exc
                return None

            results = await asyncio.gather(*(one(c) for _ in range(20) for c in (sdk_a, sdk_b)))
            a_results, b_results = results[0::2], results[1::2]
            with pytest.raises(anthropic.RateLimitError) as claude_refused:
                await claude_a.messages.create(model="chat", max_tokens=8, messages=[{"role": "user", "content": "hi"}])
    refused = [r for r in a_results if r is not None]
    assert len(refused) == 20 - A_RPM
    assert all(r is None for r in b_results)  # team-b is unaffected
    first = refused[0]
    assert "rpm" in first.message
    assert first.code == "rate_limit_exceeded"
    assert int(first.response.headers["retry-after"]) >= 1
    assert claude_refused.value.body["error"]["type"] == "rate_limit_error"  # type: ignore[index]
    assert "rpm" in claude_refused.value.message
    assert len(provider.journal) == A_RPM + 20  # refused calls never reach a provider


@pytest.mark.asyncio
async def test_a_tenants_tpm_counts_each_requests_own_estimate(tmp_path: Path) -> None:
    """tpm 2,000 at the gateway: a call reserving 1,500 output tokens is served, the next one of the same
    size is refused 429 naming tpm, and team-b (no tpm) is served: the gateway estimates each request."""
    async with MockProviderServer(Shape.OPENAI) as provider:
        path = tmp_path / "agent.toml"
        path.write_text(agent(provider.base_url).replace(f"rpm = {A_RPM}", "tpm = 2000"), encoding="utf-8")
        backend = Backend.load(path, environ={**ENVIRON, "GW_KEY_B": OTHER_KEY})
        async with (
            serve(backend, None) as (url, _app, _stop),
            openai.AsyncOpenAI(base_url=f"{url}/v1", api_key=GATEWAY_KEY, max_retries=0, timeout=15) as sdk_a,
            openai.AsyncOpenAI(base_url=f"{url}/v1", api_key=OTHER_KEY, max_retries=0, timeout=15) as sdk_b,
        ):
            hello: list[ChatCompletionMessageParam] = [{"role": "user", "content": "hi"}]
            await sdk_a.chat.completions.create(model="chat", messages=hello, max_tokens=1500)
            with pytest.raises(openai.RateLimitError) as refused:
                await sdk_a.chat.completions.create(model="chat", messages=hello, max_tokens=1500)
            await sdk_b.chat.completions.create(model="chat", messages=hello, max_tokens=1500)
    assert "tpm" in refused.value.message
    assert len(provider.journal) == 2


@pytest.mark.asyncio
async def test_replicas_on_one_redis_share_a_tenants_window(redis_server: RedisServer) -> None:
    """Two gateways' hooks over one Redis: 5 rpm in total, not 5 each."""
    namespace = f"tenants-{id(redis_server)}"
    stores = [RedisTrafficStore(redis_server.url, namespace=namespace) for _ in range(2)]
    hooks = [StoreTenantRateLimit(s, {"team-a": DeploymentLimits(rpm=A_RPM)}) for s in stores]
    try:
        verdicts = await asyncio.gather(*(hooks[i % 2].try_take("team-a", 10) for i in range(12)))
    finally:
        for store in stores:
            await store.aclose()
    assert sum(v is None for v in verdicts) == A_RPM
    assert {v[1] for v in verdicts if v is not None} == {"rpm"}


@pytest.mark.asyncio
async def test_tpm_counts_each_calls_estimate() -> None:
    """tpm 100: two calls estimated at 40 fit, the third does not (named tpm); one over 100 never fits."""
    from routeproof.traffic_store.memory import MemoryTrafficStore

    hook = StoreTenantRateLimit(MemoryTrafficStore(), {"t": DeploymentLimits(tpm=100)})
    assert await hook.try_take("t", 40) is None
    assert await hook.try_take("t", 40) is None
    refused = await hook.try_take("t", 40)
    assert refused is not None
    assert refused[1] == "tpm"
    assert await hook.try_take("other", 10_000) is None  # an unlimited tenant


@pytest.mark.parametrize("key", ["rpm", "tpm"])
@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "60"])
def test_a_bad_tenant_limit_fails_at_load(key: str, bad: object) -> None:
    """rpm/tpm must be positive integers; the key and the value are named."""
    data = {"gateway": {"tenants": {"a": {"key": "gw-a-long-enough-key-42", key: bad}}}}
    with pytest.raises(ConfigError, match=rf"gateway\.tenants\.a\.{key}"):
        parse_gateway_settings(data, environ={})
