"""One attempt boundary: nothing raised during an attempt escapes the call but CancelledError.

Each case puts a provider that raises (or a real provider fed a hostile answer) first in the chain
and the in-process Local model second: the call must go on to Local with a record of what happened
(an AttemptRecord or a SkipRecord) and exactly one ``ai_router_calls_total`` data point.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx
import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from routeproof import BudgetOptions
from routeproof.core.boundary import ATTEMPT_EXCEPTION_TABLE, UnsupportedParameters, classify_exception
from routeproof.core.ledger import BudgetLimits
from routeproof.core.pricing import load_pricing
from routeproof.core.routing import resolve
from routeproof.core.types import (
    AttemptFailureKind,
    AttemptStatus,
    ChatRequest,
    FallbackProvider,
    Message,
    MessageStop,
    ProviderKind,
    ProviderResponse,
    StreamEvent,
    TenantPolicy,
)
from routeproof.errors import ConfigError, InvalidResponse, TranslationError
from routeproof.mock import MockProviderServer, Scripted, Shape
from routeproof.observe import RouterMetrics
from routeproof.providers.local import LocalProvider
from routeproof.providers.openai import OpenAIProvider
from routeproof.router import Router

ALIAS = "chat"
OA, LOCAL = ProviderKind.OPENAI, ProviderKind.LOCAL
DEADLINE_S = 20.0  # bounds every call of these tests (real loopback sockets)

pytestmark = pytest.mark.asyncio


class Raising:
    """An OpenAI-kind provider whose every attempt raises ``exc`` (before or instead of answering)."""

    kind = OA
    name = "raising"
    base_url: str | None = "http://127.0.0.1:1/v1"

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc
        self.calls = 0

    async def complete(self, request: ChatRequest, model: str, *, timeout_at: float) -> ProviderResponse:
        self.calls += 1
        raise self.exc

    async def stream(
        self, request: ChatRequest, model: str, *, timeout_at: float, idle_timeout_s: float | None = None
    ) -> AsyncIterator[StreamEvent]:
        self.calls += 1
        raise self.exc
        yield  # pragma: no cover - makes this an async generator

    async def aclose(self) -> None:
        """Nothing to release."""


def _policy() -> TenantPolicy:
    return TenantPolicy(
        primary={ALIAS: (OA, "gpt-4o")},
        fallback_chain=(FallbackProvider(kind=LOCAL, model_alias_map={ALIAS: "local-echo"}),),
    )


def _request() -> ChatRequest:
    return ChatRequest(messages=(Message.user("hi"),), max_tokens=16, alias=ALIAS)


def _calls_total(reader: InMemoryMetricReader) -> list[tuple[dict[str, object], float]]:
    data = reader.get_metrics_data()
    assert data is not None
    rows: list[tuple[dict[str, object], float]] = []
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name == "ai_router_calls_total":
                    rows += [(dict(p.attributes or {}), float(p.value)) for p in metric.data.data_points]  # type: ignore[union-attr]  # a Sum's points have .value
    return rows


async def _call(first: object, *, stream: bool = False, pricing: str | None = None) -> tuple[object, Router, list]:  # type: ignore[type-arg]  # rows are (labels, value)
    reader = InMemoryMetricReader()
    metrics = RouterMetrics(MeterProvider(metric_readers=[reader]).get_meter("test"))
    router = Router(
        [first, LocalProvider()],  # type: ignore[list-item]  # Raising is a structural Provider
        metrics=metrics,
        budgets=BudgetOptions(
            pricing=None if pricing is None else load_pricing(pricing),
            limits=None if pricing is None else BudgetLimits(session_limit_pico_usd=10**15),
        ),
    )
    policy = _policy()
    resolved = resolve(ALIAS, policy)
    assert resolved is not None
    deadline = asyncio.get_running_loop().time() + DEADLINE_S
    if stream:
        events = router.call_provider_streaming(_request(), resolved, deadline, policy)
        out = [event async for event in events]
        assert isinstance(out[-1], MessageStop)
        result: object = events
    else:
        result = await router.call_provider(_request(), resolved, deadline, policy)
    return result, router, _calls_total(reader)


@pytest.mark.parametrize(
    ("exc", "reason"),
    [
        (TranslationError("tool_result 'x' has no equivalent"), "untranslatable"),
        (TranslationError("'audio' has no equivalent", fields=("audio",)), "untranslatable: audio"),
        (UnsupportedParameters("o3", ("temperature",)), "unsupported_parameter: temperature"),
        (ConfigError("no price for openai/gpt-4o"), "misconfigured"),
    ],
)
@pytest.mark.parametrize("stream", [False, True])
async def test_an_exception_that_means_this_provider_cannot_take_the_request_is_a_skip(
    exc: Exception, reason: str, stream: bool
) -> None:
    """TranslationError, strict-mode UnsupportedParameters and ConfigError skip the provider, then Local answers."""
    first = Raising(exc)
    result, _, rows = await _call(first, stream=stream)
    skipped = result.skipped if isinstance(result, ProviderResponse) else None
    attempts = result.attempts  # type: ignore[attr-defined]  # both result types carry attempts
    assert [(a.provider, a.status) for a in attempts] == [(LOCAL, AttemptStatus.SUCCEEDED)]
    if skipped is not None:
        assert [(s.provider, s.reason) for s in skipped] == [(OA, reason)]
    assert first.calls == 1
    assert len(rows) == 1
    assert rows[0][0]["outcome"] == "succeeded"


@pytest.mark.parametrize(
    "exc", [RecursionError("maximum recursion depth exceeded"), KeyError("choices"), ValueError("bad"), TypeError("x")]
)
@pytest.mark.parametrize("stream", [False, True])
async def test_any_other_exception_is_a_failed_attempt_that_fails_over(exc: Exception, stream: bool) -> None:
    """RecursionError, KeyError, ValueError, TypeError: one FAILED_OVER record, then Local answers."""
    result, _, rows = await _call(Raising(exc), stream=stream)
    attempts = result.attempts  # type: ignore[attr-defined]  # both result types carry attempts
    assert [(a.provider, a.status) for a in attempts] == [
        (OA, AttemptStatus.FAILED_OVER),
        (LOCAL, AttemptStatus.SUCCEEDED),
    ]
    assert len(rows) == 1


@pytest.mark.parametrize("stream", [False, True])
async def test_cancelled_error_passes_through_the_boundary(stream: bool) -> None:
    """A CancelledError raised inside an attempt is never turned into a failure: the call is cancelled."""
    with pytest.raises(asyncio.CancelledError):
        await _call(Raising(asyncio.CancelledError()), stream=stream)


async def test_an_unpriced_fallback_model_is_skipped_before_anything_is_sent() -> None:
    """With a budget, a model the pricing table lacks is skipped (misconfigured) and never called."""
    first = Raising(AssertionError("must not be called"))
    result, _, rows = await _call(first, pricing='[openai."gpt-4o-mini"]\ninput_per_mtok = 1\noutput_per_mtok = 2\n'
                                  'cache_read_per_mtok = 0\ncache_write_per_mtok = 0\n')  # fmt: skip
    assert isinstance(result, ProviderResponse)
    assert first.calls == 0
    assert [(s.provider, s.reason) for s in result.skipped] == [(OA, "misconfigured")]
    assert len(rows) == 1


async def test_the_exception_table_lists_a_subclass_before_its_base() -> None:
    """First match wins, so no row may be shadowed by an earlier row for one of its bases."""
    types = [t for t, _ in ATTEMPT_EXCEPTION_TABLE]
    for i, later in enumerate(types):
        assert not any(issubclass(later, earlier) for earlier in types[:i]), later
    assert classify_exception(asyncio.CancelledError()) == (None, None)
    outcome, failure = classify_exception(InvalidResponse("x"))
    assert outcome is not None
    assert failure is not None
    assert failure.kind is AttemptFailureKind.INVALID_RESPONSE


# --- real providers against the mock server ------------------------------------------------------------

DEEP = "[" * 100_000 + "]" * 100_000


async def _with_openai_mock(step: Scripted, api_key: str = "sk-test") -> tuple[object, list, MockProviderServer]:  # type: ignore[type-arg]  # rows are (labels, value)
    async with MockProviderServer(Shape.OPENAI) as server, httpx.AsyncClient() as client:
        server.set_default(step)
        provider = OpenAIProvider(api_key=api_key, client=client, base_url=f"{server.base_url}/v1")
        result, _, rows = await _call(provider)
        return result, rows, server


@pytest.mark.parametrize("status", [200, 500])
async def test_a_body_nested_100000_levels_deep_is_an_invalid_response_not_a_crash(status: int) -> None:
    """A 100,000-level nested JSON body (on 200 and on 500) fails the attempt; the chain goes on to Local."""
    result, rows, _ = await _with_openai_mock(Scripted(status=status, body=DEEP))
    assert isinstance(result, ProviderResponse)
    assert result.provider is LOCAL
    assert result.attempts[0].provider is OA
    assert len(rows) == 1


async def test_an_api_key_with_a_trailing_newline_is_refused_where_it_enters_and_never_printed() -> None:
    """Since issue 27 the constructor refuses the key (naming the parameter, never the value): httpcore's DEBUG
    log printed such a key in full when the provider was only skipped at call time."""
    key = "sk-SECRET-trailing-newline-key"
    with pytest.raises(ValueError, match="api_key") as info:
        OpenAIProvider(api_key=key + "\n", base_url="http://127.0.0.1:9/v1")
    assert key not in str(info.value)
    assert key not in repr(info.value)


async def test_a_body_over_the_response_cap_is_an_invalid_response() -> None:
    """A 2xx body larger than max_response_bytes fails the attempt (INVALID_RESPONSE) and the chain goes on."""
    async with MockProviderServer(Shape.OPENAI) as server, httpx.AsyncClient() as client:
        server.set_default(Scripted(body="x" * 5000))
        provider = OpenAIProvider(api_key="k", client=client, base_url=f"{server.base_url}/v1", max_response_bytes=4096)
        loop = asyncio.get_running_loop()
        with pytest.raises(Exception) as info:  # noqa: PT011 - the type is asserted right below
            await provider.complete(_request(), "gpt-4o", timeout_at=loop.time() + DEADLINE_S)
    failure = getattr(info.value, "failure", None)
    assert failure is not None
    assert failure.kind is AttemptFailureKind.INVALID_RESPONSE
    assert "4096-byte cap" in failure.message


async def test_an_sse_line_over_the_provider_s_cap_fails_the_attempt_before_its_first_event() -> None:
    """With max_sse_line_chars=64 the mock's first (longer) SSE line is a STREAM_ERROR, never a hang or a crash."""
    async with MockProviderServer(Shape.OPENAI) as server, httpx.AsyncClient() as client:
        provider = OpenAIProvider(api_key="k", client=client, base_url=f"{server.base_url}/v1", max_sse_line_chars=64)
        loop = asyncio.get_running_loop()
        with pytest.raises(Exception) as info:  # noqa: PT011 - the failure kind is asserted right below
            _ = [e async for e in provider.stream(_request(), "gpt-4o", timeout_at=loop.time() + DEADLINE_S)]
    failure = getattr(info.value, "failure", None)
    assert failure is not None
    assert failure.kind is AttemptFailureKind.STREAM_ERROR
    assert "longer than 64" in failure.message


async def test_when_nothing_else_can_run_the_configuration_error_is_the_call_s_error() -> None:
    """A chain of one misconfigured provider (a key with a newline set past the constructor) raises ConfigError,
    without the key."""
    key = "sk-SECRET-only-provider-key"
    reader = InMemoryMetricReader()
    metrics = RouterMetrics(MeterProvider(metric_readers=[reader]).get_meter("test"))
    policy = TenantPolicy(primary={ALIAS: (OA, "gpt-4o")})
    resolved = resolve(ALIAS, policy)
    assert resolved is not None
    async with MockProviderServer(Shape.OPENAI) as server, httpx.AsyncClient() as client:
        provider = OpenAIProvider(api_key=key, client=client, base_url=f"{server.base_url}/v1")
        # defence in depth: a bad key that got past the constructor's check (set on the instance) is
        # still refused by httpx at call time, skipped as misconfigured and never printed
        provider._api_key = key + "\n"
        router = Router([provider], metrics=metrics)
        with pytest.raises(ConfigError) as info:
            await router.call_provider(_request(), resolved, asyncio.get_running_loop().time() + DEADLINE_S, policy)
    assert key not in str(info.value)
    assert info.value.attempts == ()
    assert len(_calls_total(reader)) == 1
