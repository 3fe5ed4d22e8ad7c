"""The shared HTTP boundary, checked through each HTTP provider: statuses, exceptions, deadlines."""

from __future__ import annotations

import asyncio
import email.utils
import time

import httpx
import pytest
import respx
from opentelemetry.sdk.trace import TracerProvider

from routeproof.core.types import AttemptFailureKind
from routeproof.errors import LocalCongestion, ProviderCallFailed
from routeproof.providers import _http

from .conftest import HttpCase, request_hello

RETRYABLE_OR_OTHER_STATUSES = (400, 401, 403, 404, 408, 409, 413, 422, 429, 500, 502, 503, 504)
EXCEPTIONS: tuple[tuple[type[httpx.HTTPError], AttemptFailureKind], ...] = (
    (httpx.ConnectError, AttemptFailureKind.CONN_REFUSED),
    (httpx.ConnectTimeout, AttemptFailureKind.CONNECT_TIMEOUT),
    (httpx.ReadTimeout, AttemptFailureKind.READ_TIMEOUT),
    (httpx.WriteTimeout, AttemptFailureKind.READ_TIMEOUT),
    (httpx.RemoteProtocolError, AttemptFailureKind.CONN_RESET),
    (httpx.ReadError, AttemptFailureKind.CONN_RESET),
    (httpx.WriteError, AttemptFailureKind.CONN_RESET),
)


async def _fail(case: HttpCase, client: httpx.AsyncClient, *, timeout_s: float = 10.0) -> ProviderCallFailed:
    provider = case.make(client)
    timeout_at = asyncio.get_running_loop().time() + timeout_s
    with pytest.raises(ProviderCallFailed) as info:
        await provider.complete(request_hello(), case.model, timeout_at=timeout_at)
    return info.value


@pytest.mark.asyncio
async def test_success_is_normalised(case: HttpCase, client: httpx.AsyncClient, respx_mock: respx.MockRouter) -> None:
    """A 200 with the documented body becomes a ProviderResponse stamped with the provider's kind."""
    respx_mock.post(case.url).respond(200, json=case.ok_body, headers=case.ok_headers)
    provider = case.make(client)
    response = await provider.complete(request_hello(), case.model, timeout_at=asyncio.get_running_loop().time() + 5)
    assert response.provider is case.kind
    assert response.choices[0].content == "hi"
    assert response.usage.prompt_tokens == 3
    assert response.model


@pytest.mark.parametrize("status", RETRYABLE_OR_OTHER_STATUSES)
@pytest.mark.asyncio
async def test_non_2xx_is_http_status(
    case: HttpCase, client: httpx.AsyncClient, respx_mock: respx.MockRouter, status: int
) -> None:
    """Every non-2xx answer (but a context overflow) is HTTP_STATUS carrying that status and the message."""
    respx_mock.post(case.url).respond(status, json={"error": {"type": "some_error", "message": "nope"}})
    failure = (await _fail(case, client)).failure
    assert failure.kind is AttemptFailureKind.HTTP_STATUS
    assert failure.http_status == status
    assert "nope" in failure.message
    assert failure.retry_after_ms is None


@pytest.mark.parametrize(
    "body",
    [
        {"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long: 9 > 8"}},
        {"error": {"message": "This model's maximum context length is 8192 tokens", "code": "context_length_exceeded"}},
        {"message": "Input is too long for requested model."},
    ],
    ids=["anthropic-shape", "openai-shape", "bedrock-shape"],
)
@pytest.mark.asyncio
async def test_400_context_overflow(
    case: HttpCase, client: httpx.AsyncClient, respx_mock: respx.MockRouter, body: dict[str, object]
) -> None:
    """A 400 whose body says the context length was exceeded is CONTEXT_OVERFLOW with status 400."""
    respx_mock.post(case.url).respond(400, json=body)
    failure = (await _fail(case, client)).failure
    assert failure.kind is AttemptFailureKind.CONTEXT_OVERFLOW
    assert failure.http_status == 400


@pytest.mark.asyncio
async def test_413_context_words_are_not_overflow(
    case: HttpCase, client: httpx.AsyncClient, respx_mock: respx.MockRouter
) -> None:
    """Only a 400 can be CONTEXT_OVERFLOW; another status with the same words stays HTTP_STATUS."""
    respx_mock.post(case.url).respond(413, json={"message": "prompt is too long"})
    failure = (await _fail(case, client)).failure
    assert (failure.kind, failure.http_status) == (AttemptFailureKind.HTTP_STATUS, 413)


@pytest.mark.parametrize(("exc_type", "kind"), EXCEPTIONS, ids=[e.__name__ for e, _ in EXCEPTIONS])
@pytest.mark.asyncio
async def test_transport_exception_mapped(
    case: HttpCase,
    client: httpx.AsyncClient,
    respx_mock: respx.MockRouter,
    exc_type: type[httpx.HTTPError],
    kind: AttemptFailureKind,
) -> None:
    """Each httpx transport exception maps to its AttemptFailureKind, without a status, chained with `from`."""
    respx_mock.post(case.url).mock(side_effect=exc_type("boom"))
    error = await _fail(case, client)
    assert error.failure.kind is kind
    assert error.failure.http_status is None
    assert isinstance(error.__cause__, exc_type)


