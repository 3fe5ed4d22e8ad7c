"""Named provider instances: two of one kind are two providers (health, budgets, records, failover),
AC-13's own chain of 8 providers, and configuration errors naming the offending value."""

from __future__ import annotations

import pickle
import tomllib
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path

import httpx
import pytest
import respx
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from routeproof import AttemptStatus, BudgetOptions, HealthOptions, InvalidResponse, LimitOptions
from routeproof.config import RoutingConfig, parse_config
from routeproof.core.constants import ATTEMPTS_CAP
from routeproof.core.health import HealthConfig, is_available
from routeproof.core.identity import instance_ids
from routeproof.core.ledger import BudgetLimits
from routeproof.core.pricing import Price, PricingTable
from routeproof.core.types import FallbackProvider, ProviderKind, ProviderName, TenantPolicy
from routeproof.errors import ConfigError
from routeproof.observe import RouterMetrics
from routeproof.providers.openai import OpenAIProvider
from routeproof.router import Router
from tests.router.fixtures import ALIAS, OPENAI_KEY, deadline, openai_body, request, resolved_for, status

pytestmark = [pytest.mark.asyncio, pytest.mark.looptime(end=600)]

OA = ProviderKind.OPENAI
MODEL = "llama-3.1-8b"


def url(name: str) -> str:
    """The chat-completions URL of the instance ``name`` (each instance its own server)."""
    return f"https://{name}.example.test/v1/chat/completions"


def instances(client: httpx.AsyncClient, names: Sequence[str]) -> list[OpenAIProvider]:
    """One OpenAI-compatible provider per name, all of kind openai, each at its own URL."""
    return [
        OpenAIProvider(kind=OA, api_key=OPENAI_KEY, client=client, base_url=f"https://{n}.example.test/v1", name=n)
        for n in names
    ]


def chain_of(names: Sequence[str]) -> TenantPolicy:
    """A policy whose alias goes to ``names[0]`` first, then to the others in order, by name."""
    first, *rest = names
    return TenantPolicy(
        primary={ALIAS: (ProviderName(first), MODEL)},
        fallback_chain=tuple(FallbackProvider(kind=ProviderName(n), model_alias_map={ALIAS: MODEL}) for n in rest),
    )


def ok() -> httpx.Response:
    """A 200 chat.completion."""
    return httpx.Response(200, json=openai_body())


async def test_two_instances_of_one_kind_fail_over_with_their_own_records_and_health(
    mock: respx.MockRouter, client: httpx.AsyncClient, metrics: RouterMetrics, metric_reader: InMemoryMetricReader
) -> None:
    """vllm-a failing 503 x3 fails over to vllm-b of the same kind: records name each instance,
    only vllm-a cools down, and the metric labels stay the kind's ("openai")."""
    a = mock.post(url("vllm-a")).mock(return_value=status(503))
    b = mock.post(url("vllm-b")).mock(return_value=ok())
    router = Router(
        instances(client, ["vllm-a", "vllm-b"]),
        metrics=metrics,
        health=HealthOptions(config=HealthConfig(failure_threshold=3)),
    )
    tenant = chain_of(["vllm-a", "vllm-b"])
    resp = await router.call_provider(request(), resolved_for(tenant), deadline(30), tenant)
    assert [(r.provider, r.status) for r in resp.attempts] == [
        ("vllm-a", AttemptStatus.RETRIED_AFTER_5XX),
        ("vllm-a", AttemptStatus.RETRIED_AFTER_5XX),
        ("vllm-a", AttemptStatus.FAILED_OVER),
        ("vllm-b", AttemptStatus.SUCCEEDED),
    ]
    assert resp.provider == "vllm-b"
    assert resp.provider.kind is OA
    assert (a.call_count, b.call_count) == (3, 1)
    now_ms = resp.attempts[-1].elapsed_ms  # any instant inside the cooldown
    assert not is_available(router.health, ProviderName("vllm-a"), now_ms)
    assert is_available(router.health, ProviderName("vllm-b"), now_ms)
    data = metric_reader.get_metrics_data()
    assert data is not None
    labels = {
        str(point.attributes.get("provider"))
        for rm in data.resource_metrics
        for sm in rm.scope_metrics
        for metric in sm.metrics
        for point in metric.data.data_points
        if point.attributes and "provider" in point.attributes
    }
    assert labels == {"openai"}


