"""Observability: the six OpenTelemetry metrics of seed 000 §1.14, the GenAI semantic conventions'
client metrics and attempt-span attributes, sev-1/sev-2 logs.

Metric names, label sets and bucket boundaries are defined here once. Provider labels come only
from ``ProviderKind.as_metric_label()`` — or, for a call that reached no provider, the documented
:data:`NO_PROVIDER_LABEL` — so the set is closed (:data:`PROVIDER_LABELS`); no label ever carries a
key, a prompt or a repr. Histograms advise their boundaries (``explicit_bucket_boundaries_advisory``):
the seed's latency buckets, one bucket per attempt count 1..16, the conventions' token and duration
buckets.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass

from opentelemetry import context as otel_context
from opentelemetry import metrics, trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace import Tracer as SdkTracer
from opentelemetry.sdk.trace import TracerProvider as SdkTracerProvider
from opentelemetry.sdk.trace.id_generator import RandomIdGenerator
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ParentBased
from opentelemetry.trace import NonRecordingSpan, SpanContext, Status, StatusCode, TraceFlags

from routeproof.clock import s_of_ms
from routeproof.core.types import AttemptRecord, AttemptStatus, ProviderId, ProviderKind, Usage

__all__ = [
    "ADMISSION_METRIC_NAMES",
    "ATTEMPTS_BUCKETS",
    "CALL_OUTCOMES",
    "GENAI_DURATION_BUCKETS_S",
    "GENAI_METRIC_NAMES",
    "GENAI_TOKEN_BUCKETS",
    "LATENCY_BUCKETS_MS",
    "METRIC_NAMES",
    "NO_PROVIDER_LABEL",
    "PROVIDER_LABELS",
    "RETRY_REASONS",
    "AttemptSpan",
    "CallTrace",
    "RouterMetrics",
    "attempt_span",
    "call_trace_context",
    "genai_provider_name",
    "genai_usage_attributes",
    "log_auth_failure",
    "log_budget_override",
    "log_cap_exceeded",
    "log_model_not_found",
    "log_turn_warning",
    "logger",
    "tracing_is_noop",
]

logger = logging.getLogger("routeproof")


@functools.lru_cache(maxsize=8)
def _tracer(provider: trace.TracerProvider) -> trace.Tracer:
    """One tracer per provider: an SDK ``get_tracer`` per attempt cost about as much as the span."""
    return provider.get_tracer("routeproof")


METRIC_NAMES = (
    "ai_router_calls_total",
    "ai_router_retries_total",
    "ai_router_failovers_total",
    "ai_router_latency_ms",
    "ai_router_deadline_exceeded_total",
    "ai_router_attempts_per_call",
)
ADMISSION_METRIC_NAMES = ("ai_router_admission_queue_depth", "ai_router_admission_queued_ms")
"""Admission control (``admission.py``): attempts waiting for a local in-flight slot now, by
``scope`` (a provider label, or ``router`` for the router-wide limit), and how long each attempt that
queued waited, by provider and ``outcome`` (``admitted`` or ``timed_out``)."""
ADMISSION_OUTCOMES = ("admitted", "timed_out")
CALL_OUTCOMES = ("succeeded", "terminal_4xx", "auth_error", "all_failed")
"""The closed outcome label set of ``ai_router_calls_total``."""
RETRY_REASONS = ("5xx", "429", "timeout", "conn_reset")
"""The closed reason label set of ``ai_router_retries_total``."""
NO_PROVIDER_LABEL = "no_provider"
"""The ``provider`` label of ``ai_router_calls_total`` for a call that reached no provider (every
chain entry skipped, or the deadline gone before the first attempt): a member of the closed set,
never a kind's label, so it cannot be mistaken for one."""
PROVIDER_LABELS: tuple[str, ...] = (*(kind.as_metric_label() for kind in ProviderKind), NO_PROVIDER_LABEL)
"""The closed ``provider`` (and ``from``/``to``) label set."""
LATENCY_BUCKETS_MS: tuple[int, ...] = (50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000)
"""``ai_router_latency_ms``'s upper bounds: seed 000's list, through the 30 s failover budget;
``+Inf`` holds anything past it (the SDK default stopped at 10 s)."""
ATTEMPTS_BUCKETS: tuple[int, ...] = tuple(range(1, 17))
"""``ai_router_attempts_per_call``'s upper bounds: every attempt count 1..16 (the cap) its own
bucket; ``+Inf`` stays empty unless the cap is broken."""
GENAI_METRIC_NAMES = (
    "gen_ai.client.token.usage",
    "gen_ai.client.operation.duration",
    "gen_ai.client.operation.time_to_first_chunk",
)
"""The OpenTelemetry GenAI semantic conventions' client metrics: tokens and duration per attempt (a
streamed attempt's duration runs to the stream's end), time to the first chunk per streamed attempt."""
GENAI_TOKEN_BUCKETS: tuple[int, ...] = tuple(4**i for i in range(14))
"""``gen_ai.client.token.usage``'s advised boundaries: 1, 4, 16, ... 67108864 (powers of 4)."""
GENAI_DURATION_BUCKETS_S: tuple[float, ...] = (
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
)  # fmt: skip
"""``gen_ai.client.operation.duration``'s advised boundaries (seconds, doubling from 10 ms)."""
_GENAI_PROVIDER_NAMES = {
    ProviderKind.BEDROCK.as_metric_label(): "aws.bedrock",
    ProviderKind.VERTEX.as_metric_label(): "gcp.vertex_ai",
}
_OPERATION = "chat"


