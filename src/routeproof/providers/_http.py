"""The one place where HTTP outcomes become :class:`~routeproof.core.types.AttemptFailure` values.

Every HTTP provider posts through :func:`post_json`. It bounds the whole exchange by the attempt's
absolute ``timeout_at`` (a time on the running loop's clock), injects the current W3C trace
context, and maps what went wrong, exactly once, to ``ProviderCallFailed(AttemptFailure(...))``:

======================================================  ==========================================
outcome                                                 AttemptFailureKind (http_status)
======================================================  ==========================================
2xx whose body is not JSON / not the documented shape   INVALID_RESPONSE (status)
400 whose body says the context length was exceeded     CONTEXT_OVERFLOW (400)
any other non-2xx                                       HTTP_STATUS (status; Retry-After on 429/503)
``httpx.ConnectTimeout``                                CONNECT_TIMEOUT
``httpx.ReadTimeout`` / ``WriteTimeout``                READ_TIMEOUT
``httpx.PoolTimeout`` (no local connection slot came)   not a failure: ``LocalCongestion`` (a skip)
``httpx.ConnectError`` / ``ProxyError``                 CONN_REFUSED
``RemoteProtocolError`` / ``ReadError`` / ``WriteError`` / ``CloseError``  CONN_RESET
``httpx.DecodingError`` (undecodable content-encoding)  INVALID_RESPONSE
``timeout_at`` reached (or already past)                ATTEMPT_TIMEOUT
a body (2xx or error) over ``max_response_bytes``        INVALID_RESPONSE (status)
a body nested too deep to decode (``RecursionError``)   INVALID_RESPONSE (status)
======================================================  ==========================================

Waiting for a connection from the client's own pool is local congestion, not the provider's
fault: the pool wait ends (:func:`pool_timeout_s`) before the attempt's bound (so it cannot lose the
race to it) and raises ``LocalCongestion``, which the attempt boundary turns into a skip with no
attempt record and no health effect.

``asyncio.CancelledError`` always propagates untouched. Other httpx errors (``UnsupportedProtocol``,
``LocalProtocolError`` for an API key no header can carry, ``TooManyRedirects``, ``InvalidURL``)
mean this provider cannot be used as configured: they become a ``ConfigError`` naming the type but
never the value (the value may be the key), which the attempt boundary turns into a skip. No retries
here: the kernel decides. Messages never carry a secret: every string that reaches an
``AttemptFailure`` passes through :func:`redact` with the provider's secrets.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import time
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any, Protocol

import httpx
import orjson
from opentelemetry import propagate

from routeproof.clock import attempt_bound, wall_ms
from routeproof.core.formats.wire import compact_json
from routeproof.core.kernel import RETRY_AFTER_STATUSES  # the statuses whose wait hint the kernel honours
from routeproof.core.provider_variants import error_object, wait_hint_ms
from routeproof.core.types import AttemptFailure, AttemptFailureKind, ProviderKind, ProviderResponse
from routeproof.errors import ConfigError, InvalidResponse, LocalCongestion, ProviderCallFailed
from routeproof.json_bytes import loads as json_loads
from routeproof.traffic_store.answer_headers import capture as capture_rate_headers
from routeproof.transport import DirectPost, direct_post, headers_of

__all__ = [
    "CONTEXT_OVERFLOW_MARKERS",
    "DEFAULT_MAX_RESPONSE_BYTES",
    "EXCEPTION_TABLE",
    "JSON_HEADERS",
    "MAX_MESSAGE_CHARS",
    "HttpReply",
    "build_post",
    "encode_json",
    "exchange_failures",
    "failure",
    "inject_trace_headers",
    "normalize_or_fail",
    "own_json",
    "pool_timeout_s",
    "post_json",
    "read_capped",
    "redact",
    "stamp",
    "transport_failure",
    "unsendable",
]

EXCEPTION_TABLE: tuple[tuple[type[httpx.HTTPError], AttemptFailureKind | type[LocalCongestion]], ...] = (
    # Order matters: the first row whose type matches wins (ConnectTimeout is a TimeoutException).
    (httpx.ConnectTimeout, AttemptFailureKind.CONNECT_TIMEOUT),
    (httpx.ReadTimeout, AttemptFailureKind.READ_TIMEOUT),
    (httpx.WriteTimeout, AttemptFailureKind.READ_TIMEOUT),
    (httpx.PoolTimeout, LocalCongestion),  # waited for a local connection slot: nothing was sent
    (httpx.ConnectError, AttemptFailureKind.CONN_REFUSED),
    (httpx.ProxyError, AttemptFailureKind.CONN_REFUSED),
    (httpx.RemoteProtocolError, AttemptFailureKind.CONN_RESET),
    (httpx.ReadError, AttemptFailureKind.CONN_RESET),
    (httpx.WriteError, AttemptFailureKind.CONN_RESET),
    (httpx.CloseError, AttemptFailureKind.CONN_RESET),
    (httpx.DecodingError, AttemptFailureKind.INVALID_RESPONSE),
)
"""httpx exception -> failure kind (or ``LocalCongestion``: not the provider's fault), as data."""

POOL_MARGIN_FRACTION = 0.05
POOL_MARGIN_MIN_S = 0.1


def pool_timeout_s(remaining_s: float) -> float:
    """How long an attempt with ``remaining_s`` left may wait for a pooled connection: less than all
    of it (5 %, at least 100 ms, never under half), so a slot that never came ends as
    ``LocalCongestion`` before the attempt's own bound ends it as ATTEMPT_TIMEOUT. If both timers are
    due in one loop iteration (a loaded machine stalls the loop) the attempt's bound wins, so the
    margin is sized for a stalled loop, not for timer precision; an attempt that has its connection
    never waits on this timer, so the margin costs nothing then."""
    return max(remaining_s - max(remaining_s * POOL_MARGIN_FRACTION, POOL_MARGIN_MIN_S), remaining_s / 2)


CONTEXT_OVERFLOW_MARKERS: tuple[str, ...] = (
    "context_length_exceeded",  # OpenAI error code
    "maximum context length",  # OpenAI, OpenRouter, vLLM message
    "context length exceeded",
    "prompt is too long",  # Anthropic
    "exceed context limit",  # Anthropic: input length and max_tokens exceed context limit
    "input is too long",  # Bedrock ValidationException
    "too many input tokens",  # Bedrock
    "context window",
)
"""Lower-case phrases that mark a 400 as "context length exceeded"."""

JSON_HEADERS: Mapping[str, str] = MappingProxyType({"content-type": "application/json", "accept": "application/json"})
"""Sent with every request unless the provider set them (Bedrock signs them itself)."""

MAX_MESSAGE_CHARS = 500
"""Provider error text kept in ``AttemptFailure.message``."""

DEFAULT_MAX_RESPONSE_BYTES = 32 * 1024 * 1024
"""The default cap on one (decoded) non-streamed response body; over it the attempt is INVALID_RESPONSE."""
"""Provider error text kept in ``AttemptFailure.message``."""

_REDACTED = "[REDACTED]"


@dataclass(frozen=True, slots=True, kw_only=True)
class HttpReply:
    """A 2xx answer: its status, headers and decoded JSON body (``raw``: the body's bytes as received)."""

    status: int
    headers: Mapping[str, str]  # case-insensitive: ``httpx.Headers``, or aiohttp's on the direct path
    body: object
    raw: bytes = b""


def own_json(reply: HttpReply) -> str:
    """The answer's JSON text as the provider wrote it, for a same-protocol caller (its bytes, decoded,
    when they are a UTF-8 JSON object); else its body encoded again. Relayed whole, it spares the
    gateway an encode here and a decode and an encode there; what a client parses is the same."""
    raw = reply.raw
    if raw.lstrip()[:1] == b"{":
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:  # another encoding json.loads detected: encoded again, as UTF-8 JSON
            pass
    return json.dumps(reply.body, separators=(",", ":"))


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every non-empty secret replaced by a marker."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, _REDACTED)
    return text


def failure(
    kind: AttemptFailureKind,
    message: str,
    *,
    secrets: Iterable[str] = (),
    http_status: int | None = None,
    retry_after_ms: int | None = None,
) -> ProviderCallFailed:
    """A ``ProviderCallFailed`` whose message is redacted and truncated."""
    clean = redact(message, secrets)[:MAX_MESSAGE_CHARS]
    return ProviderCallFailed(
        AttemptFailure(kind=kind, http_status=http_status, retry_after_ms=retry_after_ms, message=clean)
    )


def inject_trace_headers(headers: dict[str, str]) -> None:
    """Add the current OpenTelemetry context's ``traceparent``/``tracestate`` to ``headers``."""
    propagate.inject(headers)


def encode_json(body: Mapping[str, object]) -> bytes:
    """The request body as compact UTF-8 JSON (the exact bytes that are sent and, for Bedrock, signed).

    orjson writes it: a 100 KB conversation in 7-12 us, where the standard library's encoder took 200
    (``python -O -m benchmarks.wire_pieces``). What orjson would write otherwise than ``compact_json`` (core's one
    encoder) it is told to refuse, and ``compact_json`` writes that body: an int past 64 bits, a
    subclass of str, int, dict or list (a StrEnum), a type JSON has no form for, a lone surrogate, a
    key that is not a str, nesting past orjson's 254 levels. A float is written in its shortest form
    either way (orjson spells ``1e-07`` as ``1e-7``: the same number). NaN and the infinities, which
    ``compact_json`` refuses and orjson would write as ``null``, never reach here: every float of a
    body is a caller's JSON number (``decode_json`` refuses NaN) or a ChatRequest field checked finite.
    """
    try:
        return orjson.dumps(body, default=_not_plain_json, option=_PLAIN_JSON_ONLY)
    except TypeError:  # orjson.JSONEncodeError is one: the one encoder (core/formats/wire.py) writes it
        return compact_json(body).encode("utf-8")


_PLAIN_JSON_ONLY = orjson.OPT_PASSTHROUGH_SUBCLASS | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME
"""orjson's options that send a subclass, a dataclass and a date to ``default`` instead of writing them."""


def _not_plain_json(value: object) -> object:
    """orjson's ``default``: anything that is not plain JSON is left to ``compact_json``."""
    raise TypeError(f"{type(value).__name__} is written by compact_json")


@functools.lru_cache(maxsize=256)
def _parsed_url(url: str) -> httpx.URL:
    """A provider's endpoint URL, parsed once: parsing was most of ``build_request``'s cost."""
    return httpx.URL(url)


def build_post(
    client: httpx.AsyncClient, url: str, *, content: bytes, headers: Mapping[str, str], timeout: httpx.Timeout
) -> httpx.Request:
    """What ``client.build_request("POST", url, ...)`` builds, at about a third of its CPU.

    The URL is parsed once per URL string (:func:`_parsed_url`), and the client's default headers
    are merged with the call's as httpx merges them (a call header replaces the client's of the same
    name, case-insensitively). A client with cookies or a base URL, whose merging this does not
    repeat, goes through ``build_request`` itself.
    """
    if client.cookies or not client.base_url.is_relative_url:
        return client.build_request("POST", url, content=content, headers=headers, timeout=timeout)
    return httpx.Request(
        "POST", _parsed_url(url), content=content, headers=_merged_headers(client, headers),
        extensions={"timeout": timeout.as_dict()},
    )  # fmt: skip


def _map_exception(exc: httpx.HTTPError) -> AttemptFailureKind | type[LocalCongestion] | None:
    for exc_type, kind in EXCEPTION_TABLE:
        if isinstance(exc, exc_type):
            return kind
    return None


def transport_failure(exc: httpx.HTTPError, secrets: Iterable[str]) -> ProviderCallFailed | LocalCongestion | None:
    """What to raise for an httpx exception: the provider's failure, ``LocalCongestion`` (nothing was
    sent), or None for one that is a bad configuration (the caller raises :func:`unsendable`)."""
    kind = _map_exception(exc)
    if kind is None:
        return None
    if not isinstance(kind, AttemptFailureKind):
        return kind(redact(f"no local connection slot within the attempt's time ({type(exc).__name__})", secrets))
    return failure(kind, f"{type(exc).__name__}: {exc}", secrets=secrets)


class _ExchangeFailures:
    """:func:`exchange_failures`' block (a class, not a generator: it is entered on every attempt)."""

    __slots__ = ("_remaining_s", "_secrets", "_timed_out")

    def __init__(self, secrets: tuple[str, ...], timed_out: str, remaining_s: float) -> None:
        self._secrets = secrets
        self._timed_out = timed_out
        self._remaining_s = remaining_s

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        if isinstance(exc, TimeoutError):  # only asyncio.timeout_at raises it; httpx errors are not TimeoutError
            message = f"{self._timed_out} {self._remaining_s:.3f}s"  # formatted only when it is said
            raise failure(AttemptFailureKind.ATTEMPT_TIMEOUT, message, secrets=self._secrets) from exc
        if isinstance(exc, httpx.HTTPError):
            mapped = transport_failure(exc, self._secrets)
            if mapped is None:
                raise unsendable(exc) from None  # not `from exc`: its message may hold the key
            raise mapped from exc
        if isinstance(exc, httpx.InvalidURL):
            raise unsendable(exc) from None
        # anything else (CancelledError above all) propagates untouched


def exchange_failures(
    secrets: tuple[str, ...], timed_out: str, remaining_s: float
) -> contextlib.AbstractContextManager[None]:
    """The one mapping of what an HTTP exchange raises, for plain and streamed calls alike: the
    attempt's own ``asyncio.timeout_at`` (``TimeoutError``) is ATTEMPT_TIMEOUT, its message
    ``timed_out`` and the ``remaining_s`` the exchange had ("attempt timed out after 1.500s", made
    only then); an httpx error is its :data:`EXCEPTION_TABLE` row (or ``LocalCongestion``), or a
    ConfigError (:func:`unsendable`) when the request cannot be sent as configured."""
    return _ExchangeFailures(secrets, timed_out, remaining_s)


def unsendable(exc: Exception) -> ConfigError:
    """The ConfigError for an httpx error that means "this request cannot be sent as configured".

    Only the type is named: httpx puts the offending header value (an API key with a trailing
    newline, say) in its message, in ``repr`` form that :func:`redact` would not recognise.
    """
    return ConfigError(
        f"the request cannot be sent as configured ({type(exc).__name__}): check the base URL and that "
        "the API key has no whitespace or control characters"
    )


class Answer(Protocol):
    """What :func:`read_capped` reads of an answer: an ``httpx.Response``, or the direct path's
    streamed answer (``providers._stream.DirectStreamed``)."""

    @property
    def status_code(self) -> int: ...

    @property
    def headers(self) -> Mapping[str, str]: ...

    def aiter_bytes(self) -> AsyncIterator[bytes]: ...


async def read_capped(response: Answer, max_bytes: int, secrets: Iterable[str] = ()) -> bytes:
    """The (decoded) body of a streamed ``response``; INVALID_RESPONSE once it passes ``max_bytes``."""
    return await _capped(response.status_code, response.headers, response.aiter_bytes(), max_bytes, secrets)


async def _capped(
    status: int, headers: Mapping[str, str], chunks: AsyncIterator[bytes], max_bytes: int, secrets: Iterable[str]
) -> bytes:
    """``chunks`` joined; INVALID_RESPONSE once they pass ``max_bytes``, or at once when an unencoded
    body's declared ``content-length`` does."""
    declared = _declared_length(headers)
    if declared is not None and declared > max_bytes and not headers.get("content-encoding"):
        raise failure(
            AttemptFailureKind.INVALID_RESPONSE,
            f"HTTP {status} body of {declared} bytes is over the {max_bytes}-byte cap",
            secrets=secrets,
            http_status=status,
        )
    parts: list[bytes] = []
    total = 0
    async for chunk in chunks:
        total += len(chunk)
        if total > max_bytes:
            raise failure(
                AttemptFailureKind.INVALID_RESPONSE,
                f"HTTP {status} body is over the {max_bytes}-byte cap",
                secrets=secrets,
                http_status=status,
            )
        parts.append(chunk)
    return b"".join(parts)


def _declared_length(headers: Mapping[str, str]) -> int | None:
    """The ``content-length`` ``headers`` declare (ASCII digits only), else None."""
    declared = headers.get("content-length", "")
    return int(declared) if declared.isascii() and declared.isdigit() else None


def _declared_within(headers: Mapping[str, str], max_bytes: int) -> bool:
    """Whether ``headers`` declare a ``content-length`` of at most ``max_bytes``: then the body is read
    whole at once (the cap cannot be passed), without :func:`_capped`'s chunk loop."""
    declared = _declared_length(headers)
    return declared is not None and declared <= max_bytes


def _loads(content: bytes) -> object:
    """JSON (``json.loads``' reading: orjson's where it is the same, ``json_bytes``), with a body nested
    too deep to decode reported like any other non-JSON body."""
    try:
        return json_loads(content)
    except RecursionError as exc:
        raise ValueError("JSON nested too deeply to decode") from exc


def _error_text(status_text: str) -> str:
    """The provider's own error message when the body has one of the documented shapes, else the text."""
    text = status_text
    try:
        data = _loads(text.encode())
    except ValueError:
        return text
    if isinstance(data, list) and error_object(data) is not None:
        data = data[0]  # Gemini's OpenAI-compatible endpoint wraps its error object in a list
    if isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            code = error.get("code") or error.get("type")
            prefix = f"{code}: " if isinstance(code, str) else ""
            return prefix + str(error["message"])
        if isinstance(error, str):
            return error
        if isinstance(data.get("message"), str):
            return str(data["message"])
        if isinstance(data.get("Message"), str):
            return str(data["Message"])
    return text


def _is_context_overflow(text: str) -> bool:
    lowered = text.lower()
    return any(marker in lowered for marker in CONTEXT_OVERFLOW_MARKERS)


def _status_failure(response: httpx.Response, secrets: tuple[str, ...], content: bytes) -> ProviderCallFailed:
    status = response.status_code
    raw = content.decode(response.encoding or "utf-8", errors="replace")
    detail = _error_text(raw)
    if status == 400 and _is_context_overflow(raw):
        return failure(AttemptFailureKind.CONTEXT_OVERFLOW, f"HTTP 400: {detail}", secrets=secrets, http_status=400)
    retry_after_ms = None
    if status in RETRY_AFTER_STATUSES:
        now_epoch_ms = wall_ms(time.time())
        try:
            body: object = _loads(content)
        except ValueError:
            body = None
        # retry-after-ms, Retry-After, Google's RetryInfo, x-ratelimit-reset-* (core/provider_variants.py)
        retry_after_ms = wait_hint_ms(response.headers, body, now_epoch_ms)
    return failure(
        AttemptFailureKind.HTTP_STATUS,
        f"HTTP {status}: {detail}",
        secrets=secrets,
        http_status=status,
        retry_after_ms=retry_after_ms,
    )


_CALLER_BOUNDS = contextlib.nullcontext()
"""In place of the exchange's own timer when the router's driver bounds the attempt (``clock.attempt_bound``)."""


async def _send(
    client: httpx.AsyncClient,
    url: str,
    *,
    content: bytes,
    headers: dict[str, str],
    timeout_at: float,
    secrets: tuple[str, ...],
    max_response_bytes: int,
) -> tuple[int, Mapping[str, str], bytes]:
    """A 2xx answer's status, headers and (decoded) body; any other status raises its failure."""
    loop = asyncio.get_running_loop()
    remaining_s = timeout_at - loop.time()
    if remaining_s <= 0:
        raise failure(AttemptFailureKind.ATTEMPT_TIMEOUT, "no time left for the attempt", secrets=secrets)
    bound = attempt_bound()  # the router's driver already cancels the attempt at ``bound``: no second timer
    with exchange_failures(secrets, "attempt timed out after", remaining_s):
        # Two bounds: httpx's per-phase timeouts give the precise kind (connect vs read), and
        # asyncio.timeout_at bounds the whole exchange even if a server trickles bytes forever.
        async with asyncio.timeout_at(timeout_at) if bound is None or bound > timeout_at else _CALLER_BOUNDS:
            direct = direct_post(client, _parsed_url(url))
            if direct is not None:
                sent = _merged_headers(client, headers)
                return await _send_direct(direct, url, sent, content, remaining_s, secrets, max_response_bytes)
            request = build_post(
                client, url, content=content, headers=headers,
                timeout=httpx.Timeout(remaining_s, pool=pool_timeout_s(remaining_s)),
            )  # fmt: skip
            response = await client.send(request, stream=True)
            capture_rate_headers(response.headers)  # the traffic port's provider-side limits (issue 32)
            try:
                body = await read_capped(response, max_response_bytes, secrets)
            finally:
                await response.aclose()
            if not 200 <= response.status_code < 300:
                raise _status_failure(response, secrets, body)
            return response.status_code, response.headers, body


def _merged_headers(client: httpx.AsyncClient, headers: Mapping[str, str]) -> list[tuple[str, str]]:
    """The client's default headers and the call's, merged as httpx merges them (a call header replaces
    the client's of the same name, case-insensitively)."""
    names = {name.lower() for name in headers}
    items = [(name, value) for name, value in client.headers.multi_items() if name not in names]
    items.extend(headers.items())
    return items


async def _send_direct(  # noqa: PLR0917 - _send's own arguments, passed on
    direct: DirectPost,
    url: str,
    sent: list[tuple[str, str]],
    content: bytes,
    remaining_s: float,
    secrets: tuple[str, ...],
    max_response_bytes: int,
) -> tuple[int, Mapping[str, str], bytes]:
    """:func:`_send` on aiohttp's session without httpx's client (:func:`routeproof.transport.direct_post`):
    the same request headers, timeouts, cap and failures. A ``content-encoding`` is decoded by httpx
    itself (the same decoders, the cap after decoding), a non-2xx answer judged on an
    ``httpx.Response`` (the same header joining and charset as the other path)."""
    pool_s = pool_timeout_s(remaining_s)
    async with direct.post(url, sent, content, connect_s=remaining_s, read_s=remaining_s, pool_s=pool_s) as answer:
        status: int = answer.status
        answer_headers = headers_of(answer)
        capture_rate_headers(answer_headers)  # the traffic port's provider-side limits (issue 32)
        if answer_headers.get("content-encoding"):
            encoded = httpx.Response(status, headers=answer.raw_headers, content=answer.content.iter_any())
            body = await read_capped(encoded, max_response_bytes, secrets)
        elif _declared_within(answer_headers, max_response_bytes):  # aiohttp reads no byte past the length
            body = await answer.read()
        else:
            body = await _capped(status, answer_headers, answer.content.iter_any(), max_response_bytes, secrets)
        if not 200 <= status < 300:
            raise _status_failure(httpx.Response(status, headers=answer.raw_headers), secrets, body)
        return status, answer_headers, body


async def post_json(
    client: httpx.AsyncClient,
    url: str,
    *,
    content: bytes,
    headers: Mapping[str, str],
    timeout_at: float,
    secrets: Iterable[str] = (),
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
) -> HttpReply:
    """POST ``content`` (JSON bytes) to ``url``; a 2xx JSON answer, or ``ProviderCallFailed``.

    ``timeout_at`` is an absolute time on the running loop's clock; nothing here waits past it.
    ``secrets`` are redacted from every message this function produces. A body over
    ``max_response_bytes`` (after content decoding) is INVALID_RESPONSE.

    :raises ConfigError: when the request cannot be sent as configured (see the module docstring).
    """
    secret_values = tuple(s for s in secrets if s)
    send_headers = dict(headers)
    present = {name.lower() for name in send_headers}
    for name, value in JSON_HEADERS.items():
        if name not in present:
            send_headers[name] = value
    inject_trace_headers(send_headers)
    status, answer_headers, body_bytes = await _send(
        client,
        url,
        content=content,
        headers=send_headers,
        timeout_at=timeout_at,
        secrets=secret_values,
        max_response_bytes=max_response_bytes,
    )
    try:
        body: object = _loads(body_bytes)
    except ValueError as exc:
        raise failure(
            AttemptFailureKind.INVALID_RESPONSE,
            f"HTTP {status} body is not JSON ({exc}): {body_bytes[:200]!r}",
            secrets=secret_values,
            http_status=status,
        ) from exc
    return HttpReply(status=status, headers=answer_headers, body=body, raw=body_bytes)


def normalize_or_fail(
    normalize: Callable[[dict[str, Any]], ProviderResponse], reply: HttpReply, *, secrets: Iterable[str] = ()
) -> ProviderResponse:
    """``normalize(reply.body)``; a malformed body becomes INVALID_RESPONSE with the normaliser's reason."""
    if not isinstance(reply.body, dict):
        raise failure(
            AttemptFailureKind.INVALID_RESPONSE,
            f"body is not a JSON object: {type(reply.body).__name__}",
            secrets=secrets,
            http_status=reply.status,
        )
    try:
        return normalize(reply.body)
    except InvalidResponse as exc:
        raise failure(
            AttemptFailureKind.INVALID_RESPONSE, exc.reason, secrets=secrets, http_status=reply.status
        ) from exc


def stamp(
    response: ProviderResponse,
    kind: ProviderKind,
    model: str,
    *,
    wire_body_json: str | None = None,
    dropped: tuple[str, ...] = (),
) -> ProviderResponse:
    """``response`` with its provider set, its model set when the body named none, and (when given)
    the provider's own body (``own_json``) and the parameters left out of the request: one copy at
    most, and ``response`` itself when nothing changes."""
    changes: dict[str, Any] = {}
    if response.provider is not kind:
        changes["provider"] = kind
    if not response.model:
        changes["model"] = model
    if wire_body_json is not None:
        changes["wire_body_json"] = wire_body_json
    if dropped:
        changes["dropped_parameters"] = dropped
    return replace(response, **changes) if changes else response
