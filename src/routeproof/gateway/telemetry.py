"""``GET /metrics`` in the Prometheus text format, and the trace context of an incoming request.

The router reports the seed's six metrics and the GenAI conventions' two through the OpenTelemetry
API (``routeproof.observe``). The gateway installs an in-process meter provider
(``gateway/local_meter.py``: plain counters per request, the text built when ``/metrics`` is
scraped — the SDK's per-request aggregation cost about 7 % of the gateway's CPU, issue 25) and
prints it in the Prometheus exposition format under the same names (``ai_router_calls_total``
...; ``gen_ai.client.token.usage`` as ``gen_ai_client_token_usage``), so no exporter package is
involved. ``prometheus_text`` still renders an SDK reader's data for a caller that installed the
SDK itself. It also installs an SDK tracer provider so that the
router's attempt spans get their own span ids: an incoming ``traceparent`` then continues into each
provider call as a child span. Its sampler follows the caller's decision and samples no trace the
gateway starts itself (``ParentBased(ALWAYS_OFF)``): nothing exports these spans, and recording a
span nobody reads cost about as much CPU per request as creating it (a sampled incoming trace is
still recorded and passed on as sampled).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from opentelemetry import context, metrics, propagate, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    Histogram,
    InMemoryMetricReader,
    Metric,
    MetricsData,
    Sum,
)
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ParentBased

from routeproof.gateway.local_meter import LocalMeterProvider, labels, number, prometheus_name

__all__ = ["MetricsSource", "install_telemetry", "metrics_text", "prometheus_text", "trace_context"]

MetricsSource = InMemoryMetricReader | LocalMeterProvider
"""What ``/metrics`` prints: the in-process provider the gateway installs, or an SDK reader."""


def install_telemetry() -> MetricsSource | None:
    """Install the in-process meter provider and an SDK tracer provider process-wide, unless some
    are installed already.

    Returns what ``/metrics`` prints: the in-process provider (the one installed before, when the
    process installed it already), or None when another meter provider was there first.
    """
    current = metrics.get_meter_provider()
    source: MetricsSource | None = current if isinstance(current, LocalMeterProvider) else None
    if not isinstance(current, MeterProvider | LocalMeterProvider):
        source = LocalMeterProvider()
        metrics.set_meter_provider(source)
    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        trace.set_tracer_provider(TracerProvider(sampler=ParentBased(ALWAYS_OFF)))
    return source


def metrics_text(source: MetricsSource | None) -> str:
    """The Prometheus text of ``source`` (an empty exposition when there is none)."""
    if isinstance(source, LocalMeterProvider):
        return source.prometheus_text()
    return prometheus_text(source.get_metrics_data() if source is not None else None)


def trace_context(headers: Mapping[str, str]) -> context.Context:
    """The OpenTelemetry context an incoming ``traceparent``/``tracestate`` describes."""
    return propagate.extract(dict(headers))


def prometheus_text(data: MetricsData | None) -> str:
    """The metrics in ``data`` in the Prometheus text exposition format (version 0.0.4)."""
    lines: list[str] = []
    metrics_seen: Iterable[Metric] = (
        m for rm in (data.resource_metrics if data else ()) for sm in rm.scope_metrics for m in sm.metrics
    )
    for metric in metrics_seen:
        name, description, points = prometheus_name(metric.name, metric.unit or ""), metric.description, metric.data
        if isinstance(points, Sum):
            lines += [f"# HELP {name} {description}", f"# TYPE {name} counter"]
            lines += [f"{name}{labels(p.attributes)} {number(p.value)}" for p in points.data_points]
        elif isinstance(points, Histogram):
            lines += [f"# HELP {name} {description}", f"# TYPE {name} histogram"]
            for p in points.data_points:
                cumulative = 0
                for bound, count in zip([*p.explicit_bounds, math.inf], p.bucket_counts, strict=True):
                    cumulative += count
                    lines.append(f"{name}_bucket{labels({**(p.attributes or {}), 'le': number(bound)})} {cumulative}")
                lines.append(f"{name}_sum{labels(p.attributes)} {number(p.sum)}")
                lines.append(f"{name}_count{labels(p.attributes)} {p.count}")
    return "\n".join(lines) + "\n"
