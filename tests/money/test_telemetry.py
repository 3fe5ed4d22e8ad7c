"""Telemetry as seed 000 specifies it and as back ends read it: the buckets, the closed provider
label set, the in-process meter the gateway scrapes, and the GenAI semantic conventions."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from opentelemetry import trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as ga
from opentelemetry.semconv._incubating.metrics import gen_ai_metrics as gm

from routeproof.config import load_config
from routeproof.core.identity import ProviderName
from routeproof.core.routing import resolve
from routeproof.core.types import AttemptRecord, AttemptStatus, ChatRequest, Message, ProviderKind, RetryReason, Usage
from routeproof.deadline import deadline_in
from routeproof.factory import router_from_config, tenant_policy
from routeproof.gateway.local_meter import LocalMeterProvider
from routeproof.gateway.telemetry import prometheus_text
from routeproof.mock import MockProviderServer, Scripted, Shape
from routeproof.observe import (
    ATTEMPTS_BUCKETS,
    GENAI_DURATION_BUCKETS_S,
    GENAI_METRIC_NAMES,
    GENAI_TOKEN_BUCKETS,
    LATENCY_BUCKETS_MS,
    NO_PROVIDER_LABEL,
    PROVIDER_LABELS,
    RouterMetrics,
    genai_provider_name,
    genai_usage_attributes,
)
from tests.money.readers import histogram_points
from tests.money.spans import recording_tracer

SEED_LATENCY_BUCKETS_MS = (50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000)  # seed 000, LATENCY_MS


def _sdk() -> tuple[RouterMetrics, InMemoryMetricReader]:
    reader = InMemoryMetricReader()
    return RouterMetrics(MeterProvider(metric_readers=[reader]).get_meter("money")), reader


def test_attempts_histogram_gives_every_count_to_16_its_own_bucket() -> None:
    """ai_router_attempts_per_call's bounds are 1..16; calls of 1..16 attempts land one per bucket."""
    metrics, reader = _sdk()
    for attempts in range(1, 17):
        metrics.call(ProviderKind.OPENAI, "gpt-4o", "succeeded", attempts)
    (point,) = histogram_points(reader, "ai_router_attempts_per_call")
    assert tuple(point.explicit_bounds) == ATTEMPTS_BUCKETS == tuple(range(1, 17))
    assert list(point.bucket_counts) == [1] * 16 + [0]


def test_latency_histogram_has_the_seeds_buckets_through_and_past_30_s() -> None:
    """ai_router_latency_ms's bounds are the seed's list; 20 s is in (10 s, 30 s], 45 s in +Inf."""
    metrics, reader = _sdk()
    metrics.latency.record(20_000, {"provider": "openai", "model": "m"})
    metrics.latency.record(45_000, {"provider": "openai", "model": "m"})
    (point,) = histogram_points(reader, "ai_router_latency_ms")
    assert tuple(point.explicit_bounds) == LATENCY_BUCKETS_MS == SEED_LATENCY_BUCKETS_MS
    assert tuple(point.bucket_counts[-2:]) == (1, 1)


def test_first_token_histogram_has_the_latency_buckets() -> None:
    """ai_router_first_token_ms shares the latency bounds: a 20 s first token is in (10 s, 30 s]."""
    metrics, reader = _sdk()
    metrics.first_token.record(20_000, {"provider": "openai", "model": "m"})
    (point,) = histogram_points(reader, "ai_router_first_token_ms")
    assert tuple(point.explicit_bounds) == LATENCY_BUCKETS_MS
    assert tuple(point.bucket_counts[-2:]) == (1, 0)


def test_a_call_that_reached_no_provider_has_the_documented_label() -> None:
    """provider=None is labelled NO_PROVIDER_LABEL, a member of the closed set and no kind's label."""
    metrics, reader = _sdk()
    metrics.call(None, "chat", "all_failed", 0)
    data = reader.get_metrics_data()
    assert data is not None
    text = prometheus_text(data)
    assert f'ai_router_calls_total{{model="chat",outcome="all_failed",provider="{NO_PROVIDER_LABEL}"}} 1' in text
    assert NO_PROVIDER_LABEL in PROVIDER_LABELS
    assert NO_PROVIDER_LABEL not in {kind.as_metric_label() for kind in ProviderKind}
    assert 'provider="none"' not in text


def _record_everything(metrics: RouterMetrics) -> None:
    for elapsed_ms, status in ((40, AttemptStatus.SUCCEEDED), (12_000, AttemptStatus.RETRIED_AFTER_5XX)):
        metrics.attempt(
            AttemptRecord(
                provider=ProviderKind.ANTHROPIC,
                model="claude-sonnet-4-20250514",
                attempt_num=1,
                fallback_position=0,
                status=status,
                elapsed_ms=elapsed_ms,
                http_status=200 if status is AttemptStatus.SUCCEEDED else 503,
                retry_reason=None if status is AttemptStatus.SUCCEEDED else RetryReason.FIVE_XX,
            )
        )
    metrics.usage(ProviderKind.ANTHROPIC, "claude-sonnet-4-20250514", Usage(prompt_tokens=900, completion_tokens=70))
    metrics.failover(ProviderKind.ANTHROPIC, ProviderKind.OPENAI)
    metrics.call(ProviderKind.ANTHROPIC, "claude-sonnet-4-20250514", "succeeded", 2)
    metrics.call(None, "chat", "all_failed", 3)
    metrics.deadline()


