"""Admission control (issue 13): in-flight limits queue within the caller's deadline, and time
queued for a local slot is never charged to the provider (virtual time via looptime)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from routeproof import DeadlineExceeded, LimitOptions
from routeproof.admission import Admission, AdmissionTimeout
from routeproof.clock import loop_now_ms
from routeproof.core import kernel
from routeproof.core.kernel import CallPlan, CallProvider, KernelState
from routeproof.core.types import (
    AttemptStatus,
    ChainEntry,
    ChatRequest,
    Choice,
    FinishReason,
    MessageStop,
    ProviderKind,
    ProviderResponse,
    StreamEvent,
    TextDelta,
    Usage,
)
from routeproof.errors import ConfigError
from routeproof.observe import RouterMetrics
from routeproof.router import Router
from tests.router.fixtures import deadline, policy, request, resolved_for

pytestmark = [pytest.mark.asyncio, pytest.mark.looptime(end=3600)]

OPENAI = ProviderKind.OPENAI


class SlowProvider:
    """Answers every call after ``seconds`` and counts how many calls it holds at once."""

    def __init__(self, seconds: float, kind: ProviderKind = OPENAI) -> None:
        self.seconds = seconds
        self.kind = kind
        self.name = kind.value
        self.base_url: str | None = "https://api.example.test/v1"
        self.in_flight = 0
        self.peak = 0
        self.calls = 0

    async def complete(self, request: ChatRequest, model: str, *, timeout_at: float) -> ProviderResponse:
        self.calls += 1
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            await asyncio.sleep(self.seconds)
        finally:
            self.in_flight -= 1
        return ProviderResponse(
            id="r", usage=Usage(prompt_tokens=1, completion_tokens=1), choices=(Choice(content="4"),),
            finish_reason=FinishReason.STOP,
        )  # fmt: skip

    async def stream(
        self, request: ChatRequest, model: str, *, timeout_at: float, idle_timeout_s: float | None = None
    ) -> AsyncIterator[StreamEvent]:
        self.calls += 1
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            yield TextDelta(text="4")
            await asyncio.sleep(self.seconds)
            yield MessageStop(stop_reason=FinishReason.STOP, usage=Usage(prompt_tokens=1, completion_tokens=1))
        finally:
            self.in_flight -= 1

    async def aclose(self) -> None:
        return None


async def _calls(router: Router, n: int, within_s: float) -> list[ProviderResponse | BaseException]:
    tenant = policy(OPENAI)
    resolved = resolved_for(tenant)
    end = deadline(within_s)
    return await asyncio.gather(
        *(router.call_provider(request(), resolved, end, tenant) for _ in range(n)), return_exceptions=True
    )


async def test_per_provider_limit_queues_and_every_call_succeeds() -> None:
    """Six calls with a per-provider limit of 2 all succeed, at most 2 reach the provider at once."""
    provider = SlowProvider(1.0)
    router = Router([provider], limits=LimitOptions(max_in_flight_per_provider=2))
    results = await _calls(router, 6, 30)
    assert all(isinstance(r, ProviderResponse) for r in results)
    assert provider.peak == 2


async def test_router_wide_limit_bounds_in_flight() -> None:
    """The router-wide limit bounds attempts in flight even when the per-provider limit is off."""
    provider = SlowProvider(1.0)
    router = Router([provider], limits=LimitOptions(max_in_flight=3, max_in_flight_per_provider=None))
    results = await _calls(router, 7, 30)
    assert all(isinstance(r, ProviderResponse) for r in results)
    assert provider.peak == 3


async def test_time_queued_is_not_charged_to_the_provider() -> None:
    """A call that queued 4 s behind others records only its own 1 s attempt, no timeout, no failure."""
    provider = SlowProvider(1.0)
    router = Router([provider], limits=LimitOptions(max_in_flight_per_provider=1, attempt_timeout_ms=2000))
    results = await _calls(router, 5, 30)  # the last one queues 4 s: longer than its 2 s attempt timeout
    assert all(isinstance(r, ProviderResponse) for r in results)
    for response in results:
        assert isinstance(response, ProviderResponse)
        assert [a.status for a in response.attempts] == [AttemptStatus.SUCCEEDED]
        assert response.attempts[0].elapsed_ms == 1000
    assert router.health.providers == () or all(h.consecutive_failures == 0 for _, h in router.health.providers)


async def test_deadline_passing_in_the_queue_is_a_clear_error_with_no_provider_effect() -> None:
    """A call whose deadline passes while it queues gets AdmissionTimeout, sends nothing, cools nobody."""
    provider = SlowProvider(10.0)
    router = Router([provider], limits=LimitOptions(max_in_flight_per_provider=1))
    results = await _calls(router, 2, 3)
    errors = [r for r in results if isinstance(r, BaseException)]
    assert len(errors) == 2
    queued = [e for e in errors if isinstance(e, AdmissionTimeout)]
    assert len(queued) == 1
    assert isinstance(queued[0], DeadlineExceeded)
    assert queued[0].attempts == ()
    assert "queued for a local in-flight slot" in str(queued[0])
    assert provider.calls == 1
    assert router._admission.in_flight(OPENAI) == 0  # every slot given back


async def test_a_thousand_concurrent_calls_all_succeed() -> None:
    """1,000 concurrent calls through the default limits: no failure, never more than 100 at the provider."""
    provider = SlowProvider(0.01)
    router = Router([provider])
    results = await _calls(router, 1_000, 30)
    assert [type(r).__name__ for r in results if not isinstance(r, ProviderResponse)] == []
    assert provider.peak == 100


async def test_cancelled_while_queued_gives_the_slot_back() -> None:
    """A caller cancelled while it queues holds no slot afterwards."""
    provider = SlowProvider(5.0)
    router = Router([provider], limits=LimitOptions(max_in_flight_per_provider=1))
    tenant = policy(OPENAI)
    first = asyncio.create_task(router.call_provider(request(), resolved_for(tenant), deadline(30), tenant))
    second = asyncio.create_task(router.call_provider(request(), resolved_for(tenant), deadline(30), tenant))
    await asyncio.sleep(1)
    second.cancel()
    with pytest.raises(asyncio.CancelledError):
        await second
    assert isinstance(await first, ProviderResponse)
    assert router._admission.in_flight(OPENAI) == 0


@pytest.mark.parametrize("bad", [0, -1, True, 1.5])
async def test_limits_must_be_positive_integers(bad: object) -> None:
    """A zero, negative, boolean or fractional limit is a ConfigError naming the value."""
    with pytest.raises(ConfigError, match="max_in_flight"):
        Admission(max_in_flight=bad)  # type: ignore[arg-type]  # the point: a bad value from config
    with pytest.raises(ConfigError, match=repr(bad).replace(".", r"\.")):
        Admission(max_in_flight_per_provider=bad)  # type: ignore[arg-type]  # the point: a bad value from config


async def test_slots_held_while_queueing_for_the_next_limit_are_given_back() -> None:
    """A call holding its provider slot while it queues for the router-wide one gives it back when
    cancelled and when its deadline passes."""
    provider = SlowProvider(5.0)
    router = Router([provider], limits=LimitOptions(max_in_flight=1, max_in_flight_per_provider=5))
    tenant = policy(OPENAI)
    first = asyncio.create_task(router.call_provider(request(), resolved_for(tenant), deadline(30), tenant))
    second = asyncio.create_task(router.call_provider(request(), resolved_for(tenant), deadline(30), tenant))
    third = asyncio.create_task(router.call_provider(request(), resolved_for(tenant), deadline(2), tenant))
    await asyncio.sleep(1)
    assert router._admission.in_flight(OPENAI) == 3  # provider slots taken; two wait for the router's
    second.cancel()
    with pytest.raises(asyncio.CancelledError):
        await second
    with pytest.raises(AdmissionTimeout):
        await third
    assert router._admission.in_flight(OPENAI) == 1
    assert isinstance(await first, ProviderResponse)
    assert router._admission.in_flight(OPENAI) == 0
    assert router._admission.in_flight() == 0


async def test_streams_hold_their_slot_until_the_stream_ends() -> None:
    """Three concurrent streams with a limit of 1 run one after another and all end with MessageStop."""
    provider = SlowProvider(1.0)
    router = Router([provider], limits=LimitOptions(max_in_flight_per_provider=1))
    tenant = policy(OPENAI)
    end = deadline(30)

    async def one() -> list[StreamEvent]:
        return [e async for e in router.call_provider_streaming(request(), resolved_for(tenant), end, tenant)]

    results = await asyncio.gather(one(), one(), one())
    assert all(isinstance(events[-1], MessageStop) for events in results)
    assert provider.peak == 1
    assert router._admission.in_flight(OPENAI) == 0


def _admission_points(reader: InMemoryMetricReader, name: str) -> dict[tuple[tuple[str, str], ...], object]:
    """Each data point of ``name``: sorted labels -> the point (value for counters, sum/count for histograms)."""
    data = reader.get_metrics_data()
    assert data is not None
    return {
        tuple(sorted((k, str(v)) for k, v in (point.attributes or {}).items())): point
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
        if metric.name == name
        for point in metric.data.data_points
    }


async def test_admission_metrics_report_queue_depth_and_time_queued() -> None:
    """Five calls on a limit of 1: four queue (depth 4 while they wait, 0 after), and their time queued
    (1, 2, 3 and 4 s) is recorded as admitted; the call admitted at once records nothing."""
    reader = InMemoryMetricReader()
    metrics = RouterMetrics(MeterProvider(metric_readers=[reader]).get_meter("admission"))
    provider = SlowProvider(1.0)
    router = Router([provider], metrics=metrics, limits=LimitOptions(max_in_flight_per_provider=1))
    calls = asyncio.ensure_future(_calls(router, 5, 30))
    await asyncio.sleep(0.5)
    depth = _admission_points(reader, "ai_router_admission_queue_depth")
    assert [getattr(p, "value", None) for p in depth.values()] == [4]
    assert list(depth) == [(("scope", "openai"),)]
    results = await calls
    assert all(isinstance(r, ProviderResponse) for r in results)
    (after,) = _admission_points(reader, "ai_router_admission_queue_depth").values()
    assert getattr(after, "value", None) == 0
    queued = _admission_points(reader, "ai_router_admission_queued_ms")
    (point,) = queued.values()
    assert list(queued) == [(("outcome", "admitted"), ("provider", "openai"))]
    assert (getattr(point, "count", None), getattr(point, "sum", None)) == (4, 1000 + 2000 + 3000 + 4000)


async def test_admission_metrics_report_a_timed_out_wait() -> None:
    """A call whose deadline passes in the queue records its wait as timed_out, and leaves the queue."""
    reader = InMemoryMetricReader()
    metrics = RouterMetrics(MeterProvider(metric_readers=[reader]).get_meter("admission"))
    router = Router([SlowProvider(10.0)], metrics=metrics, limits=LimitOptions(max_in_flight_per_provider=1))
    await _calls(router, 2, 3)
    queued = _admission_points(reader, "ai_router_admission_queued_ms")
    assert list(queued) == [(("outcome", "timed_out"), ("provider", "openai"))]
    (point,) = queued.values()
    assert getattr(point, "count", None) == 1
    (depth,) = _admission_points(reader, "ai_router_admission_queue_depth").values()
    assert getattr(depth, "value", None) == 0


def _one_attempt(now_ms: int) -> tuple[KernelState, CallProvider]:
    """A call on OpenAI whose first attempt the kernel issued at ``now_ms``."""
    chain = (ChainEntry(provider=OPENAI, model="gpt-4o", fallback_position=0),)
    state, action = kernel.start(CallPlan(chain=chain, started_at_ms=now_ms, deadline_at_ms=now_ms + 30_000), now_ms)
    assert isinstance(action, CallProvider)
    return state, action


async def test_an_attempt_admitted_at_once_takes_every_slot_and_none_when_one_is_full() -> None:
    """``admit_at_once`` (the driver's no-coroutine path) takes the provider's and the router's slot
    and hands back the kernel's action unchanged; when the router-wide slot is taken it takes nothing
    (not even the free provider slot) and says so (None: the attempt queues through ``admit``)."""
    loop = asyncio.get_running_loop()
    admission = Admission(max_in_flight=1, max_in_flight_per_provider=5)
    state, action = _one_attempt(loop_now_ms(loop))
    admitted = admission.admit_at_once(state, action)
    assert admitted is not None
    assert admitted[0] is state
    assert admitted[1] is action
    assert admission.in_flight(OPENAI) == 1
    assert admission.in_flight() == 1
    assert admission.admit_at_once(*_one_attempt(loop_now_ms(loop))) is None
    assert admission.in_flight(OPENAI) == 1
    assert admission.in_flight() == 1
    slot = admitted[2]
    assert slot is not None
    slot.release()
    assert admission.in_flight(OPENAI) == 0
    assert admission.in_flight() == 0


async def test_an_attempt_admitted_at_once_after_the_clock_moved_is_re_issued_as_admit_does() -> None:
    """Admitted at once but a few milliseconds after the kernel issued it, the attempt is re-issued
    at the admission instant (core's readmit), exactly as ``admit`` answers for the same state."""
    loop = asyncio.get_running_loop()
    state, action = _one_attempt(loop_now_ms(loop))
    await asyncio.sleep(0.005)  # virtual: the clock moves on before admission
    at_once = Admission().admit_at_once(state, action)
    queued = await Admission().admit(state, action)
    assert at_once is not None
    assert at_once[:2] == queued[:2]
    assert isinstance(at_once[1], CallProvider)
    assert at_once[1].issued_at_ms == loop_now_ms(loop) > action.issued_at_ms