def genai_provider_name(provider: ProviderId) -> str:
    """``gen_ai.provider.name``: the conventions' well-known value (``openai``, ``anthropic``,
    ``aws.bedrock``, ``gcp.vertex_ai``) or, for the others, the kind's metric label."""
    return _genai_name(provider.as_metric_label())


def _genai_name(label: str) -> str:
    return _GENAI_PROVIDER_NAMES.get(label, label)


def _genai_attributes(provider: ProviderId, model: str) -> dict[str, str]:
    return dict(_genai_items(provider.as_metric_label(), model))


@functools.lru_cache(maxsize=256)
def _genai_items(label: str, model: str) -> tuple[tuple[str, str], ...]:
    """:func:`_genai_attributes` of a provider labelled ``label``, as items: built once per label and
    model (each metric takes a new dict of them), not per attempt (issue 25). Keyed by the label, not
    the provider: named providers compare by name, whatever their kind."""
    return (
        ("gen_ai.operation.name", _OPERATION),
        ("gen_ai.provider.name", _genai_name(label)),
        ("gen_ai.request.model", model),
    )


@functools.lru_cache(maxsize=256)
def _token_items(label: str, model: str) -> tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]:
    """The attributes of :meth:`RouterMetrics.usage`'s two observations (input, then output tokens) of a
    provider labelled ``label``, as items: built once per label and model, as :func:`_genai_items`."""
    base = _genai_items(label, model)
    return (*base, ("gen_ai.token.type", "input")), (*base, ("gen_ai.token.type", "output"))


def _input_tokens(usage: Usage) -> int:
    return usage.prompt_tokens + usage.cached_input_tokens + usage.cache_creation_tokens


def genai_usage_attributes(usage: Usage, response_model: str) -> dict[str, str | int]:
    """An attempt span's response attributes: ``gen_ai.response.model`` and the usage the provider
    reported. ``input_tokens`` counts every prompt token, cache reads and writes included (the
    conventions' definition); the cache parts are also given apart."""
    return {
        "gen_ai.response.model": response_model,
        "gen_ai.usage.input_tokens": _input_tokens(usage),
        "gen_ai.usage.output_tokens": usage.completion_tokens,
        "gen_ai.usage.cache_read.input_tokens": usage.cached_input_tokens,
        "gen_ai.usage.cache_creation.input_tokens": usage.cache_creation_tokens,
        "gen_ai.usage.reasoning.output_tokens": usage.reasoning_tokens,
    }


_RETRIED = {
    AttemptStatus.RETRIED_AFTER_5XX,
    AttemptStatus.RETRIED_AFTER_429,
    AttemptStatus.RETRIED_AFTER_TIMEOUT,
    AttemptStatus.RETRIED_AFTER_CONN_RESET,
}


