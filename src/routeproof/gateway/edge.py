"""The gateway's edge: reading a request before anything else sees it. Every bad input is refused
here with a structured 4xx (:class:`Refused`, answered in the client's API shape), never a 500.

| input                                                  | status | code                  |
| ------------------------------------------------------ | ------ | --------------------- |
| a single-valued header sent twice (key, deadline, type) | 400   | invalid_request       |
| a deadline header that is not 1-9 ASCII digits, or 0   | 400    | invalid_request       |
| a content type other than JSON (or curl's form default) | 415   | unsupported_media_type |
| a body that is not UTF-8 JSON, or has NaN/Infinity     | 400    | invalid_request       |
| JSON nested deeper than :data:`MAX_JSON_DEPTH`          | 400    | invalid_request       |
| a lone surrogate (``\\ud800``) in any string or key     | 400    | invalid_request       |
| an integer longer than Python's digit limit             | 400    | invalid_request       |

Per-tenant shares (``[gateway] max_in_flight``, split by each tenant's ``weight``): a call waits for
one of its own tenant's slots, never another's; past its share and its queue it is refused at once
(503 ``tenant_saturated``, ``Retry-After: 1``); its deadline passing while it queues is a 504. The rule
is ``core.admission.tenant_verdict``; ``/readyz`` lists saturated tenants and is 503 when all are.

The depth limit holds for the parsed value, not only for the parser: the JSON decoder itself stops at
the interpreter's recursion limit (about 1,000 levels; 100,000 raised ``RecursionError``), and the
code after it (translation, re-encoding for a provider) recurses too, so a value nested 900 deep
would still fail later. 64 levels is far beyond any real chat request (a JSON-schema tool parameter
nests a few levels per object).

A lone surrogate cannot be encoded as UTF-8: it used to pass the edge, fail in the provider's client
and be counted as "all providers failed" (502). It is the caller's error, so it is refused here.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

import orjson

from routeproof.admission import TenantAdmission, TenantRateLimit, TenantRateLimited, TenantSaturated
from routeproof.core.formats.wire import decode_json
from routeproof.gateway.failures import Api, Failure, error_body
from routeproof.gateway.settings import GatewaySettings
from routeproof.json_bytes import may_hold_a_long_int

__all__ = [
    "COMPACT_JSON",
    "MAX_DEADLINE_DIGITS",
    "MAX_JSON_DEPTH",
    "SINGLE_VALUED",
    "Refused",
    "admitted",
    "check_content_type",
    "deadline_ms",
    "read_headers",
    "read_json",
    "readiness",
    "shutdown_answer",
    "tenant_admission",
]

MAX_JSON_DEPTH = 64
"""Arrays and objects nested deeper than this are refused."""
MAX_DEADLINE_DIGITS = 9
"""A deadline header longer than this (over 11 days of milliseconds) is refused, not parsed."""
SINGLE_VALUED = frozenset({"authorization", "x-api-key", "content-type", "content-length", "x-routeproof-deadline-ms"})
"""Headers whose second copy makes the request ambiguous (which key? which deadline?)."""
_JSON_TYPES = ("application/json", "application/x-www-form-urlencoded")
"""Accepted media types: JSON, and curl's ``-d`` default (the body must still be JSON)."""
_DIGITS = re.compile(f"[0-9]{{1,{MAX_DEADLINE_DIGITS}}}")
_SURROGATE = re.compile("[\ud800-\udfff]")


class Refused(Exception):
    """A request refused at the edge; carries the 4xx answer."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.message)
        self.failure = failure


def _bad(message: str, status: int = 400, code: str = "invalid_request") -> Refused:
    return Refused(Failure(status=status, code=code, message=message))


def read_headers(raw: Iterable[tuple[bytes, bytes]]) -> dict[str, str]:
    """The request's headers, names lower-cased; a single-valued header sent twice is refused."""
    out: dict[str, str] = {}
    for name_raw, value_raw in raw:
        name = name_raw.decode("latin-1").lower()
        if name in out and name in SINGLE_VALUED:
            raise _bad(f"header {name!r} sent more than once")
        out[name] = value_raw.decode("latin-1")
    return out


def deadline_ms(raw: str, header: str) -> int:
    """The deadline header's milliseconds: 1 to 9 ASCII digits, positive. ``²`` or 5,000 digits are
    refused naming the header (``str.isdigit`` accepts ``²``, and ``int`` refuses over 4,300 digits)."""
    text = raw.strip(" \t")
    if _DIGITS.fullmatch(text) is None or int(text) <= 0:
        shown = raw if len(raw) <= 40 else f"{raw[:40]}... ({len(raw)} characters)"
        raise _bad(f"{header} must be a positive integer of milliseconds (at most 9 digits), got {shown!r}")
    return int(text)


def check_content_type(raw: str | None) -> None:
    """Refuse a body that says it is not JSON (415); no content type at all is taken as JSON."""
    if raw is None:
        return
    media = raw.split(";", 1)[0].strip().lower()
    if media in _JSON_TYPES or (media.startswith("application/") and media.endswith("+json")):
        return
    shown = raw if len(raw) <= 80 else raw[:80] + "..."
    raise _bad(f"content-type {shown!r} is not JSON; send application/json", 415, "unsupported_media_type")


