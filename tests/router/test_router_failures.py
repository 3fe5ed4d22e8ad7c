"""Router behaviour beyond the ACs: hangs, resets, malformed bodies, cancellation, tiers, health,
budgets, secrets (respx, virtual time)."""

from __future__ import annotations

import asyncio
import logging

import httpx
import pytest
import respx

from routeproof import (
    AllProvidersFailed,
    AttemptStatus,
    BudgetExhausted,
    BudgetOptions,
    DeadlineExceeded,
    HealthOptions,
    InvalidResponse,
    LimitOptions,
    NoEligibleProvider,
    PrivacyTier,
    RouterError,
)
from routeproof.core.health import is_available
from routeproof.core.ledger import BudgetLimits, session_account
from routeproof.core.pricing import load_pricing, parse_usd
from routeproof.core.routing import CoolingPolicy
from routeproof.core.types import FallbackProvider, ProviderKind, RetryReason, TenantPolicy
from routeproof.errors import ConfigError
from routeproof.providers.openai import OpenAIProvider
from routeproof.router import Router
from tests.router.fixtures import (
    ALIAS,
    ANTHROPIC_KEY,
    ANTHROPIC_URL,
    AWS_SECRET,
    MODELS,
    OPENAI_KEY,
    A,
    B,
    anthropic_body,
    bedrock_ok,
    bedrock_url,
    deadline,
    policy,
    providers,
    request,
    resolved_for,
    status,
)

pytestmark = [pytest.mark.asyncio, pytest.mark.looptime(end=600)]
L = ProviderKind.LOCAL

PRICING = load_pricing(
    """
[bedrock."claude-b"]
input_per_mtok = 3.00
output_per_mtok = 15.00
cache_read_per_mtok = 0.30
cache_write_per_mtok = 3.75
[anthropic."claude-sonnet-4-20250514"]
input_per_mtok = 3.00
output_per_mtok = 15.00
cache_read_per_mtok = 0.30
cache_write_per_mtok = 3.75
"""
)