class RouterMetrics:
    """The router's instruments, created once per meter (the global one unless given)."""

    def __init__(self, meter: metrics.Meter | None = None) -> None:
        meter = meter or metrics.get_meter("routeproof")
        self.calls = meter.create_counter(
            "ai_router_calls_total", description="Router calls by provider, model and final outcome"
        )
        self.retries = meter.create_counter("ai_router_retries_total", description="Retries by provider and reason")
        self.failovers = meter.create_counter(
            "ai_router_failovers_total", description="Switches from one provider to the next"
        )
        # No ``unit=``: the names already end in _ms (seed 000), and the Prometheus exporter would
        # append the unit again (ai_router_latency_ms_milliseconds).
        self.latency = meter.create_histogram(
            "ai_router_latency_ms",
            description="Per-attempt latency in milliseconds",
            explicit_bucket_boundaries_advisory=LATENCY_BUCKETS_MS,
        )
        self.deadline_exceeded = meter.create_counter(
            "ai_router_deadline_exceeded_total", description="Calls that hit the caller's deadline"
        )
        self.attempts_per_call = meter.create_histogram(
            "ai_router_attempts_per_call",
            description="Attempts made by one call",
            explicit_bucket_boundaries_advisory=ATTEMPTS_BUCKETS,
        )
        self.token_usage = meter.create_histogram(
            "gen_ai.client.token.usage",
            unit="{token}",
            description="Number of input and output tokens used.",
            explicit_bucket_boundaries_advisory=GENAI_TOKEN_BUCKETS,
        )
        self.operation_duration = meter.create_histogram(
            "gen_ai.client.operation.duration",
            unit="s",
            description="GenAI operation duration.",
            explicit_bucket_boundaries_advisory=GENAI_DURATION_BUCKETS_S,
        )
        self.time_to_first_chunk = meter.create_histogram(
            "gen_ai.client.operation.time_to_first_chunk",
            unit="s",
            description="Time to receive the first chunk, measured from when the client issues the generation "
            "request to when the first chunk is received in the response stream.",
            explicit_bucket_boundaries_advisory=GENAI_DURATION_BUCKETS_S,
        )
        self.budget_warnings = meter.create_counter(
            "ai_router_budget_turn_warnings_total",
            description="Attempts whose worst-case cost exceeded the per-turn warning threshold",
        )
        self.first_token = meter.create_histogram(
            "ai_router_first_token_ms",
            description="Time to first token per streaming attempt, in milliseconds",
            explicit_bucket_boundaries_advisory=LATENCY_BUCKETS_MS,  # the SDK's default stops at 10 s
        )
        self.queue_depth = meter.create_up_down_counter(
            "ai_router_admission_queue_depth",
            description="Attempts waiting for a local in-flight slot now, by scope (provider or router)",
        )
        self.queued = meter.create_histogram(
            "ai_router_admission_queued_ms",
            description="Time an attempt that queued waited for a local in-flight slot, in milliseconds",
        )

    def queue_changed(self, scope: str, delta: int) -> None:
        """``delta`` attempts joined (+) or left (-) the admission queue of ``scope``."""
        self.queue_depth.add(delta, {"scope": scope})

    def queued_for(self, provider: ProviderId, queued_ms: int, outcome: str) -> None:
        """An attempt that queued for a slot was admitted or timed out after ``queued_ms``."""
        assert outcome in ADMISSION_OUTCOMES, outcome
        self.queued.record(queued_ms, {"provider": provider.as_metric_label(), "outcome": outcome})

    def attempt(self, record: AttemptRecord) -> None:
        """One attempt finished: its latency, and a retry when it was retried."""
        provider = record.provider.as_metric_label()
        self.latency.record(record.elapsed_ms, {"provider": provider, "model": record.model})
        if record.retry_reason is not None and record.status in _RETRIED:  # no status hashed for a success
            self.retries.add(1, {"provider": provider, "reason": record.retry_reason.value})
        genai = dict(_genai_items(provider, record.model))  # _genai_attributes, its label read once
        if record.first_token_ms is not None:
            self.first_token.record(record.first_token_ms, {"provider": provider, "model": record.model})
            self.time_to_first_chunk.record(s_of_ms(record.first_token_ms), genai)
            if record.status is AttemptStatus.SUCCEEDED:
                return  # a committed stream: its operation lasts until it ends (stream_ended)
        if record.status is not AttemptStatus.SUCCEEDED:
            genai["error.type"] = record.status.value
        self.operation_duration.record(s_of_ms(record.elapsed_ms), genai)

    def stream_ended(self, provider: ProviderId, model: str, elapsed_ms: int, error_type: str | None) -> None:
        """A committed stream ended ``elapsed_ms`` after its attempt was sent: the operation's whole
        duration (``error.type`` the way it ended, when not completed)."""
        genai = _genai_attributes(provider, model)
        if error_type is not None:
            genai["error.type"] = error_type
        self.operation_duration.record(s_of_ms(max(0, elapsed_ms)), genai)

    def failover(self, from_kind: ProviderId, to_kind: ProviderId) -> None:
        """The call moved from one provider to the next."""
        self.failovers.add(1, {"from": from_kind.as_metric_label(), "to": to_kind.as_metric_label()})

    def call(self, provider: ProviderId | None, model: str, outcome: str, attempts: int) -> None:
        """The call's one terminal decision, and how many attempts it took."""
        assert outcome in CALL_OUTCOMES, outcome
        label = provider.as_metric_label() if provider is not None else NO_PROVIDER_LABEL
        self.calls.add(1, {"provider": label, "model": model, "outcome": outcome})
        self.attempts_per_call.record(attempts, {"final_outcome": outcome})

    def usage(self, provider: ProviderId, model: str, usage: Usage) -> None:
        """The usage a provider reported for one attempt: its input and output tokens, each one
        ``gen_ai.client.token.usage`` observation (the conventions' ``gen_ai.token.type``)."""
        input_items, output_items = _token_items(provider.as_metric_label(), model)  # a new dict per observation
        self.token_usage.record(_input_tokens(usage), dict(input_items))
        self.token_usage.record(usage.completion_tokens, dict(output_items))

    def turn_warning(self, provider: ProviderId) -> None:
        """An attempt's worst case exceeded the per-turn warning threshold (sent anyway)."""
        self.budget_warnings.add(1, {"provider": provider.as_metric_label()})

    def deadline(self) -> None:
        """The caller's deadline elapsed."""
        self.deadline_exceeded.add(1)


