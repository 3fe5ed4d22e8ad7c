"""agent.toml with two providers of one kind: the factory builds two instances, each with its own
timeout, daily budget and place in the chain, failing over from one to the other by name."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest
import respx

from routeproof.config import load_config
from routeproof.core.routing import resolve
from routeproof.core.types import AttemptStatus, ChatRequest, Message, ProviderName
from routeproof.factory import load_router, tenant_policy
from routeproof.ledger_store import load_ledger_config

pytestmark = [pytest.mark.asyncio, pytest.mark.looptime(end=600)]
ENV = {"OPENAI_API_KEY": "sk-openai-named"}
PRICING = """
[openai."llama-3.1-8b"]
input_per_mtok = 1.00
output_per_mtok = 2.00
"""
AGENT = """
pricing = "pricing.toml"
[driver.providers.vllm-a]
kind = "openai"
base_url = "https://vllm-a.example.test/v1"
model = "llama-3.1-8b"
priority = 1
timeout_ms = 2000
daily_budget_usd = 1.00
[driver.providers.vllm-b]
kind = "openai"
base_url = "https://vllm-b.example.test/v1"
model = "llama-3.1-8b"
priority = 2
"""
BODY = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1_700_000_000,
    "model": "llama-3.1-8b",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "4"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15},
}


def write(tmp_path: Path) -> Path:
    """agent.toml and pricing.toml under ``tmp_path``."""
    (tmp_path / "pricing.toml").write_text(PRICING)
    path = tmp_path / "agent.toml"
    path.write_text(AGENT)
    return path


async def test_two_openai_instances_from_agent_toml_fail_over_by_name(tmp_path: Path) -> None:
    """vllm-a (its own 2 s timeout) times out 3 times; the call fails over to vllm-b, and the
    records and the response name the instances."""

    async def hang(request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(10)
        return httpx.Response(200, json=BODY)

    path = write(tmp_path)
    tenant = tenant_policy(load_config(path, environ=ENV), "chat")
    resolved = resolve("chat", tenant)
    assert resolved is not None
    with respx.mock(assert_all_mocked=True, assert_all_called=False) as mock:  # a cancelled call is not recorded
        mock.post("https://vllm-a.example.test/v1/chat/completions").mock(side_effect=hang)
        mock.post("https://vllm-b.example.test/v1/chat/completions").mock(return_value=httpx.Response(200, json=BODY))
        async with load_router(path, environ=ENV) as router:
            loop = asyncio.get_running_loop()
            t0 = loop.time()
            req = ChatRequest(messages=(Message.user("2+2?"),))
            resp = await router.call_provider(req, resolved, t0 + 30, tenant)
    assert [(r.provider, r.status) for r in resp.attempts][-1] == ("vllm-b", AttemptStatus.SUCCEEDED)
    assert {r.provider for r in resp.attempts[:-1]} == {"vllm-a"}
    assert all(r.elapsed_ms <= 2000 for r in resp.attempts[:-1])  # vllm-a's own timeout_ms, not vllm-b's 30 s
    assert resp.provider == "vllm-b"


async def test_the_daily_budget_of_one_instance_is_keyed_by_its_name(tmp_path: Path) -> None:
    """vllm-a's daily_budget_usd is the ledger limit of vllm-a alone (1 USD = 10^12 pico-USD)."""
    _, limits = load_ledger_config(write(tmp_path), environ=ENV)
    assert limits.provider_daily_pico_usd == ((ProviderName("vllm-a"), 10**12),)
    assert limits.provider_limit(ProviderName("vllm-b")) is None
