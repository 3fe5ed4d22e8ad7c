"""Traces without an OpenTelemetry SDK: every attempt sends a child span id of the caller's span, and
a call with no incoming context is one trace (respx and real-socket streams, virtual time for respx)."""

from __future__ import annotations

import asyncio
import re

import httpx
import pytest
import respx
from opentelemetry import trace
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

from routeproof.core.types import ProviderKind
from routeproof.router import Router
from tests.router.fixtures import B, bedrock_ok, bedrock_url, deadline, policy, providers, request, resolved_for, status
from tests.streaming.harness import collect, fleet, open_stream
from tests.streaming.harness import deadline as stream_deadline
from tests.streaming.harness import policy as stream_policy

pytestmark = pytest.mark.asyncio
TRACEPARENT = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-0[01]$")
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