@pytest.mark.asyncio
async def test_pool_timeout_is_local_congestion(
    case: HttpCase, client: httpx.AsyncClient, respx_mock: respx.MockRouter
) -> None:
    """httpx.PoolTimeout (no local connection slot) is LocalCongestion, never a provider failure."""
    respx_mock.post(case.url).mock(side_effect=httpx.PoolTimeout("boom"))
    provider = case.make(client)
    with pytest.raises(LocalCongestion) as info:
        await provider.complete(request_hello(), case.model, timeout_at=asyncio.get_running_loop().time() + 10)
    assert isinstance(info.value.__cause__, httpx.PoolTimeout)


@pytest.mark.parametrize("status", [429, 503])
@pytest.mark.asyncio
async def test_retry_after_seconds(
    case: HttpCase, client: httpx.AsyncClient, respx_mock: respx.MockRouter, status: int
) -> None:
    """Retry-After as delay-seconds on 429/503 is reported in milliseconds."""
    respx_mock.post(case.url).respond(status, headers={"Retry-After": "5"}, json={"message": "slow down"})
    failure = (await _fail(case, client)).failure
    assert (failure.kind, failure.http_status, failure.retry_after_ms) == (
        AttemptFailureKind.HTTP_STATUS,
        status,
        5_000,
    )


@pytest.mark.asyncio
async def test_retry_after_http_date(case: HttpCase, client: httpx.AsyncClient, respx_mock: respx.MockRouter) -> None:
    """Retry-After as an HTTP-date is measured against the wall clock."""
    header = email.utils.formatdate(time.time() + 120, usegmt=True)
    respx_mock.post(case.url).respond(429, headers={"Retry-After": header}, json={"message": "slow down"})
    failure = (await _fail(case, client)).failure
    assert failure.retry_after_ms is not None
    assert 115_000 <= failure.retry_after_ms <= 120_000


@pytest.mark.asyncio
async def test_retry_after_ignored_on_500(
    case: HttpCase, client: httpx.AsyncClient, respx_mock: respx.MockRouter
) -> None:
    """Retry-After is read on 429 and 503 only."""
    respx_mock.post(case.url).respond(500, headers={"Retry-After": "5"}, json={"message": "oops"})
    assert (await _fail(case, client)).failure.retry_after_ms is None


@pytest.mark.asyncio
async def test_retry_after_garbage_is_none(
    case: HttpCase, client: httpx.AsyncClient, respx_mock: respx.MockRouter
) -> None:
    """An unparsable Retry-After is reported as None, not as an error."""
    respx_mock.post(case.url).respond(429, headers={"Retry-After": "soon-ish"}, json={"message": "slow"})
    failure = (await _fail(case, client)).failure
    assert (failure.http_status, failure.retry_after_ms) == (429, None)


@pytest.mark.parametrize(
    "content", [b"not json", b"[1, 2]", b'{"unexpected": true}'], ids=["text", "array", "wrong-shape"]
)
@pytest.mark.asyncio
async def test_malformed_200_is_invalid_response(
    case: HttpCase, client: httpx.AsyncClient, respx_mock: respx.MockRouter, content: bytes
) -> None:
    """A 2xx whose body is not the documented shape is INVALID_RESPONSE with a reason and status 200."""
    respx_mock.post(case.url).respond(200, content=content, headers={"content-type": "application/json"})
    failure = (await _fail(case, client)).failure
    assert failure.kind is AttemptFailureKind.INVALID_RESPONSE
    assert failure.http_status == 200
    assert failure.message


