"""What the Router's configuration promises takes effect: per-provider timeouts, attempts per
provider, declared tiers, the call's cost, the per-turn warning, the budget override, deadline sanity
(respx, virtual time)."""

from __future__ import annotations

import asyncio
import logging
import time

import httpx
import pytest
import respx
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from routeproof import (
    AttemptStatus,
    BudgetExhausted,
    BudgetOptions,
    DeadlineExceeded,
    HealthOptions,
    LimitOptions,
    NoEligibleProvider,
    PrivacyTier,
)
from routeproof.core.latency import LatencyConfig
from routeproof.core.ledger import BudgetLimits
from routeproof.core.pricing import cost_pico_usd, load_pricing, parse_usd
from routeproof.core.types import ProviderKind, Usage
from routeproof.deadline import deadline_in
from routeproof.errors import ConfigError
from routeproof.observe import RouterMetrics
from routeproof.providers.openai import OpenAIProvider
from routeproof.router import Router
from tests.router.fixtures import (
    ANTHROPIC_URL,
    MODELS,
    OA,
    OPENAI_URL,
    A,
    B,
    anthropic_body,
    bedrock_ok,
    bedrock_url,
    deadline,
    openai_body,
    policy,
    providers,
    request,
    resolved_for,
    status,
)

pytestmark = [pytest.mark.asyncio, pytest.mark.looptime(end=600)]

PRICING_TEXT = """
[anthropic."claude-sonnet-4-20250514"]
input_per_mtok = 3.00
output_per_mtok = 15.00
cache_read_per_mtok = 0.30
cache_write_per_mtok = 3.75
"""
PRICING = load_pricing(PRICING_TEXT)


async def _hang(request: httpx.Request) -> httpx.Response:
    await asyncio.sleep(10_000)
    raise AssertionError("unreachable")


async def test_per_provider_timeout_cuts_a_hanging_primary_and_the_fallback_answers(
    mock: respx.MockRouter, client: httpx.AsyncClient
) -> None:
    """timeout_ms = 500 on the primary: each attempt is cut at 500 ms and the healthy fallback answers."""
    mock.post(bedrock_url()).mock(side_effect=_hang)
    fallback = mock.post(ANTHROPIC_URL).mock(return_value=httpx.Response(200, json=anthropic_body()))
    tenant = policy(B, [A])
    router = Router(providers(client), limits=LimitOptions(provider_timeouts_ms={B: 500}))
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    resp = await router.call_provider(request(), resolved_for(tenant), deadline(), tenant)
    assert [a.elapsed_ms for a in resp.attempts[:3]] == [500, 500, 500]
    assert resp.attempts[-1].status is AttemptStatus.SUCCEEDED
    assert resp.provider is A
    assert fallback.call_count == 1
    assert loop.time() - t0 < 3.0  # 3 x 0.5 s + two backoff sleeps (<= 1.2 s), not 30 s


async def test_max_attempts_per_provider_of_one_fails_over_without_retrying(
    mock: respx.MockRouter, client: httpx.AsyncClient
) -> None:
    """max_attempts_per_provider = 1 (agent.toml max_retries = 1): a 503 fails over at once."""
    primary = mock.post(bedrock_url()).mock(return_value=status(503))
    mock.post(ANTHROPIC_URL).mock(return_value=httpx.Response(200, json=anthropic_body()))
    tenant = policy(B, [A])
    router = Router(providers(client), limits=LimitOptions(max_attempts_per_provider=1))
    resp = await router.call_provider(request(), resolved_for(tenant), deadline(), tenant)
    assert [a.status for a in resp.attempts] == [AttemptStatus.FAILED_OVER, AttemptStatus.SUCCEEDED]
    assert primary.call_count == 1


@pytest.mark.parametrize("bad", [0, 4, True, 1.5])
async def test_router_refuses_bad_attempt_limits(client: httpx.AsyncClient, bad: object) -> None:
    """Attempts per provider outside 1..3 or not an int is a ConfigError naming the value."""
    with pytest.raises(ConfigError, match="max_attempts_per_provider"):
        Router(providers(client), limits=LimitOptions(max_attempts_per_provider=bad))  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [0, 30_001, True, 2.5])
async def test_router_refuses_bad_provider_timeouts(client: httpx.AsyncClient, bad: object) -> None:
    """A per-provider timeout outside 1..30000 ms is a ConfigError naming the provider and the value."""
    with pytest.raises(ConfigError, match="bedrock"):
        Router(providers(client), limits=LimitOptions(provider_timeouts_ms={B: bad}))  # type: ignore[dict-item]


