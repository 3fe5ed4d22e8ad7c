"""agent.toml's traffic keys: ``weight``/``rpm``/``tpm`` per provider and ``[driver.traffic]``,
validated at load naming the bad value, and carried into the Router's traffic config."""

from __future__ import annotations

import tomllib
from decimal import Decimal
from pathlib import Path

import pytest

from routeproof.config import parse_config
from routeproof.core.balance import Member, Strategy
from routeproof.errors import ConfigError
from routeproof.factory import router_from_config, traffic_config
from routeproof.traffic import DeploymentLimits, RetryBudgetConfig

BASE = """
[driver.providers.vllm-a]
kind = "vllm"
base_url = "http://127.0.0.1:9001/v1"
model = "m"
priority = 1
weight = 0.7
rpm = 600
tpm = 100000

[driver.providers.vllm-b]
kind = "vllm"
base_url = "http://127.0.0.1:9002/v1"
model = "m"
priority = 1
weight = 0.3
"""


def parsed(text: str):  # type: ignore[no-untyped-def]  # the RoutingConfig of a TOML text
    """The validated configuration of ``text``."""
    return parse_config(tomllib.loads(text, parse_float=Decimal), environ={}, base_dir=Path("."))


def test_weights_limits_and_strategy_reach_the_traffic_config() -> None:
    """Fractional weights are exact millionths; rpm/tpm become the deployment's limits."""
    config = parsed(
        BASE + '\n[driver.traffic]\nstrategy = "weighted"\n[driver.traffic.retry_budget]\nmax_tokens = 20\n'
    )
    traffic = traffic_config(config)
    assert traffic.strategy is Strategy.WEIGHTED
    assert traffic.members["vllm-a"] == Member(priority=1, weight_micro=700_000)
    assert traffic.members["vllm-b"] == Member(priority=1, weight_micro=300_000)
    assert traffic.limits == {"vllm-a": DeploymentLimits(rpm=600, tpm=100_000)}
    assert traffic.retry_budget == RetryBudgetConfig(max_tokens=20, token_ratio_milli=100)


def test_a_providers_own_cache_ttl_reaches_the_traffic_config() -> None:
    """``cache_affinity_ttl_s`` on a provider is that deployment's pin lifetime, in ms, beside
    ``[driver.traffic]``'s; a provider without one has none of its own."""
    text = BASE.replace("weight = 0.3\n", "weight = 0.3\ncache_affinity_ttl_s = 3600\n")
    traffic = traffic_config(parsed(text + "\n[driver.traffic]\ncache_affinity_ttl_s = 300\n"))
    assert traffic.affinity_ttl_ms == 300_000
    assert traffic.affinity_ttl_ms_by_deployment == {"vllm-b": 3_600_000}
    with pytest.raises(ConfigError, match="cache_affinity_ttl_s"):
        parsed(BASE.replace("weight = 0.3\n", "weight = 0.3\ncache_affinity_ttl_s = 0\n"))


def test_the_retry_budget_is_off_unless_configured() -> None:
    """Without ``[driver.traffic.retry_budget]`` retries are unbudgeted, as before."""
    assert traffic_config(parsed(BASE)).retry_budget is None


@pytest.mark.parametrize(
    ("snippet", "named"),
    [
        ("weight = 0", "weight = 0"),
        ("weight = 0.0000001", "weight = Decimal('1E-7')"),
        ("rpm = 0", "rpm = 0"),
        ('rpm = "many"', "rpm = 'many'"),
    ],
)
def test_bad_provider_values_are_named(snippet: str, named: str) -> None:
    """A zero weight, a weight finer than a millionth, a zero or non-integer rpm fail at load."""
    text = BASE.replace("weight = 0.3", snippet)
    with pytest.raises(ConfigError, match=named.replace("(", r"\(").replace(")", r"\)")):
        parsed(text)


def test_an_unknown_strategy_is_named() -> None:
    """``strategy = "random"`` fails at load naming the value and the choices."""
    with pytest.raises(ConfigError, match=r"driver.traffic.strategy = 'random': must be one of"):
        parsed(BASE + '\n[driver.traffic]\nstrategy = "random"\n')


@pytest.mark.asyncio
async def test_a_router_built_from_config_carries_it() -> None:
    """router_from_config hands the traffic config to the Router (keyed by instance)."""
    router = router_from_config(parsed(BASE + '\n[driver.traffic]\nstrategy = "least-outstanding"\n'))
    async with router:
        traffic = router._ports.traffic.config
        assert traffic.strategy is Strategy.LEAST_OUTSTANDING
        assert set(traffic.members) == {"vllm-a", "vllm-b"}


@pytest.mark.asyncio
async def test_load_router_opens_the_traffic_store_the_file_names(tmp_path: Path) -> None:
    """``[traffic] backend = "sqlite"`` gives the Router a SQLite traffic store at the named path;
    an unknown backend fails naming it."""
    from routeproof.factory import load_router
    from routeproof.traffic_store.sqlite import SqliteTrafficStore

    agent = tmp_path / "agent.toml"
    agent.write_text(BASE + '\n[traffic]\nbackend = "sqlite"\npath = "traffic.db"\n', encoding="utf-8")
    async with load_router(agent, environ={}) as router:
        assert isinstance(router._ports.traffic.store, SqliteTrafficStore)
    agent.write_text(BASE + '\n[traffic]\nbackend = "etcd"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"traffic\.backend = 'etcd'"):
        load_router(agent, environ={})


def test_cache_affinity_is_opt_in_with_a_ttl_in_seconds() -> None:
    """``cache_affinity_ttl_s = 3600`` pins prefixes for an hour; absent, there is no affinity."""
    assert traffic_config(parsed(BASE)).affinity_ttl_ms is None
    hour = parsed(BASE + "\n[driver.traffic]\ncache_affinity_ttl_s = 3600\n")
    assert traffic_config(hour).affinity_ttl_ms == 3_600_000
