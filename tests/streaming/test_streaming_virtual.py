"""Streaming deadline and first-token rules on virtual time (an in-process dripping provider)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from routeproof import AttemptStatus, Router, TenantPolicy, resolve
from routeproof.core.health import is_available
from routeproof.core.types import (
    AttemptFailure,
    AttemptFailureKind,
    ChatRequest,
    FinishReason,
    Message,
    MessageStop,
    ProviderKind,
    ProviderResponse,
    StreamError,
    StreamEvent,
    TextDelta,
    Usage,
)
from routeproof.errors import ProviderCallFailed
from routeproof.observe import RouterMetrics
from tests.money.readers import histogram_points

pytestmark = [pytest.mark.asyncio, pytest.mark.looptime(end=600)]


class DripProvider:
    """Streams ``words`` one every ``gap_s``; fails its first ``fail_first`` attempts before any event."""

    kind = ProviderKind.LOCAL
    name = "drip"
    base_url = None

    def __init__(self, words: int, gap_s: float, fail_first: int = 0, cut_after: int | None = None) -> None:
        self.words, self.gap_s, self.fail_first, self.cut_after = words, gap_s, fail_first, cut_after

    async def complete(self, request: ChatRequest, model: str, *, timeout_at: float) -> ProviderResponse:
        raise AssertionError("streaming only")

    async def stream(
        self, request: ChatRequest, model: str, *, timeout_at: float, idle_timeout_s: float | None = None
    ) -> AsyncIterator[StreamEvent]:
        if self.fail_first:
            self.fail_first -= 1
            raise ProviderCallFailed(AttemptFailure(kind=AttemptFailureKind.HTTP_STATUS, http_status=503))
        for index in range(self.words):
            await asyncio.sleep(self.gap_s)
            if index == self.cut_after:
                yield StreamError(message="stream interrupted: connection reset")
                return
            yield TextDelta(text=f"w{index} ")
        yield MessageStop(stop_reason=FinishReason.STOP, usage=Usage(prompt_tokens=3, completion_tokens=self.words))

    async def aclose(self) -> None:
        """Nothing to release."""


TENANT = TenantPolicy(primary={"a": (ProviderKind.LOCAL, "drip")})
REQUEST = ChatRequest(messages=(Message.user("go"),), alias="a")


async def test_deadline_mid_stream_ends_within_50_ms() -> None:
    """A stream still dripping at the caller's deadline ends with StreamError at the deadline exactly."""
    router = Router([DripProvider(words=100, gap_s=0.3)])
    resolved = resolve("a", TENANT)
    assert resolved is not None
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 1.0
    events = [e async for e in router.call_provider_streaming(REQUEST, resolved, deadline, TENANT)]
    assert isinstance(events[-1], StreamError)
    assert 0 <= loop.time() - deadline <= 0.05
    assert [e for e in events if isinstance(e, TextDelta)] == [TextDelta(text=f"w{i} ") for i in range(3)]


async def test_retry_before_first_token_then_time_to_first_token_recorded() -> None:
    """A 503 before the first token is retried after the 200 ms band; the TTFT of the winner is kept."""
    router = Router([DripProvider(words=2, gap_s=0.5, fail_first=1)])
    resolved = resolve("a", TENANT)
    assert resolved is not None
    stream = router.call_provider_streaming(REQUEST, resolved, asyncio.get_running_loop().time() + 10, TENANT)
    events = [e async for e in stream]
    assert isinstance(events[-1], MessageStop)
    assert [a.status for a in stream.attempts] == [AttemptStatus.RETRIED_AFTER_5XX, AttemptStatus.SUCCEEDED]
    assert stream.first_token_ms == 500
    assert stream.attempts[-1].first_token_ms == 500


async def test_interrupted_streams_cool_the_provider_but_deadline_cuts_do_not() -> None:
    """Two streams the provider drops mid-answer start its cooldown; two cut by the caller's deadline don't."""
    loop = asyncio.get_running_loop()
    resolved = resolve("a", TENANT)
    assert resolved is not None
    dropped = Router([DripProvider(words=5, gap_s=0.1, cut_after=2)])
    for _ in range(2):
        events = [e async for e in dropped.call_provider_streaming(REQUEST, resolved, loop.time() + 10, TENANT)]
        assert isinstance(events[-1], StreamError)
    assert not is_available(dropped.health, ProviderKind.LOCAL, round(loop.time() * 1000))
    slow = Router([DripProvider(words=100, gap_s=0.3)])
    for _ in range(2):
        events = [e async for e in slow.call_provider_streaming(REQUEST, resolved, loop.time() + 1, TENANT)]
        assert isinstance(events[-1], StreamError)
    assert is_available(slow.health, ProviderKind.LOCAL, round(loop.time() * 1000))


@pytest.mark.parametrize(("cut_after", "error_type"), [(None, None), (2, "interrupted")])
async def test_a_streamed_operation_lasts_until_its_stream_ends(cut_after: int | None, error_type: str | None) -> None:
    """Four words half a second apart: ``gen_ai.client.operation.duration`` observes the whole stream
    (2 s; cut after the second word, 1.5 s with ``error.type``), ``time_to_first_chunk`` the first
    0.5 s; one observation each (the OpenTelemetry GenAI conventions; it was the time to first event)."""
    reader = InMemoryMetricReader()
    metrics = RouterMetrics(MeterProvider(metric_readers=[reader]).get_meter("streams"))
    router = Router([DripProvider(words=4, gap_s=0.5, cut_after=cut_after)], metrics=metrics)
    resolved = resolve("a", TENANT)
    assert resolved is not None
    deadline = asyncio.get_running_loop().time() + 20
    _ = [e async for e in router.call_provider_streaming(REQUEST, resolved, deadline, TENANT)]
    [duration] = histogram_points(reader, "gen_ai.client.operation.duration")
    assert duration.count == 1
    assert duration.sum == pytest.approx(2.0 if cut_after is None else 1.5, abs=0.002)
    assert dict(duration.attributes or {}).get("error.type") == error_type
    [first] = histogram_points(reader, "gen_ai.client.operation.time_to_first_chunk")
    assert first.count == 1
    assert first.sum == pytest.approx(0.5, abs=0.002)
