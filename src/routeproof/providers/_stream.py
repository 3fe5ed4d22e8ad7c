"""The one place where a streamed HTTP answer becomes events, or an :class:`AttemptFailure`.

Every HTTP provider streams through :func:`stream_events`; a provider only builds the request and
picks the decoder (SSE for Anthropic and OpenAI-compatible endpoints, AWS event-stream for Bedrock).

Up to and including the **first event**, the whole exchange (connect, send, headers, the first body
bytes that decode to an event) is bounded by ``timeout_at``, and every failure raises
``ProviderCallFailed(AttemptFailure(...))``, mapped as :func:`~routeproof.providers._http.post_json`
maps it:

=====================================================  ============================================
outcome before the first event                          AttemptFailureKind (http_status)
=====================================================  ============================================
400 whose body says the context length was exceeded    CONTEXT_OVERFLOW (400)
any other non-2xx                                      HTTP_STATUS (status; Retry-After on 429/503)
an httpx exception (reset, refused, EOF mid-chunk...)  its ``EXCEPTION_TABLE`` row
``timeout_at`` reached (or already past)               ATTEMPT_TIMEOUT
the first decoded event is a ``StreamError``           STREAM_ERROR (status): an in-band error,
(in-band error, malformed data, body ended early)      malformed data, or no event before the end
=====================================================  ============================================

After the first event the attempt is committed and nothing is raised (but ``CancelledError``):
events are yielded as they arrive, and the stream ends with exactly one ``MessageStop`` or exactly one
``StreamError`` whose message starts with ``"stream interrupted"``:

=====================================================  ============================================
outcome after the first event                          what the consumer sees
=====================================================  ============================================
the decoder's ``MessageStop``                          that event, then the end
the decoder's ``StreamError`` (in-band error,          ``StreamError("stream interrupted: <it>")``
malformed event, bad checksum)
an httpx exception (reset, closed mid-chunk...)        ``StreamError("stream interrupted: <exc>")``
no bytes for ``idle_timeout_s``                        ``StreamError("stream interrupted: no data ...")``
the body ends without the protocol's terminator        ``StreamError("stream interrupted: ...")``
=====================================================  ============================================

No overall timeout applies after the first event: the caller bounds the rest and cancels the
generator. The response is closed in ``finally`` however the generator ends; after a
``MessageStop`` the rest of the body (the chunked terminator) is read first, within
``DRAIN_TIMEOUT_S``, so the connection goes back to the pool instead of being dropped. Messages never carry
a secret: each passes through :func:`~routeproof.providers._http.redact`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Iterable, Mapping
from typing import Any, Protocol

import httpx

from routeproof.clock import attempt_bound
from routeproof.core.constants import STREAM_INTERRUPTED
from routeproof.core.types import AttemptFailureKind, MessageStop, StreamError, StreamEvent, Usage

# The status and exception mappings are _http's; importing its private helpers keeps them in one place.
from routeproof.providers._http import (
    _CALLER_BOUNDS,
    DEFAULT_MAX_RESPONSE_BYTES,
    MAX_MESSAGE_CHARS,
    Answer,
    _merged_headers,
    _parsed_url,
    _status_failure,
    build_post,
    exchange_failures,
    failure,
    inject_trace_headers,
    pool_timeout_s,
    read_capped,
    redact,
)
from routeproof.traffic_store.answer_headers import capture as capture_rate_headers
from routeproof.transport import DirectAnswer, direct_post, headers_of

__all__ = ["EVENT_STREAM", "SSE", "DirectStreamed", "EventDecoder", "Streamed", "interrupted", "stream_events"]

"""The prefix of every ``StreamError`` yielded after the first event."""

SSE = "text/event-stream"
EVENT_STREAM = "application/vnd.amazon.eventstream"


class EventDecoder(Protocol):
    """A sans-I/O decoder of one response body (``core.formats.sse.StreamDecoder`` and the Bedrock one).

    After it has returned a ``MessageStop`` or a ``StreamError`` it returns nothing more.
    """

    def feed(self, chunk: bytes) -> list[StreamEvent]:
        """The events completed by ``chunk``."""
        ...

    def finish(self) -> list[StreamEvent]:
        """The end of the body: a ``StreamError`` unless the protocol's terminator was seen."""
        ...


def interrupted(detail: str, secrets: Iterable[str] = (), usage: Usage | None = None) -> StreamError:
    """``StreamError("stream interrupted: <detail>")``, redacted and truncated, with the usage the
    provider reported before the cut (None: none arrived)."""
    text = detail if detail.startswith(STREAM_INTERRUPTED) else f"{STREAM_INTERRUPTED}: {detail}"
    return StreamError(message=redact(text, secrets)[:MAX_MESSAGE_CHARS], usage=usage)