COMPACT_JSON = json.JSONEncoder(separators=(",", ":"))
"""``json.dumps(value, separators=(",", ":"))``'s encoder (ASCII, as a header value must be), made once:
``COMPACT_JSON.encode(value)``."""


def read_json(body: bytes, *, max_depth: int = MAX_JSON_DEPTH) -> object:
    """The body as a JSON value, no deeper than ``max_depth``, with no lone surrogate in any string.

    orjson reads it first (a 100 KB body in about a third of the standard decoder's time, with the
    surrogate screen it makes unneeded); whatever orjson does not read exactly as the standard decoder
    does, the standard decoder reads (:func:`_read_standard`), and its answer or refusal is the one
    given: see :func:`_read_fast`."""
    value = _read_fast(body, max_depth)
    return _read_standard(body, max_depth) if value is _UNREAD else value


_UNREAD = object()
""":func:`_read_fast`'s answer when the standard decoder must read the body."""


def _read_fast(body: bytes, max_depth: int) -> object:
    """The body as orjson reads it, or :data:`_UNREAD`.

    orjson refuses whatever JSON the standard decoder would read otherwise or refuse with its own
    message (:mod:`routeproof.json_bytes`), a lone surrogate among them. The one difference left, an
    integer past 64 bits read as a float: a body that may hold one (a run of 19 digits; past
    :data:`_COUNTED_BYTES`, a float of 2**63 or more in the value) is read by the standard decoder.
    Then the depth rule, as there."""
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        return _UNREAD
    if len(body) > _COUNTED_BYTES:  # the walk visits every value anyway: it looks for the float
        return value if _check_depth(value, max_depth) is None else _UNREAD
    if may_hold_a_long_int(body):
        return _UNREAD
    if body.count(b"{") + body.count(b"[") > max_depth:
        _check_depth(value, max_depth)  # (a small body with no more openers than the limit cannot nest deeper)
    return value


_FLOAT_OF_A_BIG_INT = float(2**63)


def _read_standard(body: bytes, max_depth: int) -> object:
    """:func:`read_json` with the standard decoder: ``json.loads``' own steps, the lone-surrogate screen
    and the depth rule."""
    try:
        value = decode_json(body.decode(json.detect_encoding(body), "surrogatepass"))  # json.loads' own steps
    except RecursionError as exc:
        raise _bad(f"body nests deeper than {max_depth} levels") from exc
    except (UnicodeDecodeError, ValueError) as exc:  # JSONDecodeError, NaN, an int past the digit limit
        raise _bad(f"body is not JSON: {exc}") from exc
    if _may_hold_surrogate(body):
        _check_value(value, max_depth)
    elif len(body) > _COUNTED_BYTES or body.count(b"{") + body.count(b"[") > max_depth:
        _check_depth(value, max_depth)  # (a small body with no more openers than the limit cannot nest deeper)
    return value


def _may_hold_surrogate(body: bytes) -> bool:
    """Whether a decoded string of ``body`` can hold a lone surrogate: it has a ``\\uD800``-``\\uDFFF``
    escape, UTF-8's encoding of one (``json.loads`` decodes bytes with ``surrogatepass``), or NUL
    bytes (a UTF-16/32 body: JSON's structure is ASCII). A body with none of them holds no surrogate:
    :func:`read_json` then walks it for depth only. True only means "walk it all".

    One search per pattern, the byte ones first (``in`` on one byte is ``memchr``): the three as one
    alternation scanned a 100 KB body in 195 us, these in 37 (``\\u`` has no faster search than its regex).
    """
    return (
        b"\x00" in body
        or (b"\xed" in body and _UTF8_SURROGATE.search(body) is not None)
        or _ESCAPED_SURROGATE.search(body) is not None
    )


_ESCAPED_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")
_UTF8_SURROGATE = re.compile(rb"\xed[\xa0-\xbf]")
_COUNTED_BYTES = 4096
"""Up to this size a body's ``{`` and ``[`` are counted before its value is walked for depth (a count
of a few KB is cheaper than a walk); past it the walk, which visits only arrays and objects, is the
cheaper of the two (100 KB of chat turns: 17 us, counting its bytes 51)."""


def _check_depth(value: object, max_depth: int) -> float | None:
    """:func:`_check_value`'s depth rule alone (a body that cannot hold a surrogate), level by level,
    visiting only arrays and objects (both decoders make exactly ``dict`` and ``list``); returns the
    first float of ``2**63`` or more (either sign) it passes, else None: orjson's reading of an
    integer past 64 bits (or a number written that large)."""
    if type(value) is float:
        return value if abs(value) >= _FLOAT_OF_A_BIG_INT else None
    level = [value] if type(value) in _CONTAINERS else []
    depth = 1
    while level:
        if depth > max_depth:
            raise _bad(f"body nests deeper than {max_depth} levels")
        below: list[object] = []
        add = below.append
        for item in level:
            for child in item.values() if type(item) is dict else item:  # type: ignore[attr-defined]
                kind = type(child)
                if kind is dict or kind is list:
                    add(child)
                elif kind is float and abs(child) >= _FLOAT_OF_A_BIG_INT:
                    return float(child)
        level = below
        depth += 1
    return None


