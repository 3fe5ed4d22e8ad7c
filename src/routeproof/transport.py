"""The HTTP stack, chosen by measurement: httpx over aiohttp's connection pool, or a tuned httpx pool.

Every provider talks ``httpx`` (its requests, responses and exceptions), so the one transport-error
table (``providers._http.EXCEPTION_TABLE``) maps failures whatever carries the bytes. Two transports:

* ``aiohttp`` (the default when the ``aiohttp`` extra is installed): ``httpx-aiohttp``'s transport,
  the one the official OpenAI and Anthropic SDKs offer, with aiohttp's exceptions translated to the
  httpx exception httpx's own transport raises for the same event (:data:`AIOHTTP_TO_HTTPX`, most
  specific first; httpx-aiohttp's own mapping turns a reset into ``ConnectTimeout`` and lets some
  aiohttp errors escape unmapped). Measured (``tox -e bench``): several times httpx's throughput at
  100 in flight and a fraction of its CPU per call.
* ``httpx``: httpx's own pool, tuned: keep-alive for every connection it may open
  (httpx's default keeps 20 of 100, so at 100 in flight 80 connections are opened and closed per
  round), over :class:`routeproof._pool.IndexedPool`: httpcore 1.0's pool walks every connection
  (and re-counts them, O(C²)) on each request and each release, so its CPU per call grew ~15× from
  1 to 100 in flight; the indexed pool's bookkeeping is O(1) per request. Always available; select
  it with ``transport="httpx"`` or ``ROUTEPROOF_TRANSPORT=httpx``.

Both pools hold :data:`POOL_CONNECTIONS` connections, the admission default per provider
(``routeproof.admission``), so admitted attempts do not queue inside the pool.
"""

from __future__ import annotations

import enum
import importlib.util
import os
from collections.abc import AsyncIterator

import httpcore
import httpx

from routeproof._pool import IndexedPool, indexed_pool_supported
from routeproof.admission import DEFAULT_MAX_IN_FLIGHT_PER_PROVIDER
from routeproof.errors import ConfigError

__all__ = [
    "AIOHTTP_TO_HTTPX",
    "POOL_CONNECTIONS",
    "Transport",
    "default_transport",
    "make_client",
    "parse_transport",
]

POOL_CONNECTIONS = DEFAULT_MAX_IN_FLIGHT_PER_PROVIDER
KEEPALIVE_EXPIRY_S = 30.0


class Transport(enum.Enum):
    """Which HTTP stack carries the requests."""

    AIOHTTP = "aiohttp"
    HTTPX = "httpx"


def _aiohttp_names() -> tuple[tuple[str, type[httpx.HTTPError]], ...]:
    # aiohttp class name -> the httpx exception httpx's own transport raises for that event.
    # Most specific first: the first row whose class matches wins.
    return (
        ("ClientProxyConnectionError", httpx.ProxyError),
        ("ClientHttpProxyError", httpx.ProxyError),
        ("ConnectionTimeoutError", httpx.ConnectTimeout),  # the connect phase timed out
        ("ClientConnectorError", httpx.ConnectError),  # refused, DNS, TLS at connect
        ("SocketTimeoutError", httpx.ReadTimeout),
        ("ServerTimeoutError", httpx.ReadTimeout),
        ("ServerDisconnectedError", httpx.RemoteProtocolError),  # closed before a complete response
        ("ClientConnectionResetError", httpx.WriteError),
        ("ClientPayloadError", httpx.RemoteProtocolError),  # body cut short / bad chunking
        ("ClientResponseError", httpx.RemoteProtocolError),  # malformed status line or headers
        ("ClientOSError", httpx.ReadError),  # ECONNRESET and friends
        ("ServerFingerprintMismatch", httpx.ConnectError),
        ("ClientConnectionError", httpx.ReadError),
        ("InvalidURL", httpx.UnsupportedProtocol),
    )


AIOHTTP_TO_HTTPX: tuple[tuple[str, type[httpx.HTTPError]], ...] = _aiohttp_names()
"""aiohttp exception (class name in ``aiohttp``) -> httpx exception, as data (tests list it)."""


def aiohttp_available() -> bool:
    """Whether the ``aiohttp`` extra (``httpx-aiohttp``) is installed."""
    return importlib.util.find_spec("httpx_aiohttp") is not None