_IDS = RandomIdGenerator()


class CallTrace:
    """The trace a call's attempts belong to (:func:`call_trace_context`): the caller's (``trace_id``
    None: each attempt is a child of the span current when it starts), or a new one made once for the
    whole call, so every attempt shares one trace id.

    A new trace's root context (:meth:`parent`) is built only when a span is made through an SDK:
    without one, an attempt's non-recording child needs the trace id alone (issue 25).
    """

    __slots__ = ("_base", "_parent", "trace_id")

    def __init__(self, trace_id: int | None, base: Context) -> None:
        self.trace_id = trace_id
        self._base = base  # the context current when the call began: the root's, as before
        self._parent: Context | None = None

    def parent(self) -> Context | None:
        """The attempts' parent context: None (the current one), or the call's own root span's."""
        if self.trace_id is None:
            return None
        if self._parent is None:
            root = SpanContext(
                trace_id=self.trace_id, span_id=_IDS.generate_span_id(), is_remote=False, trace_flags=_NO_FLAGS
            )
            self._parent = trace.set_span_in_context(NonRecordingSpan(root), self._base)
        return self._parent


_NO_FLAGS = TraceFlags()


def call_trace_context() -> CallTrace:
    """The trace a call's attempts belong to: the caller's when it has a valid span, else a new one."""
    base = otel_context.get_current()
    if trace.get_current_span(base).get_span_context().is_valid:
        return CallTrace(None, base)
    return CallTrace(_IDS.generate_trace_id(), base)


def _child_of(outer: SpanContext) -> NonRecordingSpan:
    """A non-recording child of ``outer`` with a fresh span id (a fresh trace when ``outer`` is invalid)."""
    return NonRecordingSpan(
        SpanContext(
            trace_id=outer.trace_id if outer.is_valid else _IDS.generate_trace_id(),
            span_id=_IDS.generate_span_id(),
            is_remote=False,
            trace_flags=outer.trace_flags,
            trace_state=outer.trace_state,
        )
    )


class AttemptSpan:
    """One attempt's span. It ends when the attempt does, unless the attempt is a stream that
    committed at its first event: that one is handed on (:meth:`hand_on`) to the relay, which ends
    it when the stream ends, with the usage the provider reported at the end (:meth:`end`). So a
    streamed attempt's span carries the usage the ledger booked for it, as a plain one's does."""

    __slots__ = ("ended", "handed_on", "span")

    def __init__(self, span: trace.Span) -> None:
        self.span = span
        self.handed_on = False
        self.ended = False

    def answered(self, usage: Usage, response_model: str) -> None:
        """The provider's answer: ``gen_ai.response.model`` and the usage it reported."""
        if self.span.is_recording():  # a no-op span drops attributes: not built for it
            self.span.set_attributes(genai_usage_attributes(usage, response_model))

    def hand_on(self) -> AttemptSpan:
        """The stream committed: the span outlives its ``with`` block, and :meth:`end` ends it."""
        self.handed_on = True
        return self

    def end(self, *, usage: Usage | None = None, response_model: str = "", error: str | None = None) -> None:
        """End a handed-on span: the stream's final usage (None: none was reported), and ``error``
        (the span's ERROR status) when the stream was cut. Only the first call counts."""
        if self.ended:
            return
        self.ended = True
        if usage is not None:
            self.answered(usage, response_model)
        if error is not None and self.span.is_recording():
            self.span.set_status(Status(StatusCode.ERROR, error))
        self.span.end()


