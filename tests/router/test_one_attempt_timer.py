"""One timer per attempt (issue 25): inside the router's driver a built-in provider trusts the
driver's bound (``clock.attempt_bound``) and starts no ``asyncio.timeout_at`` of its own; used on its
own, it keeps its promise that nothing waits past ``timeout_at`` (virtual time via looptime)."""

from __future__ import annotations

import asyncio
import json
import sys

import httpx
import pytest

from routeproof import clock
from routeproof.core.responses import AttemptStatus
from routeproof.core.routing import resolve
from routeproof.core.types import AttemptFailureKind, ChatRequest, Message, ProviderKind, TenantPolicy, TextDelta
from routeproof.errors import DeadlineExceeded, ProviderCallFailed
from routeproof.providers.openai import OpenAIProvider
from routeproof.router import Router

pytestmark = [pytest.mark.asyncio, pytest.mark.looptime(end=600)]

ANSWER = {
    "id": "c",
    "object": "chat.completion",
    "model": "gpt-4o",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "4"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
}
REQUEST = ChatRequest(messages=(Message.user("hi"),), max_tokens=4, alias="a")
TENANT = TenantPolicy(primary={"a": (ProviderKind.OPENAI, "gpt-4o")})


@pytest.fixture
def http_timers(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The ``asyncio.timeout_at`` calls made from ``providers/_http.py`` and ``_stream.py`` (their deadlines)."""
    made: list[float] = []
    real = asyncio.timeout_at

    def counting(when: float | None) -> asyncio.Timeout:
        if sys._getframe(1).f_code.co_filename.endswith(("providers/_http.py", "providers/_stream.py")):
            made.append(float("nan") if when is None else when)
        return real(when)

    monkeypatch.setattr(asyncio, "timeout_at", counting)
    return made


def _provider(handler: object) -> OpenAIProvider:
    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))  # type: ignore[arg-type]
    return OpenAIProvider(api_key="sk", base_url="http://provider.invalid/v1", client=client)


async def _answer(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, json=ANSWER)


async def _stall(request: httpx.Request) -> httpx.Response:
    await asyncio.sleep(3600)
    return httpx.Response(200, json=ANSWER)


async def test_a_provider_used_alone_starts_its_own_timer(http_timers: list[float]) -> None:
    """Outside the router the provider bounds its exchange itself: one timer, at its timeout_at."""
    when = asyncio.get_running_loop().time() + 5
    assert clock.attempt_bound() is None
    await _provider(_answer).complete(REQUEST, "gpt-4o", timeout_at=when)
    assert http_timers == [when]


async def test_a_provider_used_alone_still_times_out_at_its_timeout_at() -> None:
    """A stalled exchange outside the router is ATTEMPT_TIMEOUT at timeout_at, not later."""
    loop = asyncio.get_running_loop()
    when = loop.time() + 5
    with pytest.raises(ProviderCallFailed) as caught:
        await _provider(_stall).complete(REQUEST, "gpt-4o", timeout_at=when)
    assert caught.value.failure.kind is AttemptFailureKind.ATTEMPT_TIMEOUT
    assert loop.time() == pytest.approx(when, abs=0.01)


async def test_inside_the_router_the_provider_starts_no_second_timer(http_timers: list[float]) -> None:
    """Through Router.call_provider the driver's timer is the attempt's only bound."""
    router = Router([_provider(_answer)])
    resolved = resolve("a", TENANT)
    assert resolved is not None
    await router.call_provider(REQUEST, resolved, asyncio.get_running_loop().time() + 5, TENANT)
    assert http_timers == []
    await router.aclose()


async def test_inside_the_router_a_stalled_attempt_still_ends_at_the_deadline() -> None:
    """With one timer, a stalled attempt is still an ATTEMPT_TIMEOUT when the caller's deadline passes."""
    router = Router([_provider(_stall)])
    resolved = resolve("a", TENANT)
    assert resolved is not None
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 5
    with pytest.raises(DeadlineExceeded) as caught:
        await router.call_provider(REQUEST, resolved, deadline, TENANT)
    assert loop.time() == pytest.approx(deadline, abs=0.05)
    assert [a.status for a in caught.value.attempts] == [AttemptStatus.DEADLINE_EXCEEDED_MID_CALL]
    await router.aclose()


async def test_a_bound_later_than_the_providers_own_keeps_the_providers_timer(http_timers: list[float]) -> None:
    """Only a bound at or before the provider's timeout_at replaces its timer."""
    when = asyncio.get_running_loop().time() + 5
    with clock.timeout_at_ms(round(when * 1000) + 1000):  # an attempt's bound about 1 s later
        await _provider(_answer).complete(REQUEST, "gpt-4o", timeout_at=when)
    assert http_timers == [when]


async def _sse(request: httpx.Request) -> httpx.Response:
    chunk = {"id": "c", "model": "gpt-4o", "choices": [{"index": 0, "delta": {"content": "4"}, "finish_reason": None}]}
    end = {"id": "c", "model": "gpt-4o", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    body = f"data: {json.dumps(chunk)}\n\ndata: {json.dumps(end)}\n\ndata: [DONE]\n\n".encode()
    return httpx.Response(200, content=body, headers={"content-type": "text/event-stream"})


async def test_a_stream_alone_bounds_its_first_event_and_through_the_router_does_not(
    http_timers: list[float],
) -> None:
    """A stream used alone starts one timer up to its first event; through the router it starts none."""
    loop = asyncio.get_running_loop()
    when = loop.time() + 5
    alone = [e async for e in _provider(_sse).stream(REQUEST, "gpt-4o", timeout_at=when)]
    assert any(isinstance(e, TextDelta) for e in alone)
    assert http_timers == [when]
    http_timers.clear()
    router = Router([_provider(_sse)])
    resolved = resolve("a", TENANT)
    assert resolved is not None
    routed = [e async for e in router.call_provider_streaming(REQUEST, resolved, loop.time() + 5, TENANT)]
    assert any(isinstance(e, TextDelta) for e in routed)
    assert http_timers == []
    await router.aclose()


async def test_a_stalled_stream_through_the_router_still_ends_at_the_deadline() -> None:
    """With one timer, a stream with no first event is still over when the caller's deadline passes."""
    router = Router([_provider(_stall)])
    resolved = resolve("a", TENANT)
    assert resolved is not None
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 5
    with pytest.raises(DeadlineExceeded):
        async for _ in router.call_provider_streaming(REQUEST, resolved, deadline, TENANT):
            pass
    assert loop.time() == pytest.approx(deadline, abs=0.05)
    await router.aclose()