async def test_hanging_provider_hands_off_at_the_attempt_timeout(
    mock: respx.MockRouter, client: httpx.AsyncClient
) -> None:
    """A provider that accepts and never answers is cut at the per-attempt timeout, then failed over."""

    async def hang(request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(10_000)
        raise AssertionError("unreachable")

    mock.post(bedrock_url()).mock(side_effect=hang)
    mock.post(ANTHROPIC_URL).mock(return_value=httpx.Response(200, json=anthropic_body()))
    tenant = policy(B, [A])
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    router = Router(providers(client), limits=LimitOptions(attempt_timeout_ms=5000))
    resp = await router.call_provider(request(), resolved_for(tenant), deadline(), tenant)
    assert [a.status for a in resp.attempts] == [
        AttemptStatus.RETRIED_AFTER_TIMEOUT,
        AttemptStatus.RETRIED_AFTER_TIMEOUT,
        AttemptStatus.FAILED_OVER,
        AttemptStatus.SUCCEEDED,
    ]
    assert [a.elapsed_ms for a in resp.attempts[:3]] == [5_000, 5_000, 5_000]
    assert 15.8 <= loop.time() - t0 <= 16.2  # 3 x 5 s + 200 ms and 800 ms sleeps, each ±20 %


async def test_connection_reset_mid_body_is_retried_as_conn_reset(
    mock: respx.MockRouter, client: httpx.AsyncClient
) -> None:
    """A connection closed mid-body is retried with reason conn_reset."""
    reset = httpx.RemoteProtocolError("peer closed connection without sending complete message body")
    mock.post(bedrock_url()).mock(side_effect=[reset, bedrock_ok()])
    tenant = policy(B)
    resp = await Router(providers(client)).call_provider(request(), resolved_for(tenant), deadline(), tenant)
    assert resp.attempts[0].status is AttemptStatus.RETRIED_AFTER_CONN_RESET
    assert resp.attempts[0].retry_reason is RetryReason.CONN_RESET
    assert resp.attempts[0].http_status is None


async def test_malformed_200_fails_over_and_reports_invalid_response(
    mock: respx.MockRouter, client: httpx.AsyncClient
) -> None:
    """A 200 whose body is not the documented shape fails over; alone it ends as InvalidResponse."""
    bad = mock.post(bedrock_url()).mock(return_value=httpx.Response(200, json={"output": {"oops": 1}}))
    mock.post(ANTHROPIC_URL).mock(return_value=httpx.Response(200, json=anthropic_body()))
    tenant = policy(B, [A])
    router = Router(providers(client))
    resp = await router.call_provider(request(), resolved_for(tenant), deadline(), tenant)
    assert [a.status for a in resp.attempts] == [AttemptStatus.FAILED_OVER, AttemptStatus.SUCCEEDED]
    assert resp.attempts[0].http_status == 200
    assert bad.call_count == 1
    alone = policy(B)
    with pytest.raises(AllProvidersFailed) as info:
        await router.call_provider(request(), resolved_for(alone), deadline(), alone)
    assert isinstance(info.value.last_error, InvalidResponse)
    assert info.value.attempts[0].status is AttemptStatus.FAILED_OVER


async def test_cancelled_call_makes_no_further_attempts_and_leaks_no_reservation(
    mock: respx.MockRouter, client: httpx.AsyncClient
) -> None:
    """Cancelling the caller's task stops the call at once: no more attempts, no reservation left."""

    started: list[float] = []

    async def slow_503(request: httpx.Request) -> httpx.Response:
        started.append(asyncio.get_running_loop().time())
        await asyncio.sleep(1)
        return status(503)

    mock.post(bedrock_url()).mock(side_effect=slow_503)
    tenant = policy(B)
    budget = BudgetLimits(session_limit_pico_usd=parse_usd("1.00"))
    router = Router(providers(client), budgets=BudgetOptions(pricing=PRICING, limits=budget))
    for cancel_after in (0.5, 1.1):  # mid-attempt, then mid-backoff-sleep
        started.clear()
        task = asyncio.create_task(router.call_provider(request(), resolved_for(tenant), deadline(), tenant))
        await asyncio.sleep(cancel_after)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.sleep(5)
        assert len(started) == 1  # the attempt that was running, and nothing after the cancel
        assert router.ledger is not None
        assert router.ledger.open_reservations == ()
        assert session_account(router.ledger, "default").reserved_pico_usd == 0


async def test_concurrent_calls_at_the_budget_edge_never_overspend(
    mock: respx.MockRouter, client: httpx.AsyncClient
) -> None:
    """1,000 concurrent calls against a small session budget: spend never passes the limit."""

    async def answer(request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(0.5)
        return bedrock_ok()

    mock.post(bedrock_url()).mock(side_effect=answer)
    limit = parse_usd("0.05")
    router = Router(
        providers(client), budgets=BudgetOptions(pricing=PRICING, limits=BudgetLimits(session_limit_pico_usd=limit))
    )
    tenant = policy(B)
    results = await asyncio.gather(
        *(router.call_provider(request(), resolved_for(tenant), deadline(), tenant) for _ in range(1_000)),
        return_exceptions=True,
    )
    refused = [r for r in results if isinstance(r, BudgetExhausted)]
    served = [r for r in results if not isinstance(r, BaseException)]
    assert len(refused) + len(served) == 1_000
    assert refused
    assert served
    assert all(r.scope == "session" for r in refused)
    assert router.ledger is not None
    account = session_account(router.ledger, "default")
    assert account.spent_pico_usd <= limit
    assert account.reserved_pico_usd == 0
    assert router.ledger.open_reservations == ()


async def test_sovereign_tier_skips_network_providers_and_records_it(
    mock: respx.MockRouter, client: httpx.AsyncClient
) -> None:
    """Under Sovereign, a Bedrock primary is skipped (and recorded) and the Local model answers."""
    route = mock.post(bedrock_url()).mock(return_value=bedrock_ok())
    tenant = policy(B, [L], tier=PrivacyTier.SOVEREIGN)
    resp = await Router(providers(client)).call_provider(request(), resolved_for(tenant), deadline(), tenant)
    assert resp.provider is L
    assert route.call_count == 0
    assert [(s.provider, s.reason) for s in resp.skipped] == [(B, "tier")]


async def test_sovereign_with_only_network_providers_is_no_eligible_provider(
    mock: respx.MockRouter, client: httpx.AsyncClient
) -> None:
    """A Sovereign call whose chain holds only network providers fails with NoEligibleProvider."""
    route = mock.post(ANTHROPIC_URL).mock(return_value=httpx.Response(200, json=anthropic_body()))
    tenant = policy(A, [B], tier=PrivacyTier.SOVEREIGN)
    with pytest.raises(NoEligibleProvider, match="tier"):
        await Router(providers(client)).call_provider(request(), resolved_for(tenant), deadline(), tenant)
    assert route.call_count == 0


async def test_private_tier_refuses_an_ollama_endpoint_on_a_public_host(client: httpx.AsyncClient) -> None:
    """Private allows Ollama only on a private address: a public base URL makes it Standard."""
    public = OpenAIProvider(kind=ProviderKind.OLLAMA, client=client, base_url="https://ollama.example.com/v1")
    tenant = TenantPolicy(privacy_tier=PrivacyTier.PRIVATE, primary={ALIAS: (ProviderKind.OLLAMA, "qwen3")})
    with pytest.raises(NoEligibleProvider, match="ollama/qwen3: tier"):
        await Router([public]).call_provider(request(), resolved_for(tenant), deadline(), tenant)


async def test_cooling_provider_is_demoted_to_the_end_of_the_chain(
    mock: respx.MockRouter, client: httpx.AsyncClient
) -> None:
    """After 2 failures a provider cools down: later calls try the others first, and it last."""
    bedrock = mock.post(bedrock_url()).mock(return_value=status(500))
    anthropic = mock.post(ANTHROPIC_URL).mock(return_value=httpx.Response(200, json=anthropic_body()))
    tenant = policy(B, [A])
    router = Router(providers(client))
    first = await router.call_provider(request(), resolved_for(tenant), deadline(), tenant)
    assert [a.provider for a in first.attempts] == [B, B, B, A]
    bedrock.reset()
    second = await router.call_provider(request(), resolved_for(tenant), deadline(), tenant)
    assert [a.provider for a in second.attempts] == [A]
    assert bedrock.call_count == 0
    assert second.attempts[0].fallback_position == 1  # the policy's position, not the reordered one
    anthropic.mock(return_value=status(500))
    with pytest.raises(AllProvidersFailed) as info:
        await router.call_provider(request(), resolved_for(tenant), deadline(), tenant)
    assert [a.provider for a in info.value.attempts] == [A, A, A, B, B, B]  # cooling Bedrock still tried, last


async def test_skip_policy_fails_at_once_when_every_provider_is_cooling(
    mock: respx.MockRouter, client: httpx.AsyncClient
) -> None:
    """With CoolingPolicy.SKIP, a call whose providers all cool fails at once, naming when one returns."""
    mock.post(bedrock_url()).mock(return_value=status(500))
    tenant = policy(B)
    router = Router(providers(client), health=HealthOptions(cooling=CoolingPolicy.SKIP))
    with pytest.raises(AllProvidersFailed):
        await router.call_provider(request(), resolved_for(tenant), deadline(), tenant)
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    with pytest.raises(NoEligibleProvider) as info:
        await router.call_provider(request(), resolved_for(tenant), deadline(), tenant)
    assert loop.time() == t0  # no silent wait
    assert info.value.earliest_at is not None
    assert info.value.earliest_at > t0
    assert "cooling" in str(info.value)


async def test_provider_daily_budget_skips_to_the_next_provider(
    mock: respx.MockRouter, client: httpx.AsyncClient
) -> None:
    """A provider over its daily budget is skipped (recorded) and the chain goes on."""
    bedrock = mock.post(bedrock_url()).mock(return_value=bedrock_ok())
    mock.post(ANTHROPIC_URL).mock(return_value=httpx.Response(200, json=anthropic_body()))
    budget = BudgetLimits(provider_daily_pico_usd=((B, 1),))  # one pico-USD: nothing fits
    tenant = policy(B, [A])
    router = Router(providers(client), budgets=BudgetOptions(pricing=PRICING, limits=budget))
    resp = await router.call_provider(request(), resolved_for(tenant), deadline(), tenant)
    assert resp.provider is A
    assert bedrock.call_count == 0
    assert [(s.provider, s.reason) for s in resp.skipped] == [(B, "budget_provider_daily")]


async def test_session_budget_refusal_is_terminal(mock: respx.MockRouter, client: httpx.AsyncClient) -> None:
    """A session budget that refuses ends the call with BudgetExhausted naming scope and limit."""
    anthropic = mock.post(ANTHROPIC_URL).mock(return_value=httpx.Response(200, json=anthropic_body()))
    tenant = policy(B, [A])
    router = Router(
        providers(client), budgets=BudgetOptions(pricing=PRICING, limits=BudgetLimits(session_limit_pico_usd=1))
    )
    with pytest.raises(BudgetExhausted) as info:
        await router.call_provider(request(), resolved_for(tenant), deadline(), tenant)
    assert info.value.scope == "session"
    assert anthropic.call_count == 0


async def test_auth_failures_are_never_charged(mock: respx.MockRouter, client: httpx.AsyncClient) -> None:
    """A 401 books nothing to the session."""
    mock.post(bedrock_url()).mock(return_value=status(401))
    router = Router(
        providers(client), budgets=BudgetOptions(pricing=PRICING, limits=BudgetLimits(session_limit_pico_usd=10**12))
    )
    tenant = policy(B)
    with pytest.raises(RouterError):
        await router.call_provider(request(), resolved_for(tenant), deadline(), tenant)
    assert router.ledger is not None
    assert session_account(router.ledger, "default").spent_pico_usd == 0


async def test_successful_call_is_charged_its_real_cost(mock: respx.MockRouter, client: httpx.AsyncClient) -> None:
    """A success books usage x price exactly: 12 in x $3/Mtok + 3 out x $15/Mtok = 81 micro-USD."""
    mock.post(bedrock_url()).mock(return_value=bedrock_ok())
    router = Router(
        providers(client), budgets=BudgetOptions(pricing=PRICING, limits=BudgetLimits(session_limit_pico_usd=10**12))
    )
    tenant = policy(B)
    await router.call_provider(request(), resolved_for(tenant), deadline(), tenant)
    assert router.ledger is not None
    assert session_account(router.ledger, "default").spent_pico_usd == 12 * 3_000_000 + 3 * 15_000_000


async def test_secrets_never_reach_logs_records_or_errors(
    mock: respx.MockRouter, client: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    """API keys appear in no log line, attempt record or error message, even when echoed back."""
    echo = {"error": {"message": f"invalid x-api-key {ANTHROPIC_KEY} / {OPENAI_KEY} / {AWS_SECRET}"}}
    mock.post(bedrock_url()).mock(return_value=status(403, body=echo))
    mock.post(ANTHROPIC_URL).mock(return_value=status(401, body=echo))
    texts = []
    with caplog.at_level(logging.DEBUG):
        for kind in (B, A):
            tenant = policy(kind)
            with pytest.raises(RouterError) as info:
                await Router(providers(client)).call_provider(request(), resolved_for(tenant), deadline(), tenant)
            texts += [str(info.value), repr(info.value), repr(info.value.attempts)]
    texts += [r.getMessage() for r in caplog.records] + [repr(r.__dict__) for r in caplog.records]
    for secret in (ANTHROPIC_KEY, OPENAI_KEY, AWS_SECRET):
        assert not any(secret in t for t in texts), secret


async def test_vertex_is_refused_clearly(client: httpx.AsyncClient) -> None:
    """Vertex is declared but not implemented: a fallback to it is skipped as unsupported."""
    tenant = TenantPolicy(
        primary={ALIAS: (ProviderKind.VERTEX, "gemini")},
        fallback_chain=(FallbackProvider(kind=L, model_alias_map={ALIAS: "local-model"}),),
    )
    resp = await Router(providers(client)).call_provider(request(), resolved_for(tenant), deadline(), tenant)
    assert resp.provider is L
    assert [(s.provider, s.reason) for s in resp.skipped] == [(ProviderKind.VERTEX, "unsupported")]


async def test_router_configuration_errors_name_the_value() -> None:
    """Bad router options fail when the router is built, naming the value."""
    with pytest.raises(ConfigError, match="45"):
        Router([], limits=LimitOptions(attempt_timeout_ms=45_000))
    with pytest.raises(ConfigError, match="pricing"):
        Router([], budgets=BudgetOptions(limits=BudgetLimits(session_limit_pico_usd=1)))


async def test_errors_carry_attempt_records(mock: respx.MockRouter, client: httpx.AsyncClient) -> None:
    """Every error the router raises carries the attempt records made so far."""
    mock.post(bedrock_url()).mock(return_value=status(503))
    tenant = policy(B)
    with pytest.raises(AllProvidersFailed) as info:
        await Router(providers(client)).call_provider(request(), resolved_for(tenant), deadline(), tenant)
    assert [a.attempt_num for a in info.value.attempts] == [1, 2, 3]
    assert all(a.model == MODELS[B] for a in info.value.attempts)


async def test_an_impatient_caller_never_cools_a_provider(mock: respx.MockRouter, client: httpx.AsyncClient) -> None:
    """Attempts cut by the caller's own deadline do not count against the provider's health."""

    async def slow_ok(request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(2)
        return bedrock_ok()

    mock.post(bedrock_url()).mock(side_effect=slow_ok)
    tenant = policy(B)
    router = Router(providers(client))
    for _ in range(3):
        with pytest.raises(DeadlineExceeded):
            await router.call_provider(request(), resolved_for(tenant), deadline(1), tenant)
    # checked before any success could reset the count
    assert all(h.consecutive_failures == 0 for _, h in router.health.providers)
    assert is_available(router.health, B, round(asyncio.get_running_loop().time() * 1000))
    resp = await router.call_provider(request(), resolved_for(tenant), deadline(5), tenant)
    assert resp.provider is B