def _reported_usage(decoder: EventDecoder) -> Usage | None:
    """The final usage the decoder has seen (``core.formats.sse.StreamDecoder.reported_usage``); None for a
    decoder that does not track one (Bedrock reports its usage with its end event)."""
    usage = getattr(decoder, "reported_usage", None)
    return usage if isinstance(usage, Usage) else None


def _is_terminal(event: StreamEvent) -> bool:
    return isinstance(event, MessageStop | StreamError)


def _committed(event: StreamEvent, secrets: tuple[str, ...], decoder: EventDecoder) -> StreamEvent:
    """An event as yielded after the first one: a StreamError says the stream was interrupted."""
    if isinstance(event, StreamError):
        return interrupted(event.message, secrets, _reported_usage(decoder))
    return event


async def _first_events(chunks: AsyncIterator[bytes], decoder: EventDecoder) -> list[StreamEvent]:
    """Read until the decoder produces at least one event (the end of the body produces one)."""
    while True:
        chunk = await anext(chunks, None)
        events = decoder.finish() if chunk is None else decoder.feed(chunk)
        if events:
            return events
        if chunk is None:
            return [StreamError(message="the body ended before any event")]


async def _next_chunk(chunks: AsyncIterator[bytes], idle_timeout_s: float | None) -> bytes | None:
    """The next body chunk (None at the end), waiting at most ``idle_timeout_s`` for it."""
    if idle_timeout_s is None:
        return await anext(chunks, None)
    async with asyncio.timeout(idle_timeout_s):
        return await anext(chunks, None)


class Streamed(Answer, Protocol):
    """What :func:`stream_events` reads of a streamed answer: an ``httpx.Response`` opened with
    ``stream=True``, or :class:`DirectStreamed` on the direct path."""

    async def aclose(self) -> None: ...


class DirectStreamed:
    """A streamed answer on the direct path (``transport.direct_post``: aiohttp's session without
    httpx's client), read as :func:`stream_events` reads an ``httpx.Response``: the same status and
    headers, the body in the same pieces with aiohttp's errors raised as httpx's, a
    ``content-encoding`` decoded by httpx itself, a non-2xx judged on an ``httpx.Response``."""

    __slots__ = ("_answer", "_raw_headers", "headers", "status_code")

    def __init__(self, answer: DirectAnswer, response: Any) -> None:
        self._answer = answer
        self.status_code: int = response.status
        self.headers = headers_of(response)
        self._raw_headers: Any = response.raw_headers

    def aiter_bytes(self) -> AsyncIterator[bytes]:
        """The (decoded) body, once."""
        if self.headers.get("content-encoding"):
            return self.as_httpx(self._answer.chunks()).aiter_bytes()
        return self._answer.chunks()

    def as_httpx(self, content: AsyncIterator[bytes] | None = None) -> httpx.Response:
        """The answer as an ``httpx.Response`` (its header joining, charset and decoders)."""
        return httpx.Response(self.status_code, headers=self._raw_headers, content=content)

    async def aclose(self) -> None:
        """Release the connection (closed, not pooled, when the body was not read to its end)."""
        await self._answer.__aexit__(None, None, None)


async def _open(
    client: httpx.AsyncClient, url: str, headers: dict[str, str], content: bytes, remaining_s: float
) -> Streamed:
    """POST ``content`` and return the answer with its headers read, on the direct path when
    ``client`` would add nothing to it (``transport.direct_post``), else through ``client.send``.
    Either way connect and pool are bounded by ``remaining_s`` and reads are not: stream_events
    bounds them (by the attempt's end until the first event, then by its idle timeout)."""
    pool_s = pool_timeout_s(remaining_s)
    direct = direct_post(client, _parsed_url(url))
    if direct is None:
        bounds = httpx.Timeout(remaining_s, read=None, pool=pool_s)
        request = build_post(client, url, content=content, headers=headers, timeout=bounds)
        return await client.send(request, stream=True)
    sent = _merged_headers(client, headers)
    answer = direct.post(url, sent, content, connect_s=remaining_s, read_s=None, pool_s=pool_s)
    return DirectStreamed(answer, await answer.__aenter__())


def _judged(response: Streamed) -> httpx.Response:
    return response.as_httpx() if isinstance(response, DirectStreamed) else response  # type: ignore[return-value]


def _send_headers(headers: Mapping[str, str], accept: str) -> dict[str, str]:
    send = dict(headers)
    present = {name.lower() for name in send}
    for name, value in (("content-type", "application/json"), ("accept", accept)):
        if name not in present:
            send[name] = value
    inject_trace_headers(send)
    return send