_CONTAINERS = (dict, list)


def _check_value(value: object, max_depth: int) -> None:
    """Walk ``value`` without recursion: the depth limit and the surrogate rule."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item) is not None:
                raise _bad("a string in the body holds a lone UTF-16 surrogate (not encodable as UTF-8)")
        elif isinstance(item, dict | list):
            if depth > max_depth:
                raise _bad(f"body nests deeper than {max_depth} levels")
            if isinstance(item, dict):
                stack.extend((key, depth) for key in item)
                stack.extend((child, depth + 1) for child in item.values())
            else:
                stack.extend((child, depth + 1) for child in item)


async def shutdown_answer(api: Api, send: Callable[[MutableMapping[str, Any]], Awaitable[None]]) -> None:
    """End a request uvicorn cancelled past the grace period, without a traceback: a 503 with
    ``Retry-After`` if nothing was answered yet (a stream has already ended with its SSE error event).

    This is the one place a ``CancelledError`` stops: the outermost frame of uvicorn's request task,
    cancelled by uvicorn itself, which ignores what the task returns but logs what it raises as
    "Exception in ASGI application" (one ERROR traceback per request cut)."""
    task = asyncio.current_task()
    if task is not None:
        task.uncancel()
    failure = Failure(status=503, code="shutting_down", message="the gateway is shutting down", retry_after_s=1)
    body = COMPACT_JSON.encode(error_body(api, failure)).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
               (b"retry-after", b"1"), (b"connection", b"close")]  # fmt: skip
    with contextlib.suppress(RuntimeError, OSError):  # the answer had started: nothing more to say
        await send({"type": "http.response.start", "status": 503, "headers": headers})
        await send({"type": "http.response.body", "body": body})


def tenant_admission(settings: GatewaySettings, rate_limit: TenantRateLimit | None = None) -> TenantAdmission:
    """Each configured tenant's share (slots, queue); ``rate_limit`` is the hook for the traffic store."""
    limits = {t.name: (t.max_in_flight, t.max_queued) for t in settings.tenants}
    return TenantAdmission(limits, rate_limit=rate_limit)


def admitted(
    tenancy: TenantAdmission, tenant: str, timeout_s: float, tokens: int = 0
) -> contextlib.AbstractAsyncContextManager[float]:
    """Hold one of ``tenant``'s slots for the block; yields the time left of ``timeout_s`` after queueing.
    Refused: 429 rate_limit_exceeded (the tenant's rpm/tpm, for a call estimated at ``tokens``), 503
    tenant_saturated (share and queue full), 504 deadline_exceeded (the deadline passed queued).
    """
    return _Admitted(tenancy, tenant, timeout_s, tokens)


class _Admitted:
    """:func:`admitted`'s block (a class, not an ``asynccontextmanager``: it is entered on every call)."""

    __slots__ = ("_end_s", "_tenancy", "_tenant", "_timeout_s", "_tokens")

    def __init__(self, tenancy: TenantAdmission, tenant: str, timeout_s: float, tokens: int) -> None:
        self._tenancy = tenancy
        self._tenant = tenant
        self._timeout_s = timeout_s
        self._tokens = tokens
        self._end_s = 0.0

    async def __aenter__(self) -> float:
        loop = asyncio.get_running_loop()
        tenant = self._tenant
        self._end_s = end_s = loop.time() + self._timeout_s
        try:
            await self._tenancy.acquire(tenant, end_s, self._tokens)
        except TenantRateLimited as exc:  # the tenant's own limit: 429, as a provider's would be
            failure = Failure(status=429, code="rate_limit_exceeded", message=str(exc), retry_after_s=exc.retry_after_s)
            raise Refused(failure) from exc
        except TenantSaturated as exc:
            failure = Failure(status=503, code="tenant_saturated", message=str(exc), retry_after_s=exc.retry_after_s)
            raise Refused(failure) from exc
        except TimeoutError as exc:
            message = f"caller deadline exceeded while queued for one of tenant {tenant!r}'s in-flight slots"
            raise Refused(Failure(status=504, code="deadline_exceeded", message=message)) from exc
        return max(0.0, end_s - loop.time())

    async def __aexit__(self, *exc: object) -> None:
        self._tenancy.release(self._tenant)


def readiness(ready: bool, tenancy: TenantAdmission) -> tuple[int, dict[str, Any]]:
    """``/readyz``: 200 while serving with a free slot for some tenant; 503 before start, while stopping,
    or with every tenant's share full. The body lists each tenant's slots and queue."""
    saturated = tenancy.saturated()
    snapshot = tenancy.snapshot()
    full = bool(snapshot) and len(saturated) == len(snapshot)
    body = {"ready": ready and not full, "saturated": list(saturated), "tenants": snapshot}
    return (200 if ready and not full else 503), body