async def test_declared_standard_tier_lowers_a_localhost_provider(
    mock: respx.MockRouter, client: httpx.AsyncClient
) -> None:
    """A localhost Ollama declared 'standard' is skipped by a Private policy; a declaration never raises privacy."""
    ollama_url = "http://localhost:11434/v1/chat/completions"
    route = mock.post(ollama_url).mock(return_value=httpx.Response(200, json=openai_body()))
    ollama = OpenAIProvider(kind=ProviderKind.OLLAMA, api_key=None, client=client, base_url="http://localhost:11434/v1")
    tenant = policy(ProviderKind.OLLAMA, tier=PrivacyTier.PRIVATE)
    lowered = Router([ollama], declared_tiers={ProviderKind.OLLAMA: PrivacyTier.STANDARD})
    with pytest.raises(NoEligibleProvider, match="tier"):
        await lowered.call_provider(request(), resolved_for(tenant), deadline(), tenant)
    assert route.call_count == 0
    remote = OpenAIProvider(kind=ProviderKind.OLLAMA, api_key=None, client=client, base_url="http://203.0.113.5/v1")
    public = Router([remote], declared_tiers={ProviderKind.OLLAMA: PrivacyTier.PRIVATE})  # cannot raise it
    with pytest.raises(NoEligibleProvider, match="tier"):
        await public.call_provider(request(), resolved_for(tenant), deadline(), tenant)
    proven = Router([ollama], declared_tiers={ProviderKind.OLLAMA: PrivacyTier.SOVEREIGN})
    resp = await proven.call_provider(request(), resolved_for(tenant), deadline(), tenant)
    assert resp.provider is ProviderKind.OLLAMA
    assert route.call_count == 1


async def test_response_carries_the_exact_cost_or_none_when_unpriced(
    mock: respx.MockRouter, client: httpx.AsyncClient
) -> None:
    """A priced answer carries its exact pico-USD cost; an unpriced one (no budget) is None, not an error."""
    mock.post(ANTHROPIC_URL).mock(return_value=httpx.Response(200, json=anthropic_body(in_tok=12, out_tok=3)))
    mock.post(OPENAI_URL).mock(return_value=httpx.Response(200, json=openai_body()))
    router = Router(providers(client), budgets=BudgetOptions(pricing=PRICING))
    priced = policy(A)
    resp = await router.call_provider(request(), resolved_for(priced), deadline(), priced)
    price = PRICING.price_for(A, MODELS[A])
    assert resp.cost_pico_usd == cost_pico_usd(price, Usage(prompt_tokens=12, completion_tokens=3)) == 81 * 10**6
    unpriced = policy(OA)
    resp = await router.call_provider(request(), resolved_for(unpriced), deadline(), unpriced)
    assert resp.cost_pico_usd is None
    assert resp.choices[0].content == "4"


async def test_turn_warning_is_surfaced_on_the_response_in_a_log_and_a_metric(
    mock: respx.MockRouter,
    client: httpx.AsyncClient,
    caplog: pytest.LogCaptureFixture,
    metrics: RouterMetrics,
    metric_reader: InMemoryMetricReader,
) -> None:
    """A worst case above the per-turn threshold is sent, and flagged: response field, WARNING, counter."""
    mock.post(ANTHROPIC_URL).mock(return_value=httpx.Response(200, json=anthropic_body()))
    limits = BudgetLimits(turn_warning_pico_usd=parse_usd("0.000001"))
    router = Router(providers(client), metrics=metrics, budgets=BudgetOptions(pricing=PRICING, limits=limits))
    tenant = policy(A)
    with caplog.at_level(logging.WARNING, logger="routeproof"):
        resp = await router.call_provider(request(), resolved_for(tenant), deadline(), tenant)
    assert resp.budget_turn_warning is True
    assert any(r.getMessage().startswith("router_budget_turn_warning provider=anthropic") for r in caplog.records)
    data = metric_reader.get_metrics_data()
    assert data is not None
    points = [
        getattr(point, "value", None)
        for rm in data.resource_metrics
        for sm in rm.scope_metrics
        for metric in sm.metrics
        if metric.name == "ai_router_budget_turn_warnings_total"
        for point in metric.data.data_points
    ]
    assert points == [1]
    quiet = Router(
        providers(client),
        budgets=BudgetOptions(pricing=PRICING, limits=BudgetLimits(turn_warning_pico_usd=parse_usd(1))),
    )
    assert (await quiet.call_provider(request(), resolved_for(tenant), deadline(), tenant)).budget_turn_warning is False


