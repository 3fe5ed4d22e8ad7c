"""Seed 000 §4, ACs 1-19, against the full router over respx (virtual time via looptime)."""

from __future__ import annotations

import asyncio
import copy
import gc
import logging
import random
import re
import sys

import httpx
import pytest
import respx
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from routeproof import (
    AllProvidersFailed,
    AttemptStatus,
    AuthError,
    DeadlineExceeded,
    InvalidResponse,
    TerminalProviderError,
)
from routeproof.core.health import earliest_return_ms, is_available
from routeproof.core.types import FallbackProvider, ProviderKind, RetryReason, TenantPolicy
from routeproof.observe import RouterMetrics
from routeproof.router import Router
from routeproof.router_options import LimitOptions
from tests.router.fixtures import (
    ALIAS,
    ANTHROPIC_URL,
    MODELS,
    OA,
    OPENAI_URL,
    A,
    B,
    anthropic_body,
    bedrock_body,
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


def make_router(client: httpx.AsyncClient, metrics: RouterMetrics | None = None, **kw: object) -> Router:
    """A router over the four test providers."""
    return Router(providers(client), metrics=metrics, **kw)  # type: ignore[arg-type]  # Router options pass through


async def test_ac01_happy_path(mock: respx.MockRouter, client: httpx.AsyncClient) -> None:
    """AC1: one 200 from Bedrock gives one SUCCEEDED attempt with http 200."""
    mock.post(bedrock_url()).mock(return_value=bedrock_ok())
    tenant = policy(B)
    resp = await make_router(client).call_provider(request(), resolved_for(tenant), deadline(), tenant)
    assert len(resp.attempts) == 1
    assert resp.attempts[0].status is AttemptStatus.SUCCEEDED
    assert resp.attempts[0].http_status == 200
    assert resp.choices[0].content == "4"
    assert resp.provider is B


class _FixedDraw(random.Random):
    """A random source whose every draw is ``u``: pins the jitter so a test's outcome is not luck."""

    def __init__(self, u: float) -> None:
        super().__init__(0)
        self._u = u

    def random(self) -> float:
        """The pinned draw."""
        return self._u


async def test_ac02_retry_on_503(mock: respx.MockRouter, client: httpx.AsyncClient) -> None:
    """AC2: a 503 then a 200 retries once after a sleep in [160, 240] ms (the router's own draws)."""
    mock.post(bedrock_url()).mock(side_effect=[status(503), bedrock_ok()])
    tenant = policy(B)
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    resp = await make_router(client).call_provider(request(), resolved_for(tenant), deadline(), tenant)
    assert [a.status for a in resp.attempts] == [AttemptStatus.RETRIED_AFTER_5XX, AttemptStatus.SUCCEEDED]
    assert 0.160 <= loop.time() - t0 <= 0.240


@pytest.mark.parametrize(("u", "sleep_ms"), [(0.0, 160), (0.5, 200), (1.0, 240)])
async def test_ac02_first_sleep_is_200_ms_with_20_percent_jitter(
    mock: respx.MockRouter, client: httpx.AsyncClient, u: float, sleep_ms: int
) -> None:
    """AC2: with the draw pinned, the first retry sleeps exactly 200 ms * (0.8 + 0.4 u): 160/200/240 ms."""
    mock.post(bedrock_url()).mock(side_effect=[status(503), bedrock_ok()])
    tenant = policy(B)
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    router = make_router(client, rng=_FixedDraw(u))
    resp = await router.call_provider(request(), resolved_for(tenant), deadline(), tenant)
    assert [a.status for a in resp.attempts] == [AttemptStatus.RETRIED_AFTER_5XX, AttemptStatus.SUCCEEDED]
    assert loop.time() - t0 == pytest.approx(sleep_ms / 1000, abs=1e-6)


async def test_ac03_three_5xx_fail_over(mock: respx.MockRouter, client: httpx.AsyncClient) -> None:
    """AC3: three 503s from Bedrock fail over to Anthropic: 4 attempts, the third FAILED_OVER."""
    mock.post(bedrock_url()).mock(return_value=status(503))
    mock.post(ANTHROPIC_URL).mock(return_value=httpx.Response(200, json=anthropic_body()))
    tenant = policy(B, [A])
    resp = await make_router(client).call_provider(request(), resolved_for(tenant), deadline(), tenant)
    assert len(resp.attempts) == 4
    assert resp.attempts[2].status is AttemptStatus.FAILED_OVER
    assert resp.attempts[3].provider is A
    assert resp.attempts[3].status is AttemptStatus.SUCCEEDED
    assert resp.attempts[3].fallback_position == 1


async def test_ac04_400_is_terminal(mock: respx.MockRouter, client: httpx.AsyncClient) -> None:
    """AC4: a 400 is not retried and not failed over; one TERMINAL_400 record."""
    mock.post(bedrock_url()).mock(return_value=status(400, body={"message": "malformed prompt"}))
    anthropic = mock.post(ANTHROPIC_URL).mock(return_value=httpx.Response(200, json=anthropic_body()))
    tenant = policy(B, [A])
    with pytest.raises(TerminalProviderError) as info:
        await make_router(client).call_provider(request(), resolved_for(tenant), deadline(), tenant)
    assert info.value.status == 400
    assert [a.status for a in info.value.attempts] == [AttemptStatus.TERMINAL_400]
    assert anthropic.call_count == 0


@pytest.mark.parametrize("code", [401, 403])
async def test_ac05_auth_is_terminal_with_sev1_log(
    mock: respx.MockRouter, client: httpx.AsyncClient, caplog: pytest.LogCaptureFixture, code: int
) -> None:
    """AC5: 401/403 raise AuthError(provider, status), log severity sev-1, never fail over."""
    mock.post(bedrock_url()).mock(return_value=status(code))
    anthropic = mock.post(ANTHROPIC_URL).mock(return_value=httpx.Response(200, json=anthropic_body()))
    tenant = policy(B, [A])
    with caplog.at_level(logging.ERROR, logger="routeproof"), pytest.raises(AuthError) as info:
        await make_router(client).call_provider(request(), resolved_for(tenant), deadline(), tenant)
    assert (info.value.provider, info.value.status) == (B, code)
    assert info.value.attempts[0].http_status == code  # a 403 is recorded as 403
    assert info.value.attempts[0].status is AttemptStatus.TERMINAL_AUTH
    assert [getattr(r, "severity", None) for r in caplog.records] == ["sev-1"]
    assert anthropic.call_count == 0


async def test_ac06_404_is_terminal_no_failover(
    mock: respx.MockRouter, client: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    """AC6: a 404 (model not found) is terminal, logs sev-2 and does not fail over."""
    mock.post(bedrock_url()).mock(return_value=status(404, body={"message": "model claude-99 not found"}))
    anthropic = mock.post(ANTHROPIC_URL).mock(return_value=httpx.Response(200, json=anthropic_body()))
    tenant = policy(B, [A])
    with caplog.at_level(logging.WARNING, logger="routeproof"), pytest.raises(TerminalProviderError) as info:
        await make_router(client).call_provider(request(), resolved_for(tenant), deadline(), tenant)
    assert info.value.status == 404
    assert info.value.attempts[0].status is AttemptStatus.TERMINAL_404
    assert anthropic.call_count == 0
    assert [getattr(r, "severity", None) for r in caplog.records] == ["sev-2"]


async def test_ac07_30s_failover_budget(mock: respx.MockRouter, client: httpx.AsyncClient) -> None:
    """AC7: providers taking 8 s to 503 end in AllProvidersFailed by 30 s, whatever remains."""

    async def slow_503(request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(8)
        return status(503)

    for url in (bedrock_url(), ANTHROPIC_URL, OPENAI_URL):
        mock.post(url).mock(side_effect=slow_503)
    tenant = policy(B, [A, OA])
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    with pytest.raises(AllProvidersFailed) as info:
        await make_router(client).call_provider(request(), resolved_for(tenant), deadline(120), tenant)
    assert loop.time() - t0 <= 30.0
    assert info.value.attempts[-1].status is AttemptStatus.TIMEOUT_BEFORE_FIRST_TOKEN


async def test_ac08_deadline_propagates(
    mock: respx.MockRouter, client: httpx.AsyncClient, metrics: RouterMetrics, metric_reader: InMemoryMetricReader
) -> None:
    """AC8: a 5 s deadline against a 10 s provider raises DeadlineExceeded within 50 ms of it, counted
    once in ai_router_deadline_exceeded_total."""

    async def slow_ok(request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(10)
        return bedrock_ok()

    mock.post(bedrock_url()).mock(side_effect=slow_ok)
    tenant = policy(B)
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    with pytest.raises(DeadlineExceeded) as info:
        await make_router(client, metrics=metrics).call_provider(request(), resolved_for(tenant), t0 + 5, tenant)
    assert 5.0 <= loop.time() - t0 <= 5.05
    assert _points(metric_reader, "ai_router_deadline_exceeded_total") == {(): 1}
    assert info.value.attempts[0].status is AttemptStatus.DEADLINE_EXCEEDED_MID_CALL
    assert info.value.attempts[0].http_status is None


async def test_ac09_concurrent_calls_do_not_interfere(mock: respx.MockRouter, client: httpx.AsyncClient) -> None:
    """AC9: 100 concurrent calls with their own models see only their own responses and records."""

    def echo(request: httpx.Request) -> httpx.Response:
        model = request.url.path.split("/")[2]
        return httpx.Response(200, json=bedrock_body(text=model), headers={"x-amzn-requestid": f"id-{model}"})

    mock.post(url__regex=r"/model/[^/]+/converse$").mock(side_effect=echo)
    router = make_router(client)

    async def one(i: int) -> None:
        tenant = TenantPolicy(primary={ALIAS: (B, f"m-{i}")})
        resp = await router.call_provider(request(), resolved_for(tenant), deadline(), tenant)
        assert resp.id == f"id-m-{i}"
        assert resp.choices[0].content == f"m-{i}"
        assert [(a.provider, a.model) for a in resp.attempts] == [(B, f"m-{i}")]

    await asyncio.gather(*(one(i) for i in range(100)))


async def test_ac10_audit_metadata(mock: respx.MockRouter, client: httpx.AsyncClient) -> None:
    """AC10: every record has provider, model, attempt_num, position, status, elapsed and http status."""

    calls = 0

    async def slow_then_fail(request: httpx.Request) -> httpx.Response:
        nonlocal calls
        calls += 1
        if calls == 1:
            await asyncio.sleep(0.3)
            raise httpx.ReadTimeout("read timed out", request=request)
        return status(502) if calls == 2 else bedrock_ok()

    mock.post(bedrock_url()).mock(side_effect=slow_then_fail)
    tenant = policy(B)
    resp = await make_router(client).call_provider(request(), resolved_for(tenant), deadline(), tenant)
    first, second, third = resp.attempts
    assert (first.provider, first.model, first.attempt_num, first.fallback_position) == (B, MODELS[B], 1, 0)
    assert first.http_status is None
    assert first.retry_reason is RetryReason.TIMEOUT
    assert first.elapsed_ms == 300
    assert (second.http_status, second.retry_reason, second.attempt_num) == (502, RetryReason.FIVE_XX, 2)
    assert (third.status, third.http_status, third.attempt_num) == (AttemptStatus.SUCCEEDED, 200, 3)


async def test_ac11_backoff_sleeps_in_band(mock: respx.MockRouter, client: httpx.AsyncClient) -> None:
    """AC11: across 50 calls the router's retry sleeps stay in [160, 240] and [640, 960] ms."""
    loop = asyncio.get_running_loop()
    router = make_router(client)
    tenant = policy(B)
    for _ in range(50):
        route = mock.post(bedrock_url()).mock(side_effect=[status(500), status(500), bedrock_ok()])
        route.reset()
        t0 = loop.time()
        await router.call_provider(request(), resolved_for(tenant), deadline(), tenant)
        assert 0.800 <= loop.time() - t0 <= 1.200
        assert route.call_count == 3


async def test_ac12_retry_after_honoured(mock: respx.MockRouter, client: httpx.AsyncClient) -> None:
    """AC12: a 429 with Retry-After: 5 sleeps exactly 5 s, not the 200 ms backoff."""
    mock.post(bedrock_url()).mock(side_effect=[status(429, {"Retry-After": "5"}), bedrock_ok()])
    tenant = policy(B)
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    resp = await make_router(client).call_provider(request(), resolved_for(tenant), deadline(), tenant)
    assert resp.attempts[0].status is AttemptStatus.RETRIED_AFTER_429
    assert loop.time() - t0 == pytest.approx(5.0, abs=0.01)


async def test_ac12_retry_after_past_budget_fails_over(mock: respx.MockRouter, client: httpx.AsyncClient) -> None:
    """AC12: Retry-After: 60 with a 10 s deadline fails over at once, with no sleep."""
    mock.post(bedrock_url()).mock(return_value=status(429, {"Retry-After": "60"}))
    mock.post(ANTHROPIC_URL).mock(return_value=httpx.Response(200, json=anthropic_body()))
    tenant = policy(B, [A])
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    resp = await make_router(client).call_provider(request(), resolved_for(tenant), deadline(10), tenant)
    assert any(a.provider is A and a.status is AttemptStatus.SUCCEEDED for a in resp.attempts)
    assert loop.time() - t0 < 0.05


async def test_ac13_attempts_cap(
    mock: respx.MockRouter, client: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    """AC13: eight failing providers stop at 16 attempts with InvalidResponse("attempts cap exceeded")
    and one sev-2 log line."""
    route = mock.post(url__regex=r"/model/[^/]+/converse$").mock(return_value=status(503))
    tenant = TenantPolicy(
        primary={ALIAS: (B, "m0")},
        fallback_chain=tuple(FallbackProvider(kind=B, model_alias_map={ALIAS: f"m{i}"}) for i in range(1, 8)),
    )
    with caplog.at_level(logging.WARNING, logger="routeproof"), pytest.raises(InvalidResponse) as info:
        await make_router(client, limits=LimitOptions(attempt_timeout_ms=500)).call_provider(
            request(), resolved_for(tenant), deadline(120), tenant
        )
    capped = [r for r in caplog.records if r.getMessage().startswith("router_attempts_cap_exceeded")]
    assert [(r.levelno, getattr(r, "severity", None)) for r in capped] == [(logging.ERROR, "sev-2")]
    # 503s are instant here, but 8 x (200 + 800 ms) of sleeps fit in 30 s, so the cap is what stops it
    assert "attempts cap exceeded" in str(info.value)
    # the seed's number, not routeproof's constant: seed 000 requirement 13 "MUST cap attempts at 16
    # records" and acceptance criterion 13 "after 16 attempts. NO 17th attempt" (its `const ATTEMPTS_CAP:
    # usize = 16`); pinned as a literal so that editing routeproof's ATTEMPTS_CAP fails this test
    assert route.call_count == 16
    assert len(info.value.attempts) == 16


def _points(reader: InMemoryMetricReader, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    """Each data point of metric ``name``: sorted labels -> value (counters) or count (histograms)."""
    data = reader.get_metrics_data()
    assert data is not None
    out: dict[tuple[tuple[str, str], ...], float] = {}
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name == name:
                    for point in metric.data.data_points:
                        value = getattr(point, "value", None)
                        if value is None:
                            value = getattr(point, "count", 0)
                        labels = point.attributes or {}
                        out[tuple(sorted((k, str(v)) for k, v in labels.items()))] = float(value or 0)
    return out


async def test_ac14_metrics(
    mock: respx.MockRouter, client: httpx.AsyncClient, metrics: RouterMetrics, metric_reader: InMemoryMetricReader
) -> None:
    """AC14 with provider health on: 90 primary successes + 8 failovers + 2 all-failed give calls_total
    98/2 and exactly 8 bedrock->anthropic failovers (the all-failed calls start on anthropic, bedrock cooling)."""
    tenant = policy(B, [A])
    router = make_router(client, metrics=metrics)  # default health: 2 failures, 30 s cooldown
    loop = asyncio.get_running_loop()
    ok_route = mock.post(bedrock_url()).mock(return_value=bedrock_ok())
    for _ in range(90):
        await router.call_provider(request(), resolved_for(tenant), deadline(), tenant)
    ok_route.mock(return_value=status(503))
    fallback = mock.post(ANTHROPIC_URL).mock(return_value=httpx.Response(200, json=anthropic_body()))
    for _ in range(8):
        await asyncio.sleep(31)  # bedrock's 30 s cooldown from the previous failover ends: it is tried first
        resp = await router.call_provider(request(), resolved_for(tenant), deadline(), tenant)
        assert resp.provider is A
    fallback.mock(return_value=status(503))
    for _ in range(2):
        now_ms = round(loop.time() * 1000)
        wake_ms = earliest_return_ms(router.health, (A,), now_ms)  # anthropic's cooldown ends first
        assert wake_ms is not None
        await asyncio.sleep((wake_ms - now_ms) / 1000)
        assert is_available(router.health, A, round(loop.time() * 1000))
        assert not is_available(router.health, B, round(loop.time() * 1000))  # bedrock cools: demoted, last
        with pytest.raises(AllProvidersFailed):
            await router.call_provider(request(), resolved_for(tenant), deadline(), tenant)
    calls = _points(metric_reader, "ai_router_calls_total")
    by_outcome: dict[str, float] = {}
    for labels, value in calls.items():
        outcome = dict(labels)["outcome"]
        by_outcome[outcome] = by_outcome.get(outcome, 0) + value
    assert by_outcome == {"succeeded": 98, "all_failed": 2}
    failovers = _points(metric_reader, "ai_router_failovers_total")
    assert failovers == {(("from", "bedrock"), ("to", "anthropic")): 8, (("from", "anthropic"), ("to", "bedrock")): 2}
    retries = _points(metric_reader, "ai_router_retries_total")
    assert set(retries) <= {(("provider", p), ("reason", r)) for p in ("bedrock", "anthropic") for r in ("5xx",)}
    assert sum(retries.values()) == 10 * 2 + 2 * 2  # two retries per exhausted provider
    assert set(_points(metric_reader, "ai_router_attempts_per_call")) == {
        (("final_outcome", "succeeded"),),
        (("final_outcome", "all_failed"),),
    }
    for labels in list(calls) + list(_points(metric_reader, "ai_router_latency_ms")):
        provider = dict(labels)["provider"]
        assert provider in {"bedrock", "anthropic"}, provider  # as_metric_label, never a repr


async def test_ac15_normalization_across_providers(mock: respx.MockRouter, client: httpx.AsyncClient) -> None:
    """AC15: one answer in the Bedrock, Anthropic and OpenAI shapes normalises equal but for id/latency."""
    mock.post(bedrock_url()).mock(return_value=bedrock_ok(text="Paris"))
    mock.post(ANTHROPIC_URL).mock(return_value=httpx.Response(200, json=anthropic_body(text="Paris")))
    mock.post(OPENAI_URL).mock(return_value=httpx.Response(200, json=openai_body(text="Paris")))
    router = make_router(client)
    answers = []
    for kind in (B, A, OA):
        tenant = policy(kind)
        answers.append(await router.call_provider(request(), resolved_for(tenant), deadline(), tenant))
    bedrock, anthropic, openai = answers
    assert bedrock.usage == anthropic.usage == openai.usage
    assert bedrock.finish_reason == anthropic.finish_reason == openai.finish_reason
    assert bedrock.choices == anthropic.choices == openai.choices
    assert bedrock.cache_state == anthropic.cache_state == openai.cache_state


async def test_ac16_streaming_entry_point_exists(client: httpx.AsyncClient) -> None:
    """AC16 (Python form): call_provider_streaming exists and returns an async iterator of events."""
    router = make_router(client)
    tenant = policy(ProviderKind.LOCAL)
    stream = router.call_provider_streaming(request(), resolved_for(tenant), deadline(), tenant)
    assert hasattr(stream, "__anext__")
    await stream.aclose()


async def test_ac17_traceparent_propagated(
    mock: respx.MockRouter, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """AC17: the outbound traceparent has the inbound trace id and a new (child) span id."""
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider

    provider = TracerProvider()
    tracer = provider.get_tracer("inbound")
    route = mock.post(bedrock_url()).mock(return_value=bedrock_ok())
    tenant = policy(B)
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: provider)  # no process-wide provider set twice
    with tracer.start_as_current_span("cost_ledger.precheck") as inbound:
        await make_router(client).call_provider(request(), resolved_for(tenant), deadline(), tenant)
    header = route.calls.last.request.headers["traceparent"]
    match = re.fullmatch(r"00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}", header)
    assert match is not None, header
    context = inbound.get_span_context()
    assert match.group(1) == f"{context.trace_id:032x}"
    assert match.group(2) != f"{context.span_id:016x}"


async def test_ac18_policy_and_request_unchanged_and_not_retained(
    mock: respx.MockRouter, client: httpx.AsyncClient
) -> None:
    """AC18: the policy and request are deeply unchanged, and no reference to them outlives the call."""
    mock.post(bedrock_url()).mock(side_effect=[status(503), bedrock_ok()])
    tenant = policy(B, [A])
    req = request()
    before_policy, before_req = copy.deepcopy(tenant), copy.deepcopy(req)
    refs_policy, refs_req = sys.getrefcount(tenant), sys.getrefcount(req)
    router = make_router(client)
    await router.call_provider(req, resolved_for(tenant), deadline(), tenant)
    gc.collect()
    assert tenant == before_policy
    assert req == before_req
    assert sys.getrefcount(tenant) == refs_policy
    assert sys.getrefcount(req) == refs_req
    assert not any(isinstance(r, Router) for r in gc.get_referrers(tenant))
