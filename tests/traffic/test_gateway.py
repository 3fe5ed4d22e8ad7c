"""The official ``openai`` SDK through the gateway (``agent.toml`` with ``rpm`` and ``weight``):
a deployment at its declared limit is skipped and the next serves; when none can, the call is
refused with the limit named, and no provider sees more than its limit."""

from __future__ import annotations

import json
from pathlib import Path

import openai
import pytest
from openai.types.chat import ChatCompletionMessageParam

from routeproof.gateway import ATTEMPTS_HEADER, Backend
from routeproof.mock import MockProviderServer, Shape
from tests.gateway.conftest import ENVIRON, GATEWAY_KEY, serve

pytestmark = [pytest.mark.asyncio, pytest.mark.looptime(False)]


def agent(url_a: str, url_b: str) -> str:
    """Two OpenAI deployments of one model at one priority; the first limited to 1 rpm, the second to 1."""
    return f"""
[driver.providers.oa-1]
kind = "openai"
base_url = "{url_a}/v1"
model = "gpt-4o"
priority = 1
rpm = 1

[driver.providers.oa-2]
kind = "openai"
base_url = "{url_b}/v1"
model = "gpt-4o"
priority = 1
rpm = 1

[driver.traffic]
wait_for_capacity = false

[gateway]
aliases = ["chat"]

[gateway.tenants.team-a]
key_env = "GW_KEY_A"
"""


async def test_the_sdk_sees_a_limited_deployment_skipped_then_a_refusal(tmp_path: Path) -> None:
    """Call 1 goes to oa-1, call 2 skips oa-1 (rate_limit_rpm) for oa-2, call 3 is refused: each
    provider received exactly its one request."""
    async with MockProviderServer(Shape.OPENAI) as a, MockProviderServer(Shape.OPENAI) as b:
        path = tmp_path / "agent.toml"
        path.write_text(agent(a.base_url, b.base_url), encoding="utf-8")
        backend = Backend.load(path, environ=ENVIRON)
        async with (
            serve(backend, None) as (url, _app, _stop),
            openai.AsyncOpenAI(base_url=f"{url}/v1", api_key=GATEWAY_KEY, max_retries=0, timeout=15) as sdk,
        ):
            create = sdk.chat.completions.with_raw_response.create
            hello: list[ChatCompletionMessageParam] = [{"role": "user", "content": "hi"}]
            first = await create(model="chat", messages=hello, max_tokens=8)
            second = await create(model="chat", messages=hello, max_tokens=8)
            with pytest.raises(openai.APIStatusError) as refused:
                await sdk.chat.completions.create(model="chat", messages=hello, max_tokens=8)
    assert [a["provider"] for a in json.loads(first.headers[ATTEMPTS_HEADER])] == ["openai"]
    assert first.parse().choices[0].message.content
    assert second.parse().choices[0].message.content
    assert "declared rate limit" in str(refused.value)
    assert (len(a.journal), len(b.journal)) == (1, 1)


def affinity_agent(url_a: str, url_b: str) -> str:
    """Two OpenAI deployments of one model, weighted evenly, cache affinity on for 5 minutes."""
    return f"""
[driver.providers.oa-1]
kind = "openai"
base_url = "{url_a}/v1"
model = "gpt-4o"
priority = 1
weight = 0.5

[driver.providers.oa-2]
kind = "openai"
base_url = "{url_b}/v1"
model = "gpt-4o"
priority = 1
weight = 0.5

[driver.traffic]
strategy = "weighted"
cache_affinity_ttl_s = 300

[gateway]
aliases = ["chat"]

[gateway.tenants.team-a]
key_env = "GW_KEY_A"
"""


async def test_the_sdk_prompt_cache_key_keeps_its_requests_on_one_deployment(tmp_path: Path) -> None:
    """OpenAI's own ``prompt_cache_key``, sent by the SDK: three keys, eight requests each with
    different messages, over two evenly weighted deployments: each key's requests reach one
    deployment, and the key still reaches OpenAI verbatim."""
    async with MockProviderServer(Shape.OPENAI) as a, MockProviderServer(Shape.OPENAI) as b:
        path = tmp_path / "agent.toml"
        path.write_text(affinity_agent(a.base_url, b.base_url), encoding="utf-8")
        backend = Backend.load(path, environ=ENVIRON)
        async with (
            serve(backend, None) as (url, _app, _stop),
            openai.AsyncOpenAI(base_url=f"{url}/v1", api_key=GATEWAY_KEY, max_retries=0, timeout=15) as sdk,
        ):
            for n in range(8):
                for key in ("k-1", "k-2", "k-3"):
                    question: list[ChatCompletionMessageParam] = [
                        {"role": "user", "content": f"context {n} of {key}"},  # a prefix of its own, but the key
                        {"role": "assistant", "content": "noted"},
                        {"role": "user", "content": "question"},
                    ]
                    create = sdk.chat.completions.create
                    await create(model="chat", messages=question, max_tokens=8, prompt_cache_key=key)
    reached: dict[str, set[int]] = {}
    for index, server in enumerate((a, b)):
        for entry in server.journal:
            assert isinstance(entry.body_json, dict)
            reached.setdefault(str(entry.body_json["prompt_cache_key"]), set()).add(index)
    assert sorted(reached) == ["k-1", "k-2", "k-3"]
    assert all(len(servers) == 1 for servers in reached.values()), reached