async def stream_events(
    client: httpx.AsyncClient,
    url: str,
    *,
    content: bytes,
    headers: Mapping[str, str],
    timeout_at: float,
    decoder: EventDecoder,
    secrets: Iterable[str] = (),
    idle_timeout_s: float | None = None,
    accept: str = SSE,
    max_error_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
) -> AsyncGenerator[StreamEvent, None]:
    """POST ``content`` to ``url`` and yield the decoded events of the streamed answer.

    ``timeout_at`` (absolute, on the running loop's clock) bounds everything up to the first event;
    ``idle_timeout_s`` (None: unbounded) bounds each read after it. ``decoder`` is fresh for this
    call. See the module docstring for the failure table.

    :raises ProviderCallFailed: before the first event only.
    """
    if idle_timeout_s is not None and idle_timeout_s <= 0:
        raise ValueError(f"idle_timeout_s must be > 0 or None, got {idle_timeout_s!r}")
    secret_values = tuple(s for s in secrets if s)
    send_headers = _send_headers(headers, accept)
    remaining_s = timeout_at - asyncio.get_running_loop().time()
    if remaining_s <= 0:
        raise failure(AttemptFailureKind.ATTEMPT_TIMEOUT, "no time left for the attempt", secrets=secret_values)
    # httpx bounds connect/write/pool (precise kinds); reads are bounded here: by timeout_at until
    # the first event, then by idle_timeout_s per read.
    response: Streamed | None = None
    chunks: AsyncIterator[bytes] | None = None
    completed = False  # a MessageStop was yielded: the rest of the body is read so the connection is reused
    try:
        with exchange_failures(secret_values, "no first event within", remaining_s):
            # the router's driver already cancels the attempt at attempt_bound(): then no second timer
            bound = attempt_bound()
            async with asyncio.timeout_at(timeout_at) if bound is None or bound > timeout_at else _CALLER_BOUNDS:
                response = await _open(client, url, send_headers, content, remaining_s)
                capture_rate_headers(response.headers)  # the traffic port's provider-side limits (issue 32)
                if not 200 <= response.status_code < 300:
                    error_body = await read_capped(response, max_error_bytes, secret_values)
                    raise _status_failure(_judged(response), secret_values, error_body)
                chunks = response.aiter_bytes()
                first = await _first_events(chunks, decoder)
        if isinstance(first[0], StreamError):
            raise failure(
                AttemptFailureKind.STREAM_ERROR,
                first[0].message,
                secrets=secret_values,
                http_status=response.status_code,
            )
        # --- committed: from here on nothing is raised, the stream ends in one terminal event ---
        for event in first:
            completed = isinstance(event, MessageStop)
            yield _committed(event, secret_values, decoder)
            if _is_terminal(event):
                return
        while True:
            try:
                chunk = await _next_chunk(chunks, idle_timeout_s)
            except TimeoutError:
                yield interrupted(f"no data for {idle_timeout_s}s", secret_values, _reported_usage(decoder))
                return
            except (httpx.HTTPError, httpx.StreamError) as exc:
                yield interrupted(f"{type(exc).__name__}: {exc}", secret_values, _reported_usage(decoder))
                return
            events = decoder.finish() if chunk is None else decoder.feed(chunk)
            for event in events:
                completed = isinstance(event, MessageStop)
                yield _committed(event, secret_values, decoder)
                if _is_terminal(event):
                    return
            if chunk is None:  # a decoder that broke its promise still ends the stream visibly
                yield interrupted("the body ended before the terminator", secret_values, _reported_usage(decoder))
                return
    finally:
        await _close(chunks, response, drain=completed)


DRAIN_MAX_BYTES = 65_536
"""After MessageStop, at most this much of the rest of the body is read (normally only the chunked end)."""

DRAIN_TIMEOUT_S = 1.0
"""After MessageStop, how long the rest of the body may take before the connection is dropped instead."""


async def _drain(chunks: AsyncIterator[bytes]) -> None:
    """Read the rest of a completed stream's body, so httpx returns the connection to its pool.

    Bounded in bytes and time: a server that keeps the body open after the terminator costs at
    most ``DRAIN_TIMEOUT_S`` and a dropped connection, never a hang.
    """
    received = 0
    try:
        async with asyncio.timeout(DRAIN_TIMEOUT_S):
            async for chunk in chunks:
                received += len(chunk)
                if received > DRAIN_MAX_BYTES:
                    return
    except (TimeoutError, httpx.HTTPError, httpx.StreamError):
        return  # the stream was already delivered; closing the response drops this connection


async def _close(chunks: AsyncIterator[bytes] | None, response: Streamed | None, *, drain: bool = False) -> None:
    """Close the body iterator and the response (the connection is dropped if the body was not read)."""
    if drain and chunks is not None:
        await _drain(chunks)
    if isinstance(chunks, AsyncGenerator):
        await chunks.aclose()
    if response is not None:
        await response.aclose()