async def test_a_cooling_instance_is_skipped_while_its_sibling_serves(
    mock: respx.MockRouter, client: httpx.AsyncClient
) -> None:
    """After vllm-a reaches the failure threshold, the next call is served by vllm-b alone and
    records vllm-a as cooling (health is per instance, not per kind)."""
    a = mock.post(url("vllm-a")).mock(return_value=status(503))
    mock.post(url("vllm-b")).mock(return_value=ok())
    router = Router(
        instances(client, ["vllm-a", "vllm-b"]), health=HealthOptions(config=HealthConfig(failure_threshold=3))
    )
    tenant = chain_of(["vllm-a", "vllm-b"])
    await router.call_provider(request(), resolved_for(tenant), deadline(30), tenant)
    second = await router.call_provider(request(), resolved_for(tenant), deadline(30), tenant)
    assert a.call_count == 3  # the second call never reached vllm-a
    assert [r.provider for r in second.attempts] == ["vllm-b"]


async def test_a_daily_budget_binds_one_instance_and_not_its_sibling(
    mock: respx.MockRouter, client: httpx.AsyncClient
) -> None:
    """A per-provider daily limit of 0 on vllm-a skips it for budget; vllm-b (same kind, same model
    and price) serves and is booked under its own name in the ledger."""
    a = mock.post(url("vllm-a")).mock(return_value=ok())
    mock.post(url("vllm-b")).mock(return_value=ok())
    price = Price(
        input_micro_usd_per_mtok=1_000_000,
        output_micro_usd_per_mtok=2_000_000,
        cache_read_micro_usd_per_mtok=0,
        cache_write_micro_usd_per_mtok=0,
    )
    router = Router(
        instances(client, ["vllm-a", "vllm-b"]),
        budgets=BudgetOptions(
            pricing=PricingTable(prices={(OA, MODEL): price}),  # priced per (kind, model): one price for both
            limits=BudgetLimits(provider_daily_pico_usd=((ProviderName("vllm-a"), 0),)),
        ),
    )
    tenant = chain_of(["vllm-a", "vllm-b"])
    resp = await router.call_provider(request(), resolved_for(tenant), deadline(30), tenant)
    assert a.call_count == 0
    assert [r.provider for r in resp.attempts] == ["vllm-b"]
    assert [s.provider for s in resp.skipped] == ["vllm-a"]
    assert "provider_daily" in resp.skipped[0].reason
    ledger = router.ledger
    assert ledger is not None
    booked = dict(ledger.provider_daily)
    assert booked[ProviderName("vllm-b")].spent_pico_usd == resp.cost_pico_usd
    assert booked[ProviderName("vllm-b")].spent_pico_usd > 0
    assert "vllm-a" not in booked or booked[ProviderName("vllm-a")].spent_pico_usd == 0


async def test_ac13_scenario_as_a_chain_of_eight_named_providers(
    mock: respx.MockRouter, client: httpx.AsyncClient
) -> None:
    """AC-13's own scenario: a chain of 8 providers (8 OpenAI-compatible instances) answering 503
    stops at 16 attempts (3 each for the first five, 1 for the sixth, none after), no 17th."""
    names = [f"p{i}" for i in range(8)]
    routes = [mock.post(url(n)).mock(return_value=status(503)) for n in names]
    tenant = chain_of(names)
    router = Router(instances(client, names), limits=LimitOptions(attempt_timeout_ms=500))
    with pytest.raises(InvalidResponse) as info:
        await router.call_provider(request(), resolved_for(tenant), deadline(120), tenant)
    assert "attempts cap exceeded" in str(info.value)
    assert [r.call_count for r in routes] == [3, 3, 3, 3, 3, 1, 0, 0]
    assert len(info.value.attempts) == ATTEMPTS_CAP == 16
    assert [r.provider for r in info.value.attempts] == [n for n in names[:5] for _ in range(3)] + ["p5"]


