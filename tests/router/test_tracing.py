"""Traces without an OpenTelemetry SDK: every attempt sends a child span id of the caller's span, and
a call with no incoming context is one trace (respx and real-socket streams, virtual time for respx)."""

from __future__ import annotations

import asyncio
import re

import httpx
import pytest
import respx
from opentelemetry import propagate, trace
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, TraceState

from routeproof.core.types import ProviderKind
from routeproof.observe import CallTrace, attempt_span, call_trace_context, tracing_is_noop
from routeproof.router import Router
from tests.money.spans import recording_tracer
from tests.router.fixtures import B, bedrock_ok, bedrock_url, deadline, policy, providers, request, resolved_for, status
from tests.streaming.harness import collect, fleet, open_stream
from tests.streaming.harness import deadline as stream_deadline
from tests.streaming.harness import policy as stream_policy

pytestmark = pytest.mark.asyncio
TRACEPARENT = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-0[01]$")
STATEFUL = SpanContext(
    trace_id=0x5678, span_id=0xEF01, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED),
    trace_state=TraceState([("vendor", "v1")]),
)  # fmt: skip
INBOUND = SpanContext(trace_id=0x1234, span_id=0xABCD, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))


def _ids(route: respx.Route) -> list[tuple[str, str]]:
    out = []
    for call in route.calls:
        match = TRACEPARENT.match(call.request.headers["traceparent"])
        assert match is not None, call.request.headers["traceparent"]
        out.append((match.group(1), match.group(2)))
    return out


@pytest.mark.looptime(end=600)
async def test_each_attempt_is_a_child_of_the_callers_span_without_an_sdk(
    mock: respx.MockRouter, client: httpx.AsyncClient
) -> None:
    """No SDK configured: 3 attempts carry the inbound trace id and 3 distinct new span ids."""
    route = mock.post(bedrock_url()).mock(side_effect=[status(503), status(503), bedrock_ok()])
    tenant = policy(B)
    with trace.use_span(NonRecordingSpan(INBOUND)):
        await Router(providers(client)).call_provider(request(), resolved_for(tenant), deadline(), tenant)
    ids = _ids(route)
    assert [t for t, _ in ids] == [f"{INBOUND.trace_id:032x}"] * 3
    spans = [s for _, s in ids]
    assert len(set(spans)) == 3
    assert f"{INBOUND.span_id:016x}" not in spans


@pytest.mark.looptime(end=600)
async def test_a_call_without_incoming_context_is_one_trace(mock: respx.MockRouter, client: httpx.AsyncClient) -> None:
    """With no caller span, a call's attempts share one new trace id; the next call has another."""
    route = mock.post(bedrock_url()).mock(side_effect=[status(503), bedrock_ok(), bedrock_ok()])
    tenant = policy(B)
    router = Router(providers(client))
    await router.call_provider(request(), resolved_for(tenant), deadline(), tenant)
    await router.call_provider(request(), resolved_for(tenant), deadline(), tenant)
    (first, s1), (again, s2), (other, _) = _ids(route)
    assert first == again != other
    assert s1 != s2
    assert int(first, 16) != 0


async def test_streamed_attempts_send_child_span_ids_of_one_trace() -> None:
    """A stream that retries before its first token sends the caller's trace id with a new span id each time."""
    from routeproof.mock import Scripted

    async with asyncio.timeout(20), fleet() as f:
        f.anthropic.script(Scripted(status=503), Scripted())
        with trace.use_span(NonRecordingSpan(INBOUND)):
            await collect(open_stream(f, stream_policy(ProviderKind.ANTHROPIC), stream_deadline(10)))
        parents = [e.traceparent for e in f.anthropic.journal]
    matches = [TRACEPARENT.match(p or "") for p in parents]
    assert all(m is not None for m in matches), parents
    assert {m.group(1) for m in matches if m} == {f"{INBOUND.trace_id:032x}"}
    spans = [m.group(2) for m in matches if m]
    assert len(set(spans)) == 2
    assert f"{INBOUND.span_id:016x}" not in spans


@pytest.fixture
def no_sdk(monkeypatch: pytest.MonkeyPatch) -> None:
    """No SDK as the global tracer provider, whatever another test in this process installed."""
    monkeypatch.setattr(trace, "get_tracer_provider", trace.NoOpTracerProvider)
    assert tracing_is_noop()


def _sent(call: CallTrace) -> tuple[dict[str, str], SpanContext]:
    """The headers an attempt of ``call`` injects, and the attempt span's context."""
    headers: dict[str, str] = {}
    with attempt_span(ProviderKind.OPENAI, "m", 1, parent=call) as span:
        propagate.inject(headers)
    return headers, span.span.get_span_context()


@pytest.mark.usefixtures("no_sdk")
async def test_without_an_sdk_an_attempt_in_the_calls_trace_is_a_child_of_its_root() -> None:
    """No SDK, no caller span: the attempt sends what a child of the call's root context would (the
    root's trace id, flags and state, a fresh span id), though no root span is made for it."""
    call = call_trace_context()
    root = trace.get_current_span(call.parent()).get_span_context()
    headers, sent = _sent(call)
    assert (sent.trace_id, sent.trace_flags, sent.trace_state) == (root.trace_id, root.trace_flags, root.trace_state)
    assert sent.span_id not in (0, root.span_id)
    assert headers == {"traceparent": f"00-{root.trace_id:032x}-{sent.span_id:016x}-{root.trace_flags:02x}"}


@pytest.mark.usefixtures("no_sdk")
async def test_without_an_sdk_an_attempt_under_a_callers_span_keeps_its_flags_and_state() -> None:
    """No SDK, a caller span with flags and trace state: the attempt sends its trace id, flags and
    state with a fresh span id (the caller's span, current at the attempt, is the parent)."""
    with trace.use_span(NonRecordingSpan(STATEFUL)):
        call = call_trace_context()
        assert call.parent() is None
        headers, sent = _sent(call)
    assert sent.span_id not in (0, STATEFUL.span_id)
    assert headers == {
        "traceparent": f"00-{STATEFUL.trace_id:032x}-{sent.span_id:016x}-01",
        "tracestate": "vendor=v1",
    }


async def test_an_sdk_installed_after_the_call_began_records_its_attempt_in_the_calls_trace(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A call begun without an SDK, an SDK installed before its attempt: the attempt is a recorded
    span of the call's trace, a child of its root."""
    monkeypatch.setattr(trace, "get_tracer_provider", trace.NoOpTracerProvider)
    call = call_trace_context()
    exporter = recording_tracer(monkeypatch)
    headers, sent = _sent(call)
    (span,) = exporter.get_finished_spans()
    root = trace.get_current_span(call.parent()).get_span_context()
    assert span.parent is not None
    assert span.parent.span_id == root.span_id
    assert sent.trace_id == root.trace_id == call.trace_id
    assert headers["traceparent"] == f"00-{root.trace_id:032x}-{sent.span_id:016x}-01"