class _NoSdkAttemptSpan(AttemptSpan):
    """An attempt span without an SDK: non-recording, so the answer's attributes are not built."""

    __slots__ = ()

    def answered(self, usage: Usage, response_model: str) -> None:
        """Nothing to record: the span drops attributes."""


class _ChildSpan(_NoSdkAttemptSpan):
    """The attempt span when no SDK is installed: a non-recording child of the parent with a fresh
    span id, current while the attempt runs (what the no-op tracer's branch made, without the tracer).
    In the call's own trace its ids are known (no root span is made); in the caller's, the span
    current when the attempt starts is the parent. The block is its own attempt span (its ``span``
    made on entry): one object per attempt, not a block and a span (issue 25)."""

    __slots__ = ("_call", "_token")

    def __init__(self, call: CallTrace | None) -> None:
        self._call = call
        self._token: object = None
        self.handed_on = False  # AttemptSpan's fields; its span is made on entry
        self.ended = False

    def __enter__(self) -> AttemptSpan:
        trace_id = None if self._call is None else self._call.trace_id
        if trace_id is None:
            child = _child_of(trace.get_current_span().get_span_context())
        else:  # the call's root: flags 0, empty trace state, the call's trace id
            child = NonRecordingSpan(
                SpanContext(trace_id=trace_id, span_id=_IDS.generate_span_id(), is_remote=False, trace_flags=_NO_FLAGS)
            )
        self.span = child
        self._token = otel_context.attach(trace.set_span_in_context(child))  # as trace.use_span does
        return self

    def __exit__(self, *exc: object) -> None:
        otel_context.detach(self._token)  # type: ignore[arg-type]  # the token attach returned


class _DroppedSpan(_ChildSpan):
    """The attempt span under an SDK whose sampler drops it (:func:`_dropping`): the very span the SDK
    would make, without the SDK's ``start_span``. ``Tracer.start_span`` then hands back a
    non-recording span and calls no span processor; this makes that span's context the way it does:
    the parent's trace id (a new one, from the tracer's id generator, when the parent is invalid), a
    new span id from the same generator (in the same order), flags 00 but for the parent's
    random-trace-id bit (the generator's, for a new trace), and the parent's trace state (none for a
    new trace). A sampled parent is not dropped: the SDK makes the span (:func:`_sdk_attempt_span`)."""

    __slots__ = ("_attempt_num", "_dropping", "_model", "_provider", "_real")

    def __init__(
        self, call: CallTrace | None, dropping: _Dropping, provider: ProviderId, model: str, attempt_num: int
    ) -> None:
        super().__init__(call)
        self._dropping = dropping
        self._provider = provider
        self._model = model
        self._attempt_num = attempt_num
        self._real: AbstractContextManager[AttemptSpan] | None = None

    def __enter__(self) -> AttemptSpan:
        ids = self._dropping.ids
        trace_id = None if self._call is None else self._call.trace_id
        if trace_id is not None:  # the call's root: a valid local parent, not sampled, flags 0, no state
            made = SpanContext(
                trace_id=trace_id, span_id=ids.generate_span_id(), is_remote=False, trace_flags=_NO_FLAGS
            )
        else:
            outer = trace.get_current_span().get_span_context()
            if not outer.is_valid:  # a root span: a new trace (ParentBased's root sampler drops it)
                trace_id = ids.generate_trace_id()
                made = SpanContext(
                    trace_id=trace_id,
                    span_id=ids.generate_span_id(),
                    is_remote=False,
                    trace_flags=self._dropping.root_flags,
                )
            elif outer.trace_flags.sampled:  # the parent-sampled delegate decides: the SDK's own span
                self._real = _sdk_attempt_span(
                    self._dropping.tracer_provider, self._provider, self._model, self._attempt_num, None
                )
                return self._real.__enter__()
            else:
                made = SpanContext(
                    trace_id=outer.trace_id,
                    span_id=ids.generate_span_id(),
                    is_remote=False,
                    trace_flags=TraceFlags(outer.trace_flags & _RANDOM_TRACE_ID),
                    trace_state=outer.trace_state,
                )
        self.span = child = NonRecordingSpan(made)
        self._token = otel_context.attach(trace.set_span_in_context(child))  # as trace.use_span does
        return self

    def __exit__(self, *exc: object) -> None:
        if self._real is not None:
            self._real.__exit__(*exc)  # type: ignore[arg-type]  # the exc_info __exit__ was given
            return
        otel_context.detach(self._token)  # type: ignore[arg-type]  # the token attach returned


