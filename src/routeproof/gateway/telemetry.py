"""``GET /metrics`` in the Prometheus text format, and the trace context of an incoming request.

The router reports the seed's six metrics through the OpenTelemetry API (``routeproof.observe``).
The gateway installs an SDK meter provider with an in-memory reader and prints what it holds in
the Prometheus exposition format under the same names (``ai_router_calls_total`` ...), so no
exporter package and no renaming is involved. It also installs an SDK tracer provider so that the
router's attempt spans get their own span ids: an incoming ``traceparent`` then continues into each
provider call as a child span.
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

__all__ = ["install_telemetry", "prometheus_text", "trace_context"]


def install_telemetry() -> InMemoryMetricReader | None:
    """Install SDK meter and tracer providers process-wide, unless some are installed already.

    Returns the reader ``/metrics`` prints, or None when another meter provider was there first.
    """
    reader: InMemoryMetricReader | None = None
    if not isinstance(metrics.get_meter_provider(), MeterProvider):
        reader = InMemoryMetricReader()
        metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        trace.set_tracer_provider(TracerProvider())
    return reader


def trace_context(headers: Mapping[str, str]) -> context.Context:
    """The OpenTelemetry context an incoming ``traceparent``/``tracestate`` describes."""
    return propagate.extract(dict(headers))


def _labels(attributes: Mapping[str, object] | None) -> str:
    if not attributes:
        return ""
    parts = []
    for key, value in sorted(attributes.items()):
        text = str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        parts.append(f'{key}="{text}"')
    return "{" + ",".join(parts) + "}"


def _number(value: float) -> str:
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(value) if isinstance(value, float) and not value.is_integer() else str(int(value))


def _with(attributes: Mapping[str, object] | None, **extra: object) -> dict[str, object]:
    return {**(attributes or {}), **extra}


def prometheus_text(data: MetricsData | None) -> str:
    """The metrics in ``data`` in the Prometheus text exposition format (version 0.0.4)."""
    lines: list[str] = []
    metrics_seen: Iterable[Metric] = (
        m for rm in (data.resource_metrics if data else ()) for sm in rm.scope_metrics for m in sm.metrics
    )
    for metric in metrics_seen:
        name, description, points = metric.name, metric.description, metric.data
        if isinstance(points, Sum):
            lines += [f"# HELP {name} {description}", f"# TYPE {name} counter"]
            lines += [f"{name}{_labels(p.attributes)} {_number(p.value)}" for p in points.data_points]
        elif isinstance(points, Histogram):
            lines += [f"# HELP {name} {description}", f"# TYPE {name} histogram"]
            for p in points.data_points:
                cumulative = 0
                for bound, count in zip([*p.explicit_bounds, math.inf], p.bucket_counts, strict=True):
                    cumulative += count
                    lines.append(f"{name}_bucket{_labels(_with(p.attributes, le=_number(bound)))} {cumulative}")
                lines.append(f"{name}_sum{_labels(p.attributes)} {_number(p.sum)}")
                lines.append(f"{name}_count{_labels(p.attributes)} {p.count}")
    return "\n".join(lines) + "\n"