@pytest.mark.looptime(end=600)
@pytest.mark.asyncio
async def test_hung_server_bounded_by_timeout_at(
    case: HttpCase, client: httpx.AsyncClient, respx_mock: respx.MockRouter
) -> None:
    """A server that never answers is abandoned exactly at timeout_at (ATTEMPT_TIMEOUT), on loop time."""

    async def hang(request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(500)
        return httpx.Response(200, json=case.ok_body)

    respx_mock.post(case.url).mock(side_effect=hang)
    loop = asyncio.get_running_loop()
    start = loop.time()
    failure = (await _fail(case, client, timeout_s=7.0)).failure
    assert failure.kind is AttemptFailureKind.ATTEMPT_TIMEOUT
    assert failure.message == "attempt timed out after 7.000s"  # the time the exchange had, said once it ran out
    assert loop.time() - start == pytest.approx(7.0, abs=0.01)


@pytest.mark.looptime(end=600)
@pytest.mark.asyncio
async def test_httpx_timeout_is_remaining_time(
    case: HttpCase, client: httpx.AsyncClient, respx_mock: respx.MockRouter
) -> None:
    """httpx's connect/read/write timeouts are the time left until timeout_at; the pool wait ends
    a little before it (pool_timeout_s), so a slot that never came is LocalCongestion."""
    seen: dict[str, float | None] = {}

    def capture(request: httpx.Request) -> httpx.Response:
        seen.update(request.extensions["timeout"])
        return httpx.Response(200, json=case.ok_body, headers=case.ok_headers)

    respx_mock.post(case.url).mock(side_effect=capture)
    provider = case.make(client)
    await asyncio.sleep(1)  # the loop clock is not at zero
    await provider.complete(request_hello(), case.model, timeout_at=asyncio.get_running_loop().time() + 12.5)
    assert set(seen) == {"connect", "read", "write", "pool"}
    pool = seen.pop("pool")
    assert all(value == pytest.approx(12.5, abs=0.01) for value in seen.values())
    assert pool == pytest.approx(_http.pool_timeout_s(12.5), abs=0.01)
    assert pool is not None
    assert pool < 12.4


@pytest.mark.asyncio
async def test_no_time_left_sends_nothing(
    case: HttpCase, client: httpx.AsyncClient, respx_mock: respx.MockRouter
) -> None:
    """With timeout_at already past, the attempt fails at once and no request is sent."""
    route = respx_mock.post(case.url).respond(200, json=case.ok_body)
    failure = (await _fail(case, client, timeout_s=-1.0)).failure
    assert failure.kind is AttemptFailureKind.ATTEMPT_TIMEOUT
    assert not route.called


@pytest.mark.looptime(end=600)
@pytest.mark.asyncio
async def test_cancellation_propagates(case: HttpCase, client: httpx.AsyncClient, respx_mock: respx.MockRouter) -> None:
    """Cancelling the caller mid-request raises CancelledError, never ProviderCallFailed."""
    started = asyncio.Event()

    async def hang(request: httpx.Request) -> httpx.Response:
        started.set()
        await asyncio.sleep(500)
        return httpx.Response(200, json=case.ok_body)

    respx_mock.post(case.url).mock(side_effect=hang)
    provider = case.make(client)
    task = asyncio.create_task(
        provider.complete(request_hello(), case.model, timeout_at=asyncio.get_running_loop().time() + 100)
    )
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


@pytest.mark.asyncio
async def test_secrets_never_in_messages(
    case: HttpCase, client: httpx.AsyncClient, respx_mock: respx.MockRouter
) -> None:
    """A provider echoing the key in its error body or an exception text never leaks it into a failure."""
    echoed = " ".join(case.secrets)
    respx_mock.post(case.url).mock(
        side_effect=[
            httpx.Response(401, json={"error": {"message": f"Incorrect API key provided: {echoed}"}}),
            httpx.ConnectError(f"cannot connect with {echoed}"),
            httpx.Response(200, content=f"garbage {echoed}".encode()),
        ]
    )
    texts = []
    for _ in range(3):
        error = await _fail(case, client)
        texts += [error.failure.message, str(error), repr(error.failure)]
    texts.append(repr(case.make(client)))
    assert "[REDACTED]" in texts[0]
    for secret in case.secrets:
        assert all(secret not in text for text in texts), secret


@pytest.mark.asyncio
async def test_traceparent_injected(case: HttpCase, client: httpx.AsyncClient, respx_mock: respx.MockRouter) -> None:
    """The outbound request carries the active span's trace id in a W3C traceparent header."""
    route = respx_mock.post(case.url).respond(200, json=case.ok_body, headers=case.ok_headers)
    tracer = TracerProvider().get_tracer("routeproof-tests")
    provider = case.make(client)
    with tracer.start_as_current_span("attempt") as span:
        await provider.complete(request_hello(), case.model, timeout_at=asyncio.get_running_loop().time() + 5)
        context = span.get_span_context()
    header = route.calls.last.request.headers["traceparent"]
    version, trace_id, span_id, flags = header.split("-")
    assert (version, trace_id, span_id) == ("00", f"{context.trace_id:032x}", f"{context.span_id:016x}")
    assert flags == f"{context.trace_flags:02x}"


@pytest.mark.asyncio
async def test_no_traceparent_without_span(
    case: HttpCase, client: httpx.AsyncClient, respx_mock: respx.MockRouter
) -> None:
    """With no active span there is no context to propagate, so no traceparent is invented."""
    route = respx_mock.post(case.url).respond(200, json=case.ok_body, headers=case.ok_headers)
    provider = case.make(client)
    await provider.complete(request_hello(), case.model, timeout_at=asyncio.get_running_loop().time() + 5)
    assert "traceparent" not in route.calls.last.request.headers


def test_exception_table_order_is_specific_first() -> None:
    """No row of the exception table is shadowed by an earlier, more general row."""
    rows = [exc_type for exc_type, _ in _http.EXCEPTION_TABLE]
    for index, exc_type in enumerate(rows):
        assert not any(issubclass(exc_type, earlier) for earlier in rows[:index]), exc_type


def test_redact_replaces_every_occurrence() -> None:
    """redact() removes each secret everywhere and ignores empty secrets."""
    assert _http.redact("k1 and k1 and k2", ["k1", "", "k2"]) == "[REDACTED] and [REDACTED] and [REDACTED]"