_RANDOM_TRACE_ID = getattr(TraceFlags, "RANDOM_TRACE_ID", 0)  # the W3C level-2 flag (API >= 1.40); 0 before


@dataclass(frozen=True, slots=True, kw_only=True)
class _Dropping:
    """An SDK tracer provider whose tracer drops every span whose parent is unsampled or absent."""

    tracer_provider: trace.TracerProvider
    tracer: SdkTracer
    ids: RandomIdGenerator  # the tracer's own generator (the SDK draws the ids from it)
    root_flags: TraceFlags  # a new trace's flags: the random-trace-id bit when the generator says so


def _not_sampled_is_dropped(sampler: object) -> bool:
    """Whether ``sampler`` is the SDK's ParentBased whose root and both parent-not-sampled delegates
    are ALWAYS_OFF (``ParentBased(ALWAYS_OFF)``'s defaults): an unsampled or absent parent's span is
    dropped, with the parent's trace state (StaticSampler)."""
    return (
        type(sampler) is ParentBased
        and getattr(sampler, "_root", None) is ALWAYS_OFF
        and getattr(sampler, "_remote_parent_not_sampled", None) is ALWAYS_OFF
        and getattr(sampler, "_local_parent_not_sampled", None) is ALWAYS_OFF
    )


@functools.lru_cache(maxsize=8)
def _dropping(tracer_provider: trace.TracerProvider) -> _Dropping | None:
    """How ``tracer_provider`` drops an unsampled attempt span, if it certainly does: decided once per
    provider object (as its tracer is made once, :func:`_tracer`). Only the SDK's own TracerProvider
    and Tracer, a ``ParentBased(ALWAYS_OFF)`` sampler (:func:`_not_sampled_is_dropped`), the SDK's
    RandomIdGenerator and no SDK self-metrics (which would count the started span) qualify; anything
    else gets the SDK's own span."""
    if type(tracer_provider) is not SdkTracerProvider:
        return None
    tracer = _tracer(tracer_provider)
    if type(tracer) is not SdkTracer or not _not_sampled_is_dropped(tracer.sampler):
        return None
    ids = tracer.id_generator
    if type(ids) is not RandomIdGenerator or not _no_span_metrics(tracer):
        return None
    root_flags = TraceFlags(_RANDOM_TRACE_ID if getattr(ids, "is_trace_id_random", bool)() else 0)
    return _Dropping(tracer_provider=tracer_provider, tracer=tracer, ids=ids, root_flags=root_flags)


def _no_span_metrics(tracer: SdkTracer) -> bool:
    """Whether ``tracer`` records no metric per started span (the SDK's self-metrics are off: the default)."""
    metrics_of = getattr(tracer, "_tracer_metrics", None)
    return metrics_of is None or type(metrics_of).__name__ == "NoOpTracerMetrics"


def _enabled(tracer: SdkTracer) -> bool:
    """Whether ``tracer`` makes spans at all (a tracer configurator may disable it; SDK >= 1.34)."""
    is_enabled = getattr(tracer, "_is_enabled", None)
    return is_enabled is None or bool(is_enabled())


# The API's own providers: no SDK installed as the global one, so every span would be a no-op.
_NO_SDK = (trace.ProxyTracerProvider, trace.NoOpTracerProvider)


def tracing_is_noop() -> bool:
    """Whether no OpenTelemetry SDK is the global tracer provider now (every span would be a no-op)."""
    return type(trace.get_tracer_provider()) in _NO_SDK