def test_the_in_process_meter_prints_what_the_sdk_prints() -> None:
    """The gateway's in-process meter renders the same Prometheus text as the SDK for the same recordings."""
    sdk, reader = _sdk()
    local_provider = LocalMeterProvider()
    local = RouterMetrics(local_provider.get_meter("money"))
    _record_everything(sdk)
    _record_everything(local)
    data = reader.get_metrics_data()
    assert data is not None
    assert sorted(local_provider.prometheus_text().splitlines()) == sorted(prometheus_text(data).splitlines())
    assert 'ai_router_attempts_per_call_bucket{final_outcome="succeeded",le="2"} 1' in prometheus_text(data)


def test_genai_names_units_and_buckets_follow_the_semantic_conventions() -> None:
    """Metric names, units and advised buckets equal the semconv package's and the conventions' text."""
    assert GENAI_METRIC_NAMES == (
        gm.GEN_AI_CLIENT_TOKEN_USAGE,
        gm.GEN_AI_CLIENT_OPERATION_DURATION,
        gm.GEN_AI_CLIENT_OPERATION_TIME_TO_FIRST_CHUNK,
    )
    sdk_meter = MeterProvider().get_meter("semconv")
    ours = RouterMetrics(sdk_meter)
    pairs = (
        (ours.token_usage, gm.create_gen_ai_client_token_usage(sdk_meter)),
        (ours.operation_duration, gm.create_gen_ai_client_operation_duration(sdk_meter)),
        (ours.time_to_first_chunk, gm.create_gen_ai_client_operation_time_to_first_chunk(sdk_meter)),
    )
    for mine, theirs in pairs:
        assert (getattr(mine, "name", None), getattr(mine, "unit", None)) == (theirs.name, theirs.unit)  # type: ignore[attr-defined]  # SDK instruments carry name/unit; the API type does not declare them
    assert GENAI_TOKEN_BUCKETS == (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304,
                                   16777216, 67108864)  # fmt: skip
    assert all(math.isclose(b, 0.01 * 2**i) for i, b in enumerate(GENAI_DURATION_BUCKETS_S))
    assert len(GENAI_DURATION_BUCKETS_S) == 14


def test_genai_provider_names_are_the_conventions_well_known_values() -> None:
    """openai, anthropic and bedrock map to GenAiProviderNameValues; the rest keep their kind label."""
    known = {v.value for v in ga.GenAiProviderNameValues}
    assert genai_provider_name(ProviderKind.OPENAI) == ga.GenAiProviderNameValues.OPENAI.value
    assert genai_provider_name(ProviderKind.ANTHROPIC) == ga.GenAiProviderNameValues.ANTHROPIC.value
    assert genai_provider_name(ProviderKind.BEDROCK) == ga.GenAiProviderNameValues.AWS_BEDROCK.value
    assert genai_provider_name(ProviderKind.OLLAMA) == "ollama"
    assert "ollama" not in known


PRICING = """
[anthropic."claude-sonnet-4-20250514"]
input_per_mtok = 3.00
output_per_mtok = 15.00
[openai."gpt-4o"]
input_per_mtok = 2.50
output_per_mtok = 10.00
"""
AGENT = """
pricing = "pricing.toml"
[driver.providers.anthropic]
base_url = "{anthropic}"
model = "claude-sonnet-4-20250514"
[driver.providers.openai]
base_url = "{openai}"
model = "gpt-4o"
"""


@pytest.fixture
def spans(monkeypatch: pytest.MonkeyPatch) -> InMemorySpanExporter:
    """A recording SDK tracer provider for routeproof's attempt spans (the global one may be set already)."""
    return recording_tracer(monkeypatch)