def default_transport() -> Transport:
    """``ROUTEPROOF_TRANSPORT`` when set, else the tuned httpx pool. aiohttp is opt-in (measured
    faster at 100 in flight, see the README) and never chosen just because it happens to be installed:
    an installed package must not change where requests go or what a test's respx mock intercepts."""
    chosen = os.environ.get("ROUTEPROOF_TRANSPORT")
    if chosen:
        return parse_transport(chosen)
    return Transport.HTTPX


def parse_transport(value: object) -> Transport:
    """A transport name from configuration or the environment."""
    try:
        transport = Transport(value)
    except ValueError:
        raise ConfigError(f"transport must be one of {[t.value for t in Transport]}, got {value!r}") from None
    if transport is Transport.AIOHTTP and not aiohttp_available():
        raise ConfigError("transport 'aiohttp' needs the aiohttp extra: pip install 'routeproof[aiohttp]'")
    return transport


def _limits(connections: int) -> httpx.Limits:
    return httpx.Limits(
        max_connections=connections, max_keepalive_connections=connections, keepalive_expiry=KEEPALIVE_EXPIRY_S
    )


def make_client(
    transport: Transport | str | None = None,
    *,
    connections: int = POOL_CONNECTIONS,
    network_backend: httpcore.AsyncNetworkBackend | None = None,
) -> httpx.AsyncClient:
    """An ``httpx.AsyncClient`` over the chosen transport (None: :func:`default_transport`).

    ``network_backend`` (httpx only): httpcore's socket layer, e.g. an in-memory one in a test."""
    chosen = default_transport() if transport is None else parse_transport(transport)
    if chosen is Transport.HTTPX:
        client = httpx.AsyncClient(limits=_limits(connections))
        _index_pool(client, connections, network_backend)
        return client
    if network_backend is not None:
        raise ConfigError("network_backend is httpcore's: it applies to the httpx transport only")
    return httpx.AsyncClient(transport=_mapped_aiohttp_transport(connections))


def _index_pool(
    client: httpx.AsyncClient, connections: int, network_backend: httpcore.AsyncNetworkBackend | None
) -> None:
    """Put :class:`routeproof._pool.IndexedPool` (O(1) bookkeeping per request) under the client's
    default transport, with the settings httpx gave the stock pool. Env-proxy mounts keep theirs."""
    transport = client._transport  # the default (non-proxy) transport httpx built from ``limits``
    if not isinstance(transport, httpx.AsyncHTTPTransport) or not indexed_pool_supported():
        return
    stock = transport._pool
    if type(stock) is not httpcore.AsyncConnectionPool:
        return  # a proxy or socks pool: left as httpx built it
    transport._pool = IndexedPool(
        ssl_context=stock._ssl_context,
        max_connections=connections,
        max_keepalive_connections=connections,
        keepalive_expiry=KEEPALIVE_EXPIRY_S,
        network_backend=network_backend,
    )


def _mapped_aiohttp_transport(connections: int) -> httpx.AsyncBaseTransport:
    import aiohttp
    from httpx_aiohttp import AiohttpTransport

    table = tuple((getattr(aiohttp, name), target) for name, target in AIOHTTP_TO_HTTPX if hasattr(aiohttp, name))

    def translate(exc: Exception) -> Exception:
        root = exc.__cause__ if isinstance(exc, httpx.HTTPError) and exc.__cause__ is not None else exc
        for source, target in table:
            if isinstance(root, source):
                return target(f"{type(root).__name__}: {root}")
        return exc

    class _Stream(httpx.AsyncByteStream):
        def __init__(self, inner: httpx.AsyncByteStream) -> None:
            self._inner = inner

        async def __aiter__(self) -> AsyncIterator[bytes]:
            try:
                async for chunk in self._inner:
                    yield chunk
            except (httpx.HTTPError, aiohttp.ClientError) as exc:
                raise translate(exc) from exc

        async def aclose(self) -> None:
            try:
                await self._inner.aclose()
            except (httpx.HTTPError, aiohttp.ClientError) as exc:
                raise translate(exc) from exc

    class _Transport(AiohttpTransport):
        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            try:
                response: httpx.Response = await super().handle_async_request(request)
            except (httpx.HTTPError, aiohttp.ClientError) as exc:
                raise translate(exc) from exc
            assert isinstance(response.stream, httpx.AsyncByteStream)
            response.stream = _Stream(response.stream)
            return response

    return _Transport(limits=_limits(connections))
