"""Through the standard Prometheus exporter the six metrics keep the names seed 000 writes."""

from __future__ import annotations

import prometheus_client
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics import MeterProvider

from routeproof.core.types import AttemptRecord, AttemptStatus, ProviderKind, RetryReason
from routeproof.observe import ADMISSION_METRIC_NAMES, METRIC_NAMES, RouterMetrics


def test_prometheus_exporter_shows_the_seed_metric_names() -> None:
    """ai_router_latency_ms is exported as ai_router_latency_ms (histogram), never *_milliseconds."""
    provider = MeterProvider(metric_readers=[PrometheusMetricReader()])
    try:
        metrics = RouterMetrics(provider.get_meter("prometheus-names"))
        a, o = ProviderKind.ANTHROPIC, ProviderKind.OPENAI
        metrics.attempt(
            AttemptRecord(
                provider=a,
                model="m",
                attempt_num=1,
                fallback_position=0,
                status=AttemptStatus.RETRIED_AFTER_5XX,
                elapsed_ms=5,
                retry_reason=RetryReason.FIVE_XX,
                first_token_ms=3,
            )
        )
        metrics.call(a, "m", "succeeded", 1)
        metrics.deadline()
        metrics.failover(a, o)
        text = prometheus_client.generate_latest(prometheus_client.REGISTRY).decode()
    finally:
        provider.shutdown()  # unregisters the exporter's collector from the global registry
    types = dict(line.split()[2:4] for line in text.splitlines() if line.startswith("# TYPE ai_router_"))
    assert {name: types.get(name) for name in METRIC_NAMES} == {
        "ai_router_calls_total": "counter",
        "ai_router_retries_total": "counter",
        "ai_router_failovers_total": "counter",
        "ai_router_latency_ms": "histogram",
        "ai_router_deadline_exceeded_total": "counter",
        "ai_router_attempts_per_call": "histogram",
    }
    assert "_milliseconds" not in text


def test_prometheus_exporter_shows_the_admission_metric_names() -> None:
    """The admission metrics export under their ai_router_ names: a gauge and a histogram, no unit suffix."""
    provider = MeterProvider(metric_readers=[PrometheusMetricReader()])
    try:
        metrics = RouterMetrics(provider.get_meter("prometheus-admission"))
        metrics.queue_changed("openai", 1)
        metrics.queued_for(ProviderKind.OPENAI, 12, "admitted")
        text = prometheus_client.generate_latest(prometheus_client.REGISTRY).decode()
    finally:
        provider.shutdown()
    types = dict(line.split()[2:4] for line in text.splitlines() if line.startswith("# TYPE ai_router_admission"))
    assert {name: types.get(name) for name in ADMISSION_METRIC_NAMES} == {
        "ai_router_admission_queue_depth": "gauge",
        "ai_router_admission_queued_ms": "histogram",
    }
    depth = [line for line in text.splitlines() if line.startswith("ai_router_admission_queue_depth{")]
    assert len(depth) == 1
    assert 'scope="openai"' in depth[0]
    assert depth[0].endswith(" 1.0")