def attempt_span(
    provider: ProviderId, model: str, attempt_num: int, *, parent: CallTrace | None = None
) -> AbstractContextManager[AttemptSpan]:
    """A CLIENT span around one attempt, current while it runs: the provider injects its context, so
    the outbound ``traceparent`` carries the call's trace id and a new span id of its own.

    ``parent`` is the call's :func:`call_trace_context` (None: the current context). With an
    OpenTelemetry SDK the span is a real child span. Without one the API's no-op tracer would hand the
    parent's ids on unchanged; a non-recording child with a fresh span id is made instead (AC-17),
    directly: the no-op tracer's span and its attributes were about a tenth of the router's own CPU.
    Likewise with an SDK whose sampler certainly drops the span (:func:`_dropping`, the gateway's
    ``ParentBased(ALWAYS_OFF)``) under an unsampled or absent parent: the non-recording span the SDK
    would make is made directly (:class:`_DroppedSpan`); a sampled parent gets the SDK's span.
    The span ends with the block unless it was handed on (:meth:`AttemptSpan.hand_on`).
    """
    if tracing_is_noop():  # checked per attempt: an SDK installed later is used at once
        return _ChildSpan(parent)
    tracer_provider = trace.get_tracer_provider()
    dropping = _dropping(tracer_provider)
    if dropping is not None and _enabled(dropping.tracer):  # unsampled, the SDK's span would be a no-op
        return _DroppedSpan(parent, dropping, provider, model, attempt_num)
    context = None if parent is None else parent.parent()
    return _sdk_attempt_span(tracer_provider, provider, model, attempt_num, context)


@contextmanager
def _sdk_attempt_span(
    tracer_provider: trace.TracerProvider, provider: ProviderId, model: str, attempt_num: int, parent: Context | None
) -> Iterator[AttemptSpan]:
    outer = trace.get_current_span(parent).get_span_context()
    attributes: dict[str, str | int] = {
        **_genai_attributes(provider, model),
        "llm.provider": provider.as_metric_label(),
        "llm.model": model,
        "llm.attempt": attempt_num,
    }
    span = _tracer(tracer_provider).start_span(
        f"{_OPERATION} {model}", context=parent, kind=trace.SpanKind.CLIENT, attributes=attributes
    )
    made = span.get_span_context()
    if not (made.is_valid and made.span_id != outer.span_id):  # a provider that hands the parent's ids on
        with trace.use_span(span, end_on_exit=True), trace.use_span(_child_of(outer), end_on_exit=False) as child:
            yield AttemptSpan(child)
        return
    attempt = AttemptSpan(span)
    try:
        with trace.use_span(span, end_on_exit=False):  # records an escaping exception, as start_as_current_span
            yield attempt
    finally:
        if not attempt.handed_on:
            span.end()


def log_auth_failure(provider: ProviderId, status: int | None) -> None:
    """401/403: the operator pager must trigger (sev-1). No key is logged."""
    logger.error(
        "router_auth_error_terminal provider=%s status=%s",
        provider.as_metric_label(),
        status,
        extra={"severity": "sev-1", "provider": provider.as_metric_label(), "http_status": status},
    )


def log_model_not_found(provider: ProviderId, model: str) -> None:
    """404: the alias resolver and the provider's catalogue disagree (sev-2)."""
    logger.warning(
        "router_model_not_found provider=%s model=%s",
        provider.as_metric_label(),
        model,
        extra={"severity": "sev-2", "provider": provider.as_metric_label(), "model": model},
    )


def log_cap_exceeded(attempts: int) -> None:
    """The attempts cap caught a failover-loop bug (sev-2)."""
    logger.error("router_attempts_cap_exceeded attempts=%s", attempts, extra={"severity": "sev-2"})


def log_turn_warning(provider: ProviderId, model: str, worst_case_usd: str) -> None:
    """Seed 003's per-turn scope: the worst case of this attempt exceeds the per-turn threshold."""
    logger.warning(
        "router_budget_turn_warning provider=%s model=%s worst_case=%s",
        provider.as_metric_label(),
        model,
        worst_case_usd,
        extra={"provider": provider.as_metric_label(), "model": model, "worst_case_usd": worst_case_usd},
    )


def log_budget_override(old: object, new: object, reason: str) -> None:
    """The explicit budget override seed 003's monthly hard stop requires: always logged."""
    logger.warning("router_budget_override reason=%r old=%r new=%r", reason, old, new, extra={"reason": reason})
