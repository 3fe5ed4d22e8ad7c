"""Building a Router from agent.toml: providers, pricing, daily budgets, health, backoff, policy."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from routeproof.config import load_config
from routeproof.core.routing import resolve
from routeproof.core.types import ChatRequest, Message, PrivacyTier, ProviderKind
from routeproof.errors import ConfigError
from routeproof.factory import load_router, router_from_config, tenant_policy

pytestmark = pytest.mark.asyncio
ENV = {"ANTHROPIC_API_KEY": "sk-ant-factory", "OPENAI_API_KEY": "sk-openai-factory"}
PRICING = """
[anthropic."claude-sonnet-4-20250514"]
input_per_mtok = 3.00
output_per_mtok = 15.00
cache_read_per_mtok = 0.30
cache_write_per_mtok = 3.75
"""


def write(tmp_path: Path, body: str, pricing: bool = True) -> Path:
    """Write an agent.toml (and its pricing.toml) under ``tmp_path``."""
    if pricing:
        (tmp_path / "pricing.toml").write_text(PRICING)
    path = tmp_path / "agent.toml"
    path.write_text(body)
    return path


AGENT = """
pricing = "pricing.toml"
[driver]
type = "routing"
[driver.providers.realizar]
priority = 1
model = "local-3b"
[driver.providers.anthropic]
priority = 2
model = "claude-sonnet-4-20250514"
daily_budget_usd = 5.00
[driver.failover]
failure_threshold = 3
cooldown_ms = 1000
"""


async def test_router_from_agent_toml_answers_on_the_local_model(tmp_path: Path) -> None:
    """The example shape loads into a Router whose priority-ordered policy answers via Local."""
    path = write(tmp_path, AGENT)
    router = load_router(path, environ=ENV)
    tenant = tenant_policy(load_config(path, environ=ENV), "chat")
    assert tenant.primary["chat"] == (ProviderKind.LOCAL, "local-3b")
    resolved = resolve("chat", tenant)
    assert resolved is not None
    req = ChatRequest(messages=(Message.user("hello"),), alias="chat")
    resp = await router.call_provider(req, resolved, asyncio.get_running_loop().time() + 5, tenant)
    assert resp.provider is ProviderKind.LOCAL
    assert router.health.config.failure_threshold == 3
    assert router.ledger is not None
    assert router.ledger.limits.provider_limit(ProviderKind.ANTHROPIC) == 5 * 10**12
    await router.aclose()


async def test_daily_budget_without_pricing_fails_at_load(tmp_path: Path) -> None:
    """A daily budget with no pricing file cannot be enforced: a ConfigError says so."""
    path = write(tmp_path, AGENT.replace('pricing = "pricing.toml"\n', ""), pricing=False)
    with pytest.raises(ConfigError, match="pricing"):
        router_from_config(load_config(path, environ=ENV))


async def test_sovereign_policy_from_config(tmp_path: Path) -> None:
    """tenant_policy carries the requested privacy tier."""
    path = write(tmp_path, AGENT)
    tenant = tenant_policy(load_config(path, environ=ENV), privacy_tier=PrivacyTier.SOVEREIGN)
    assert tenant.privacy_tier is PrivacyTier.SOVEREIGN
    assert [f.kind for f in tenant.fallback_chain] == [ProviderKind.ANTHROPIC]


async def test_admission_limits_and_transport_come_from_config(tmp_path: Path) -> None:
    """[driver.admission] sets the router-wide and per-provider limits (0: none) and the transport."""
    path = write(tmp_path, AGENT + "[driver.admission]\nmax_in_flight = 0\nmax_in_flight_per_provider = 7\n"
                 'transport = "httpx"\n')  # fmt: skip
    router = load_router(path, environ=ENV)
    assert router._admission.max_in_flight is None
    assert router._admission.max_in_flight_per_provider == 7
    assert isinstance(router._client, httpx.AsyncClient)
    assert type(router._client._transport).__name__ == "AsyncHTTPTransport"
    await router.aclose()
    default = load_config(write(tmp_path, AGENT), environ=ENV).admission
    assert (default.max_in_flight, default.max_in_flight_per_provider) == (100, 100)


@pytest.mark.parametrize(
    ("line", "message"),
    [("max_in_flight = -1", "must be >= 0"), ('transport = "curl"', "must be 'aiohttp' or 'httpx'"),
     ("limit = 3", "unknown key")],
)  # fmt: skip
async def test_bad_admission_config_is_refused(tmp_path: Path, line: str, message: str) -> None:
    """A negative limit, an unknown transport or an unknown key in [driver.admission] is a ConfigError."""
    with pytest.raises(ConfigError, match=message):
        load_config(write(tmp_path, AGENT + f"[driver.admission]\n{line}\n"), environ=ENV)
