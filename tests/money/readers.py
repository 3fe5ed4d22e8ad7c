"""Reading back what an OpenTelemetry SDK meter recorded (shared by the telemetry tests)."""

from __future__ import annotations

from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader


def histogram_points(reader: InMemoryMetricReader, name: str) -> list[HistogramDataPoint]:
    """Every data point of the histogram ``name`` the reader collected (one per attribute set)."""
    data = reader.get_metrics_data()
    assert data is not None
    found = [
        p
        for rm in data.resource_metrics
        for sm in rm.scope_metrics
        for m in sm.metrics
        if m.name == name
        for p in m.data.data_points
    ]
    assert all(isinstance(p, HistogramDataPoint) for p in found)
    return [p for p in found if isinstance(p, HistogramDataPoint)]
