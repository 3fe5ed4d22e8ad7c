"""An in-process OpenTelemetry meter provider whose instruments are plain counters, rendered when scraped.

Issue 25 measured the OpenTelemetry SDK's per-request instrument calls at about 7 % of the
gateway's CPU (attribute sets hashed into frozensets, a lock per aggregation, exemplar filters).
``/metrics`` is read once every scrape interval, requests arrive thousands of times as often, so
this provider keeps the work on the scrape: an instrument call is one dict lookup on the attribute
values and an integer add (a histogram adds a ``bisect``); the Prometheus text is built when
``/metrics`` asks for it.

It implements the OpenTelemetry *API* (``metrics.MeterProvider``), so the router's
``RouterMetrics`` and anything else that takes a meter use it unchanged. Histogram boundaries
come from the instrument's ``explicit_bucket_boundaries_advisory`` (the SDK's default when none).
One event loop records; a scrape on the same loop reads a consistent view. Observable
instruments are not supported (routeproof creates none): they return the API's no-op instruments.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Mapping, Sequence

from opentelemetry import metrics
from opentelemetry.context import Context
from opentelemetry.metrics import CallbackT, NoOpMeter
from opentelemetry.util.types import Attributes

__all__ = ["DEFAULT_BOUNDARIES", "LocalMeterProvider", "prometheus_name"]

DEFAULT_BOUNDARIES: tuple[float, ...] = (0, 5, 10, 25, 50, 75, 100, 250, 500, 750, 1000, 2500, 5000, 7500, 10000)
"""The SDK's default explicit bucket boundaries, for a histogram that advises none."""

_Key = tuple[tuple[str, object], ...]


def prometheus_name(name: str, unit: str) -> str:
    """The Prometheus name of an OpenTelemetry instrument (the OTel → Prometheus compatibility rules
    that matter here): dots become underscores, a unit in braces (an annotation) is dropped, ``s``
    becomes ``_seconds``. routeproof's own names end in their unit already and carry none."""
    base = name.replace(".", "_")
    if unit == "s" and not base.endswith("_seconds"):
        base += "_seconds"
    return base


def _key(attributes: Attributes) -> _Key:
    return tuple(attributes.items()) if attributes else ()


class _Counter(metrics.Counter, metrics.UpDownCounter):
    """A monotonic (or up/down) sum per attribute set."""

    def __init__(self, name: str, unit: str, description: str, *, kind: str) -> None:
        self.name, self.unit, self.description, self.kind = name, unit, description, kind
        self.values: dict[_Key, float] = {}

    def add(self, amount: float, attributes: Attributes = None, context: Context | None = None) -> None:
        """Add ``amount`` to the series of ``attributes``."""
        key = _key(attributes)
        self.values[key] = self.values.get(key, 0) + amount


class _Series:
    __slots__ = ("count", "counts", "sum")

    def __init__(self, buckets: int) -> None:
        self.counts = [0] * buckets
        self.sum: float = 0
        self.count = 0


class _Histogram(metrics.Histogram):
    """Bucket counts, sum and count per attribute set; a value equal to a bound falls in its bucket
    (Prometheus ``le``)."""

    def __init__(self, name: str, unit: str, description: str, boundaries: Sequence[float]) -> None:
        self.name, self.unit, self.description = name, unit, description
        self.boundaries = tuple(boundaries)
        self.series: dict[_Key, _Series] = {}

    def record(self, amount: float, attributes: Attributes = None, context: Context | None = None) -> None:
        """Count ``amount`` in its bucket of the series of ``attributes``."""
        key = _key(attributes)
        series = self.series.get(key)
        if series is None:
            series = self.series[key] = _Series(len(self.boundaries) + 1)
        series.counts[bisect.bisect_left(self.boundaries, amount)] += 1
        series.sum += amount
        series.count += 1