async def test_monthly_hard_stop_lifts_only_through_the_logged_override(
    mock: respx.MockRouter, client: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    """The monthly stop refuses the call; override_budget (logged with its reason) lets the next one through."""
    mock.post(ANTHROPIC_URL).mock(return_value=httpx.Response(200, json=anthropic_body()))
    router = Router(
        providers(client), budgets=BudgetOptions(pricing=PRICING, limits=BudgetLimits(monthly_limit_pico_usd=1))
    )
    tenant = policy(A)
    with pytest.raises(BudgetExhausted, match="monthly"):
        await router.call_provider(request(), resolved_for(tenant), deadline(), tenant)
    with pytest.raises(ConfigError, match="reason"):
        router.override_budget(BudgetLimits(monthly_limit_pico_usd=parse_usd(10)), reason=" ")
    with caplog.at_level(logging.WARNING, logger="routeproof"):
        router.override_budget(BudgetLimits(monthly_limit_pico_usd=parse_usd(10)), reason="ops ticket 42")
    assert any("router_budget_override" in r.getMessage() and "ops ticket 42" in r.getMessage() for r in caplog.records)
    resp = await router.call_provider(request(), resolved_for(tenant), deadline(), tenant)
    assert resp.provider is A
    assert router.ledger is not None
    assert router.ledger.monthly.spent_pico_usd == resp.cost_pico_usd
    with pytest.raises(ConfigError, match="below"):
        router.override_budget(BudgetLimits(monthly_limit_pico_usd=0), reason="too low")


async def test_budget_router_refuses_an_unpriced_model_before_sending(
    mock: respx.MockRouter, client: httpx.AsyncClient
) -> None:
    """With a budget, an unpriced model fails before any request is sent, never after a paid 200."""
    route = mock.post(OPENAI_URL).mock(return_value=httpx.Response(200, json=openai_body()))
    router = Router(
        providers(client),
        budgets=BudgetOptions(pricing=PRICING, limits=BudgetLimits(session_limit_pico_usd=parse_usd(1))),
    )
    tenant = policy(OA)
    with pytest.raises(ConfigError, match="gpt-4o"):
        await router.call_provider(request(), resolved_for(tenant), deadline(), tenant)
    assert route.call_count == 0


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), "20", None, True])
async def test_deadline_that_is_not_a_finite_number_is_refused(client: httpx.AsyncClient, bad: object) -> None:
    """A non-finite or non-numeric deadline is a ValueError pointing at deadline_in, not 'no deadline'."""
    tenant = policy(B)
    with pytest.raises(ValueError, match="deadline_in"):
        await Router(providers(client)).call_provider(request(), resolved_for(tenant), bad, tenant)  # type: ignore[arg-type]


async def test_wall_clock_deadline_is_refused_with_an_explanation(
    mock: respx.MockRouter, client: httpx.AsyncClient
) -> None:
    """time.time() + 2 is on another clock: refused, naming time.time() and deadline_in; nothing is sent."""
    route = mock.post(bedrock_url()).mock(return_value=bedrock_ok())
    tenant = policy(B)
    with pytest.raises(ValueError, match=r"time\.time\(\).*deadline_in"):
        await Router(providers(client)).call_provider(request(), resolved_for(tenant), time.time() + 2, tenant)
    assert route.call_count == 0


async def test_relative_deadline_fails_with_a_hint_and_deadline_in_works(
    mock: respx.MockRouter, client: httpx.AsyncClient
) -> None:
    """A bare 20 (already past on the loop clock) names deadline_in(20); deadline_in(20) then succeeds."""
    mock.post(bedrock_url()).mock(return_value=bedrock_ok())
    await asyncio.sleep(100)  # the loop clock is well past 20
    tenant = policy(B)
    router = Router(providers(client))
    with pytest.raises(DeadlineExceeded, match=r"deadline_in\(20\)"):
        await router.call_provider(request(), resolved_for(tenant), 20, tenant)
    resp = await router.call_provider(request(), resolved_for(tenant), deadline_in(20), tenant)
    assert resp.provider is B


@pytest.mark.parametrize("bad", [-1, float("nan"), "5"])
async def test_deadline_in_refuses_bad_durations(bad: object) -> None:
    """deadline_in takes a finite number of seconds >= 0."""
    with pytest.raises(ValueError, match="seconds"):
        deadline_in(bad)  # type: ignore[arg-type]


async def test_latency_sla_demotes_a_slow_primary_for_later_calls(
    mock: respx.MockRouter, client: httpx.AsyncClient
) -> None:
    """After min_samples answers slower than the SLA, later calls go to the fallback first."""

    async def slow(request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(2)
        return bedrock_ok()

    primary = mock.post(bedrock_url()).mock(side_effect=slow)
    mock.post(ANTHROPIC_URL).mock(return_value=httpx.Response(200, json=anthropic_body()))
    tenant = policy(B, [A])
    router = Router(providers(client), health=HealthOptions(latency=LatencyConfig(sla_ms=1_000, min_samples=2)))
    first = [await router.call_provider(request(), resolved_for(tenant), deadline(), tenant) for _ in range(2)]
    assert [r.provider for r in first] == [B, B]
    third = await router.call_provider(request(), resolved_for(tenant), deadline(), tenant)
    assert third.provider is A
    assert primary.call_count == 2
    assert [s.reason for s in third.skipped] == []  # demoted (tried last), not skipped
