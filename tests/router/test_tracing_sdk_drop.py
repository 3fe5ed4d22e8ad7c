"""Attempt spans under an SDK whose sampler drops them (the gateway's ``ParentBased(ALWAYS_OFF)``):
the router makes the non-recording span the SDK would make, without the SDK's ``start_span``
(issue 25). Each case is run twice from the same random state, through the shortcut and through the
SDK itself, and the two must send the very same ids, flags and trace state."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

import pytest
from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.id_generator import RandomIdGenerator
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ALWAYS_ON, Decision, ParentBased, Sampler, SamplingResult
from opentelemetry.trace import Link, NonRecordingSpan, SpanContext, SpanKind, TraceFlags, TraceState
from opentelemetry.util.types import Attributes

from routeproof import observe
from routeproof.core.types import ProviderKind
from routeproof.observe import CallTrace, attempt_span

STATE = TraceState([("vendor", "v1")])


def _sdk(monkeypatch: pytest.MonkeyPatch, **kwargs: object) -> InMemorySpanExporter:
    """An SDK tracer provider (by default the gateway's: ParentBased(ALWAYS_OFF)) as the global one,
    its spans exported to memory."""
    exporter = InMemorySpanExporter()
    kwargs.setdefault("sampler", ParentBased(ALWAYS_OFF))
    provider = TracerProvider(**kwargs)  # type: ignore[arg-type]  # the keyword arguments of each case
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: provider)
    return exporter


def _attempt(call: CallTrace | None, outer: SpanContext | None, seed: int) -> tuple[str, dict[str, str], SpanContext]:
    """One attempt of ``call`` under the span ``outer`` (None: no current span), ids drawn from
    ``seed``: the context manager's type, the headers it injects, its span's context."""
    if call is not None:
        call.parent()  # the call's root, made before the draw (the SDK path makes it; it is never sent)
    token = otel_context.attach(Context() if outer is None else trace.set_span_in_context(NonRecordingSpan(outer)))
    try:
        random.seed(seed)  # the SDK's RandomIdGenerator draws from the random module
        manager = attempt_span(ProviderKind.OPENAI, "gpt-4o", 1, parent=call)
        headers: dict[str, str] = {}
        with manager as span:
            propagate.inject(headers)
        return type(manager).__name__, headers, span.span.get_span_context()
    finally:
        otel_context.detach(token)


def _remote(flags: int, state: TraceState | None = None) -> SpanContext:
    return SpanContext(
        trace_id=0x5678, span_id=0xEF01, is_remote=True, trace_flags=TraceFlags(flags), trace_state=state
    )


CASES = [
    pytest.param(CallTrace(0xABCDEF, Context()), None, id="the-calls-own-trace"),
    pytest.param(CallTrace(None, Context()), _remote(0x00), id="caller-unsampled"),
    pytest.param(CallTrace(None, Context()), _remote(0x02, STATE), id="caller-unsampled-random-with-state"),
    pytest.param(CallTrace(None, Context()), _remote(0xF6, STATE), id="caller-unsampled-unknown-flag-bits"),
    pytest.param(
        CallTrace(None, Context()),
        SpanContext(trace_id=0x99, span_id=0x77, is_remote=False, trace_flags=TraceFlags(0)),
        id="local-parent-unsampled",
    ),
    pytest.param(None, None, id="no-parent-at-all"),
    pytest.param(CallTrace(None, Context()), None, id="the-callers-span-gone-by-the-attempt"),
]


@pytest.mark.parametrize(("call", "outer"), CASES)
def test_a_dropped_attempt_span_has_the_sdks_ids_flags_and_state(
    monkeypatch: pytest.MonkeyPatch, call: CallTrace | None, outer: SpanContext | None
) -> None:
    """Under ParentBased(ALWAYS_OFF) and an unsampled or absent parent, the shortcut is taken and
    sends exactly what the SDK's own non-recording span sends; nothing is exported either way."""
    exporter = _sdk(monkeypatch)
    kind, headers, made = _attempt(call, outer, seed=25)
    assert kind == "_DroppedSpan"
    monkeypatch.setattr(observe, "_dropping", lambda tracer_provider: None)  # the SDK's own start_span
    sdk_kind, sdk_headers, sdk_made = _attempt(call, outer, seed=25)
    assert sdk_kind != "_DroppedSpan"
    assert headers == sdk_headers
    assert made == sdk_made  # trace id, span id, is_remote
    assert (made.trace_flags, made.trace_state) == (sdk_made.trace_flags, sdk_made.trace_state)
    assert made.span_id not in (0, 0xEF01, 0x77)
    assert not exporter.get_finished_spans()


def test_a_sampled_parent_still_gets_the_sdks_recorded_span(monkeypatch: pytest.MonkeyPatch) -> None:
    """An incoming traceparent with flag 01: the attempt is a recorded SDK span, the caller's child."""
    exporter = _sdk(monkeypatch)
    _, headers, made = _attempt(CallTrace(None, Context()), _remote(0x01), seed=1)
    (span,) = exporter.get_finished_spans()
    assert span.kind is SpanKind.CLIENT
    assert span.parent is not None
    assert span.parent.span_id == 0xEF01
    assert span.context is not None
    assert span.context.span_id == made.span_id
    assert headers["traceparent"] == f"00-{0x5678:032x}-{made.span_id:016x}-01"


class _Counting(Sampler):
    """Drops every span, counting the decisions it is asked for."""

    def __init__(self) -> None:
        self.asked = 0

    def should_sample(  # noqa: PLR0917  # the SDK's Sampler signature
        self,
        parent_context: Context | None,
        trace_id: int,
        name: str,
        kind: SpanKind | None = None,
        attributes: Attributes = None,
        links: Sequence[Link] | None = None,
        trace_state: TraceState | None = None,
    ) -> SamplingResult:
        self.asked += 1
        return SamplingResult(Decision.DROP)

    def get_description(self) -> str:
        return "Counting"


@pytest.mark.parametrize(
    ("sampler", "call"),
    [
        pytest.param(_Counting, CallTrace(0xABC, Context()), id="a-custom-sampler"),
        pytest.param(lambda: ParentBased(_Counting()), None, id="parent-based-on-a-custom-root"),
        pytest.param(
            lambda: ParentBased(ALWAYS_OFF, local_parent_not_sampled=_Counting()),
            CallTrace(0xABC, Context()),
            id="a-custom-local-delegate",
        ),
        pytest.param(
            lambda: ParentBased(ALWAYS_OFF, remote_parent_not_sampled=_Counting()),
            CallTrace(None, Context()),
            id="a-custom-remote-delegate",
        ),
    ],
)
def test_any_other_sampler_is_still_consulted(
    monkeypatch: pytest.MonkeyPatch, sampler: Callable[[], Sampler], call: CallTrace | None
) -> None:
    """A sampler that is not ParentBased(ALWAYS_OFF) with its default unsampled delegates decides the
    attempt's span itself: the custom sampler that applies to the parent is asked, once."""
    made = sampler()
    _sdk(monkeypatch, sampler=made)
    outer = _remote(0x00) if call is not None and call.trace_id is None else None
    kind, _, _ = _attempt(call, outer, seed=2)
    assert kind != "_DroppedSpan"
    asked = [s for s in (made, *vars(made).values()) if isinstance(s, _Counting)]
    assert [s.asked for s in asked] == [1]


def test_a_delegate_that_samples_an_unsampled_local_parent_records_the_span(monkeypatch: pytest.MonkeyPatch) -> None:
    """ParentBased(ALWAYS_OFF) whose local-parent-not-sampled delegate is ALWAYS_ON: the call's own
    trace (a local unsampled root) gets a recorded span, so no shortcut is taken."""
    exporter = _sdk(monkeypatch, sampler=ParentBased(ALWAYS_OFF, local_parent_not_sampled=ALWAYS_ON))
    kind, _, made = _attempt(CallTrace(0xABC, Context()), None, seed=3)
    assert kind != "_DroppedSpan"
    (span,) = exporter.get_finished_spans()
    assert span.context is not None
    assert span.context.span_id == made.span_id
    assert made.trace_id == 0xABC


class _Sequential(RandomIdGenerator):
    """A subclass of the SDK's generator: the router cannot know it draws like its base."""

    def __init__(self) -> None:
        self.next = 0

    def generate_span_id(self) -> int:
        self.next += 1
        return self.next


def test_another_id_generator_makes_the_sdk_draw_the_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    """With an id generator that is not exactly RandomIdGenerator the SDK makes the span, its ids the generator's."""
    _sdk(monkeypatch, id_generator=_Sequential())
    kind, _, made = _attempt(CallTrace(0xABC, Context()), None, seed=4)
    assert kind != "_DroppedSpan"
    assert made.span_id == 1


def test_with_the_sdks_span_metrics_on_a_dropped_span_is_still_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    """The SDK's self-metrics count every started span, dropped ones included: with them on, the SDK
    starts the attempt span, and its counter sees it."""
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    monkeypatch.setenv("OTEL_PYTHON_SDK_INTERNAL_METRICS_ENABLED", "true")
    reader = InMemoryMetricReader()
    _sdk(monkeypatch, meter_provider=MeterProvider(metric_readers=[reader]))
    kind, _, _ = _attempt(CallTrace(0xABC, Context()), None, seed=5)
    assert kind != "_DroppedSpan"
    data = reader.get_metrics_data()
    assert data is not None
    names = {m.name for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics}
    assert "otel.sdk.span.started" in names