class _Meter(NoOpMeter):
    """Creates (once per name) the in-process instruments; observables stay no-ops."""

    def __init__(self, registry: dict[str, _Counter | _Histogram], name: str) -> None:
        super().__init__(name)
        self._registry = registry

    def _get(self, name: str, make: Callable[[], _Counter | _Histogram]) -> _Counter | _Histogram:
        instrument = self._registry.get(name)
        if instrument is None:
            instrument = self._registry[name] = make()
        return instrument

    def create_counter(self, name: str, unit: str = "", description: str = "") -> metrics.Counter:
        """A monotonic sum."""
        made = self._get(name, lambda: _Counter(name, unit, description, kind="counter"))
        assert isinstance(made, _Counter), name
        return made

    def create_up_down_counter(self, name: str, unit: str = "", description: str = "") -> metrics.UpDownCounter:
        """A sum that may go down (rendered as a gauge)."""
        made = self._get(name, lambda: _Counter(name, unit, description, kind="gauge"))
        assert isinstance(made, _Counter), name
        return made

    def create_histogram(
        self,
        name: str,
        unit: str = "",
        description: str = "",
        *,
        explicit_bucket_boundaries_advisory: Sequence[float] | None = None,
    ) -> metrics.Histogram:
        """A histogram with the advised boundaries (the SDK default when none are advised)."""
        bounds = explicit_bucket_boundaries_advisory or DEFAULT_BOUNDARIES
        made = self._get(name, lambda: _Histogram(name, unit, description, bounds))
        assert isinstance(made, _Histogram), name
        return made

    def create_observable_counter(
        self, name: str, callbacks: Sequence[CallbackT] | None = None, unit: str = "", description: str = ""
    ) -> metrics.ObservableCounter:
        """Not collected: a no-op (routeproof makes no observable instruments)."""
        return super().create_observable_counter(name, callbacks, unit, description)


class LocalMeterProvider(metrics.MeterProvider):
    """One registry of instruments shared by every meter it hands out; :meth:`prometheus_text` renders it."""

    def __init__(self) -> None:
        self._registry: dict[str, _Counter | _Histogram] = {}

    def get_meter(
        self,
        name: str,
        version: str | None = None,
        schema_url: str | None = None,
        attributes: Attributes | None = None,
    ) -> metrics.Meter:
        """A meter over the shared registry."""
        return _Meter(self._registry, name)

    def prometheus_text(self) -> str:
        """Everything recorded so far in the Prometheus text exposition format (version 0.0.4)."""
        lines: list[str] = []
        for instrument in self._registry.values():
            name = prometheus_name(instrument.name, instrument.unit)
            if isinstance(instrument, _Counter):
                sums: dict[_Key, float] = {}
                for key, value in instrument.values.items():
                    merged = _sorted(key)
                    sums[merged] = sums.get(merged, 0) + value
                if sums:
                    lines += [f"# HELP {name} {instrument.description}", f"# TYPE {name} {instrument.kind}"]
                    lines += [f"{name}{labels(dict(key))} {number(sums[key])}" for key in sorted(sums, key=str)]
                continue
            merged_series: dict[_Key, _Series] = {}
            for key, series in instrument.series.items():
                into = merged_series.setdefault(_sorted(key), _Series(len(series.counts)))
                into.counts = [a + b for a, b in zip(into.counts, series.counts, strict=True)]
                into.sum += series.sum
                into.count += series.count
            if not merged_series:
                continue
            lines += [f"# HELP {name} {instrument.description}", f"# TYPE {name} histogram"]
            for key in sorted(merged_series, key=str):
                series, attrs, cumulative = merged_series[key], dict(key), 0
                for bound, count in zip([*instrument.boundaries, math.inf], series.counts, strict=True):
                    cumulative += count
                    lines.append(f"{name}_bucket{labels({**attrs, 'le': number(bound)})} {cumulative}")
                lines.append(f"{name}_sum{labels(attrs)} {number(series.sum)}")
                lines.append(f"{name}_count{labels(attrs)} {series.count}")
        return "\n".join(lines) + "\n"


def _sorted(key: _Key) -> _Key:
    return tuple(sorted(key, key=lambda item: item[0]))


def labels(attributes: Mapping[str, object] | None) -> str:
    """A Prometheus label set, sorted by name, values escaped; dots in names become underscores."""
    if not attributes:
        return ""
    parts = []
    for key, value in sorted(attributes.items()):
        text = str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        parts.append(f'{key.replace(".", "_")}="{text}"')
    return "{" + ",".join(parts) + "}"


def number(value: float) -> str:
    """A sample value or a bound as Prometheus prints it (``+Inf``, integers without ``.0``)."""
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(value) if isinstance(value, float) and not value.is_integer() else str(int(value))