@pytest.mark.asyncio
async def test_each_attempt_span_carries_genai_attributes_and_the_ledgers_usage(
    tmp_path: Path, spans: InMemorySpanExporter
) -> None:
    """A 503 then an answer: two CLIENT spans named "chat <model>" with gen_ai.*; the answer's usage
    attributes times the price equal the ledger's booked cost for that attempt."""
    async with MockProviderServer(Shape.ANTHROPIC) as anthropic, MockProviderServer(Shape.OPENAI) as openai:
        (tmp_path / "pricing.toml").write_text(PRICING)
        path = tmp_path / "agent.toml"
        path.write_text(AGENT.format(anthropic=anthropic.base_url, openai=openai.base_url + "/v1"))
        config = load_config(path, environ={"ANTHROPIC_API_KEY": "k", "OPENAI_API_KEY": "k"})
        router = router_from_config(config)
        policy = tenant_policy(config, "chat")
        anthropic.script(Scripted(status=503))
        req = ChatRequest(messages=(Message.user("2+2?"),), max_tokens=32, alias="chat")
        try:
            resp = await router.call_provider(req, resolve("chat", policy), deadline_in(20), policy)
        finally:
            await router.aclose()
    first, second = spans.get_finished_spans()
    for span in (first, second):
        assert span.name == "chat claude-sonnet-4-20250514"
        assert span.kind is trace.SpanKind.CLIENT
        attrs = span.attributes or {}
        assert attrs[ga.GEN_AI_OPERATION_NAME] == ga.GenAiOperationNameValues.CHAT.value
        assert attrs[ga.GEN_AI_PROVIDER_NAME] == "anthropic"
        assert attrs[ga.GEN_AI_REQUEST_MODEL] == "claude-sonnet-4-20250514"
    assert ga.GEN_AI_USAGE_INPUT_TOKENS not in (first.attributes or {})
    attrs = second.attributes or {}
    assert attrs[ga.GEN_AI_RESPONSE_MODEL] == resp.model
    assert attrs[ga.GEN_AI_USAGE_INPUT_TOKENS] == resp.usage.prompt_tokens
    assert attrs[ga.GEN_AI_USAGE_OUTPUT_TOKENS] == resp.usage.completion_tokens
    input_tokens, output_tokens = attrs[ga.GEN_AI_USAGE_INPUT_TOKENS], attrs[ga.GEN_AI_USAGE_OUTPUT_TOKENS]
    assert isinstance(input_tokens, int)
    assert isinstance(output_tokens, int)
    assert resp.cost_pico_usd == input_tokens * 3_000_000 + output_tokens * 15_000_000


def test_usage_attribute_names_are_the_conventions() -> None:
    """Every gen_ai.usage.* attribute a span gets is a semconv constant, and the counts are the usage's."""
    usage = Usage(
        prompt_tokens=10, completion_tokens=7, cached_input_tokens=3, cache_creation_tokens=2, reasoning_tokens=4
    )
    attrs = genai_usage_attributes(usage, "m")
    assert attrs == {
        ga.GEN_AI_RESPONSE_MODEL: "m",
        ga.GEN_AI_USAGE_INPUT_TOKENS: 15,
        ga.GEN_AI_USAGE_OUTPUT_TOKENS: 7,
        ga.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: 3,
        ga.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS: 2,
        ga.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS: 4,
    }


def test_genai_attributes_are_a_new_dict_per_observation_named_by_each_providers_kind() -> None:
    """The GenAI attributes built once per label and model are copied per observation: a failed
    attempt's ``error.type`` never reaches a later success's point, and two named providers with one
    name but different kinds keep their own ``gen_ai.provider.name``."""
    metrics, reader = _sdk()
    for status in (AttemptStatus.RETRIED_AFTER_5XX, AttemptStatus.SUCCEEDED, AttemptStatus.SUCCEEDED):
        metrics.attempt(
            AttemptRecord(
                provider=ProviderKind.OPENAI, model="gpt-4o", attempt_num=1, fallback_position=0,
                status=status, elapsed_ms=5, http_status=503 if status is AttemptStatus.RETRIED_AFTER_5XX else 200,
            )
        )  # fmt: skip
    usage = Usage(prompt_tokens=3, completion_tokens=1)
    metrics.usage(ProviderName("edge", ProviderKind.OPENAI), "m", usage)
    metrics.usage(ProviderName("edge", ProviderKind.BEDROCK), "m", usage)
    data = reader.get_metrics_data()
    assert data is not None
    points = {
        m.name: [dict(p.attributes or {}) for p in m.data.data_points]
        for rm in data.resource_metrics
        for sm in rm.scope_metrics
        for m in sm.metrics
    }
    durations = points["gen_ai.client.operation.duration"]
    assert sorted(str(p.get("error.type", "")) for p in durations) == ["", AttemptStatus.RETRIED_AFTER_5XX.value]
    assert {(p["gen_ai.provider.name"], p["gen_ai.token.type"]) for p in points["gen_ai.client.token.usage"]} == {
        ("openai", "input"), ("openai", "output"), ("aws.bedrock", "input"), ("aws.bedrock", "output"),
    }  # fmt: skip


def test_token_usage_counts_each_token_type_under_its_own_label() -> None:
    """gen_ai.client.token.usage observes the input tokens (prompt, cache reads and writes) under
    ``gen_ai.token.type=input`` and the completion tokens under ``output``, with the provider's name and
    the request's model, for every call of the same provider and model."""
    metrics, reader = _sdk()
    for _ in range(2):
        usage = Usage(prompt_tokens=30, completion_tokens=7, cached_input_tokens=5, cache_creation_tokens=2)
        metrics.usage(ProviderKind.OPENAI, "gpt-4o", usage)
    points = {
        (p.attributes or {}).get("gen_ai.token.type"): (dict(p.attributes or {}), p.sum, p.count)
        for p in histogram_points(reader, "gen_ai.client.token.usage")
    }
    base = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-4o"}
    assert points == {
        "input": ({**base, "gen_ai.token.type": "input"}, 2 * 37, 2),
        "output": ({**base, "gen_ai.token.type": "output"}, 2 * 7, 2),
    }