async def test_an_instance_alone_of_its_kind_keeps_the_kind_as_its_identity(
    mock: respx.MockRouter, client: httpx.AsyncClient
) -> None:
    """A lone instance named "vllm-a" is addressed by its name or its kind, and its records say
    ProviderKind.OPENAI, as before names (a one-per-kind configuration keeps every record and key)."""
    mock.post(url("vllm-a")).mock(return_value=ok())
    router = Router(instances(client, ["vllm-a"]))
    for tenant in (chain_of(["vllm-a"]), TenantPolicy(primary={ALIAS: (OA, MODEL)})):
        resp = await router.call_provider(request(), resolved_for(tenant), deadline(30), tenant)
        assert resp.provider is OA
        assert [r.provider for r in resp.attempts] == [OA]


async def test_two_providers_with_one_name_are_refused_naming_it(client: httpx.AsyncClient) -> None:
    """Two instances named "vllm-a" are a ConfigError naming 'vllm-a'; so is a name spelling another kind."""
    with pytest.raises(ConfigError, match=r"two providers named 'vllm-a'"):
        Router(instances(client, ["vllm-a", "vllm-a"]))
    with pytest.raises(ConfigError, match=r"'anthropic'.*'openai'"):
        Router(instances(client, ["anthropic"]))
    with pytest.raises(ConfigError, match=r"'openai'.*'OPENAI'"):
        Router(instances(client, ["openai", "OPENAI"]))


ENV = {"OPENAI_API_KEY": "sk-test-named"}


def _config(text: str) -> RoutingConfig:
    """``text`` as agent.toml, validated (floats as Decimal, as load_config reads them)."""
    return parse_config(tomllib.loads(text, parse_float=Decimal), environ=ENV, base_dir=Path("."))


async def test_config_names_the_offending_value() -> None:
    """agent.toml: an unknown kind names the kind; a provider named after another kind names both."""
    with pytest.raises(ConfigError, match=r"driver\.providers\.vllm-a\.kind = 'palm'"):
        _config('[driver.providers.vllm-a]\nkind = "palm"\nmodel = "m"\n')
    with pytest.raises(ConfigError, match=r"'anthropic'.*'openai'"):
        _config('[driver.providers.anthropic]\nkind = "openai"\nmodel = "m"\n')


async def test_config_with_two_instances_of_one_kind_loads_both_by_name() -> None:
    """Two [driver.providers.*] tables of kind openai load as two instances with their own identities."""
    text = (
        '[driver.providers.vllm-a]\nkind = "openai"\nbase_url = "https://a.example.test/v1"\nmodel = "m"\n'
        '[driver.providers.vllm-b]\nkind = "openai"\nbase_url = "https://b.example.test/v1"\nmodel = "m"\n'
    )
    config = _config(text)
    names = [(p.name, p.kind) for p in config.providers]
    assert instance_ids(names) == {"vllm-a": "vllm-a", "vllm-b": "vllm-b"}
    assert all(isinstance(i, ProviderName) and i.kind is OA for i in instance_ids(names).values())


async def test_a_provider_name_survives_pickling_with_its_kind() -> None:
    """A ProviderName round-trips through pickle with its kind (records cross processes)."""
    name = ProviderName("vllm-a", OA)
    back = pickle.loads(pickle.dumps(name))
    assert back == "vllm-a"
    assert back.kind is OA
    assert back.as_metric_label() == "openai"
