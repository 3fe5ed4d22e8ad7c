"""The HTTP stack, chosen by measurement: httpx over aiohttp's connection pool, or a tuned httpx pool.

Every provider talks ``httpx`` (its requests, responses and exceptions), so the one transport-error
table (``providers._http.EXCEPTION_TABLE``) maps failures whatever carries the bytes. Two transports:

* ``aiohttp`` (the default; ``aiohttp`` and ``httpx-aiohttp`` are core dependencies):
  ``httpx-aiohttp``'s transport, the one the official OpenAI and Anthropic SDKs offer, with aiohttp's
  exceptions translated to the httpx exception httpx's own transport raises for the same event
  (:data:`AIOHTTP_TO_HTTPX`, most specific first; httpx-aiohttp's own mapping turns a reset into
  ``ConnectTimeout`` and lets some aiohttp errors escape unmapped). A POST, plain or streamed, on a
  client :func:`make_client` built (no auth, cookies, event hooks, redirects or mounts added since)
  skips httpx's client around it (:func:`direct_post`): the same request, headers, timeouts and
  exception translation, about a fifth less of the gateway's CPU per call (plain or streamed). Measured side by side
  (``docs/performance.md``, load 10-15): at 100 in flight the router's CPU per call 0.71x the tuned
  httpx pool's below (1.12 vs 1.57 ms under ``-O``) and 1.34x its calls/s; direct, 0.17x httpx's CPU.
* ``httpx``: httpx's own pool, tuned: keep-alive for every connection it may open
  (httpx's default keeps 20 of 100, so at 100 in flight 80 connections are opened and closed per
  round), over :class:`routeproof._pool.IndexedPool`: httpcore 1.0's pool walks every connection
  (and re-counts them, O(C²)) on each request and each release, so its CPU per call grew ~15× from
  1 to 100 in flight; the indexed pool's bookkeeping is O(1) per request. Select it with
  ``transport="httpx"`` or ``ROUTEPROOF_TRANSPORT=httpx``; it is what ``respx`` can intercept
  (respx patches httpcore's pool, which the aiohttp transport never calls).

A client passed in (``OpenAIProvider(client=httpx.AsyncClient())``, as the README shows) keeps its
transport, so a respx mock or a proxy the caller set up still sees every request; :func:`adopt_client`
only swaps httpcore's O(C²) pool under it for :class:`IndexedPool` (measured: the plain client cost the
router about twice the CPU per call of the indexed pool at 100 in flight), and gives a client built
with httpx's default limits routeproof's keep-alive for every connection.

Both pools hold :data:`POOL_CONNECTIONS` connections, the admission default per provider
(``routeproof.admission``), so admitted attempts do not queue inside the pool.
"""

from __future__ import annotations

import enum
import http.cookiejar
import importlib.util
import os
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import httpcore
import httpx
from httpx._utils import get_environment_proxies  # what httpx.AsyncClient reads itself (no public name)

from routeproof._pool import IndexedPool, indexed_pool_supported
from routeproof.admission import DEFAULT_MAX_IN_FLIGHT_PER_PROVIDER
from routeproof.errors import ConfigError

__all__ = [
    "AIOHTTP_TO_HTTPX",
    "HEAD_FIELDS",
    "HEAD_LINE_BYTES",
    "POOL_CONNECTIONS",
    "STREAM_CHUNK_BYTES",
    "DirectAnswer",
    "DirectPost",
    "Transport",
    "adopt_client",
    "default_transport",
    "direct_post",
    "headers_of",
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
    """``ROUTEPROOF_TRANSPORT`` when set, else aiohttp's (measured fastest, a core dependency; the
    tuned httpx pool only if the ``aiohttp`` package is missing from a broken install). A test that
    intercepts with respx selects ``httpx`` explicitly (``tests/conftest.py`` does it for every module
    that imports respx): the default is the same on every install, so it never decides where a
    test's requests go."""
    chosen = os.environ.get("ROUTEPROOF_TRANSPORT")
    if chosen:
        return parse_transport(chosen)
    return Transport.AIOHTTP if aiohttp_available() else Transport.HTTPX


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

    ``network_backend`` (httpx only): httpcore's socket layer, e.g. an in-memory one in a test; with
    no ``transport`` named, it selects the httpx transport."""
    if transport is None:
        chosen = Transport.HTTPX if network_backend is not None else default_transport()
    else:
        chosen = parse_transport(transport)
    if chosen is Transport.HTTPX:
        client = httpx.AsyncClient(limits=_limits(connections), cookies=_cookieless())
        _index_pool(client, connections, network_backend)
        return client
    if network_backend is not None:
        raise ConfigError("network_backend is httpcore's: it applies to the httpx transport only")
    return httpx.AsyncClient(
        transport=_mapped_aiohttp_transport(connections),
        mounts=_environment_proxies(connections),
        cookies=_cookieless(),
    )


def _environment_proxies(connections: int) -> dict[str, httpx.AsyncBaseTransport | None]:
    """The proxies the environment names (``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY``, ``NO_PROXY``),
    mounted as httpx's own client mounts them when it builds its transport itself: httpx reads none of
    them once a transport is passed in, and the aiohttp session reads none either (``trust_env`` off),
    so without these mounts the default transport sent every call around the egress proxy a
    deployment names. A proxied URL goes through httpx's transport with that proxy (never the direct
    path: :func:`direct_post` sees a transport without ``direct``); a ``NO_PROXY`` host (None) through
    the aiohttp transport, as before."""
    return {
        pattern: None if url is None else httpx.AsyncHTTPTransport(proxy=httpx.Proxy(url), limits=_limits(connections))
        for pattern, url in get_environment_proxies().items()
    }


class _KeepNone(http.cookiejar.DefaultCookiePolicy):
    """A cookie policy that keeps no cookie and sends none."""

    def set_ok(self, cookie: http.cookiejar.Cookie, request: Any) -> bool:
        return False

    def return_ok(self, cookie: http.cookiejar.Cookie, request: Any) -> bool:
        return False


def _cookieless() -> http.cookiejar.CookieJar:
    """The cookie jar of every client :func:`make_client` builds: it keeps nothing. A provider API
    needs no cookie, and one client serves every tenant of the process, so a cookie one tenant's
    answer set (Cloudflare's ``__cf_bm`` on OpenAI's API, say) must not ride on another's call; a
    kept cookie would also turn :func:`direct_post` off for the client. A client passed in keeps its
    own jar."""
    return http.cookiejar.CookieJar(policy=_KeepNone())


_HTTPX_DEFAULT_LIMITS = (100, 20, 5.0)
"""``httpx.AsyncClient()``'s pool limits (``httpx._config.DEFAULT_LIMITS``): connections, keep-alive, expiry."""


def adopt_client(client: httpx.AsyncClient) -> httpx.AsyncClient:
    """A caller's client, made fast without changing where its requests go; returns ``client``.

    When its transport is httpx's own over httpcore's stock pool that has not been used yet (no
    connection, no request), the pool is replaced by :class:`IndexedPool` with the same socket
    settings (SSL context, retries, local address, UDS, socket options): respx and proxies are
    untouched, since respx patches ``handle_async_request``, which ``IndexedPool`` inherits, and proxy
    pools are left as they are. Limits the caller chose are kept; httpx's default limits (keep-alive
    for 20 of 100 connections, 5 s) become routeproof's (every connection kept alive 30 s). Anything
    else (a custom or mounted transport, HTTP/2, a used pool) is left exactly as given. Idempotent:
    one client shared by several providers is adopted once."""
    if not isinstance(client, httpx.AsyncClient):
        raise TypeError(f"client must be an httpx.AsyncClient, got {type(client).__name__}")
    transport = client._transport
    if not isinstance(transport, httpx.AsyncHTTPTransport) or not indexed_pool_supported():
        return client
    stock = transport._pool
    if type(stock) is not httpcore.AsyncConnectionPool or stock._http2 or stock._connections or stock._requests:
        return client
    stock_limits = (stock._max_connections, stock._max_keepalive_connections, stock._keepalive_expiry)
    if stock_limits == _HTTPX_DEFAULT_LIMITS:
        limits: tuple[int | None, int | None, float | None] = (POOL_CONNECTIONS, POOL_CONNECTIONS, KEEPALIVE_EXPIRY_S)
    else:
        limits = stock_limits
    transport._pool = IndexedPool(
        ssl_context=stock._ssl_context,
        max_connections=limits[0],
        max_keepalive_connections=limits[1],
        keepalive_expiry=limits[2],
        http1=stock._http1,
        retries=stock._retries,
        local_address=stock._local_address,
        uds=stock._uds,
        network_backend=stock._network_backend,
        socket_options=stock._socket_options,
    )
    return client


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

        def get_client(self) -> aiohttp.ClientSession:
            """httpx-aiohttp's session (its connector, with these limits), with a cookie jar that keeps
            nothing: aiohttp's own jar keeps a provider's Set-Cookie for its host (not for an IP address)
            and sends it on every later request there, one tenant's cookie on another's call. httpx's
            client above keeps none (:func:`_cookieless`); the session below must not either."""
            connector = aiohttp.TCPConnector(
                limit=connections, keepalive_timeout=KEEPALIVE_EXPIRY_S, ssl=self.ssl_context
            )
            return aiohttp.ClientSession(
                connector=connector, cookie_jar=aiohttp.DummyCookieJar(),
                max_line_size=HEAD_LINE_BYTES, max_field_size=HEAD_LINE_BYTES, max_headers=HEAD_FIELDS,
            )  # fmt: skip

        def session(self) -> aiohttp.ClientSession:
            """The aiohttp session ``handle_async_request`` sends through (made on first use, as there)."""
            if not isinstance(self.client, aiohttp.ClientSession):
                self.client = self.get_client()
            return self.client

    transport = _Transport(limits=_limits(connections))
    transport.direct = DirectPost(transport.session, translate, aiohttp.ClientError, aiohttp.ClientTimeout)  # type: ignore[attr-defined]
    return transport


def direct_post(client: httpx.AsyncClient, url: httpx.URL) -> DirectPost | None:
    """The aiohttp session under ``client`` for a POST to ``url``, when httpx's client would add
    nothing to it: ``client`` is a plain ``httpx.AsyncClient`` over routeproof's own aiohttp transport
    (:func:`make_client`; no proxy mount for ``url``), with no auth, no cookies, no event hooks and
    redirects not followed. Else None, and the request goes through ``client.send``.

    What httpx's client adds around that transport (the auth and redirect loops, the cookie jar, the
    httpx request and response objects and their header conversions) was about a fifth of the
    gateway's CPU per call (``benchmarks/gateway_ab.py``)."""
    if type(client) is not httpx.AsyncClient:
        return None  # a subclass may change what send does
    direct: DirectPost | None = getattr(client._transport_for_url(url), "direct", None)
    if direct is None or client.auth is not None or client.follow_redirects or client.cookies:
        return None
    hooks = client.event_hooks
    if hooks["request"] or hooks["response"]:
        return None
    return direct


HEAD_LINE_BYTES = 128 * 1024
"""The longest status line, header name or header value the aiohttp session reads (aiohttp's own
bound: 8,190 bytes). httpx's transport reads any head up to 100 KiB (httpcore's
``MAX_INCOMPLETE_EVENT_SIZE``), and one up to 164 KiB when its 64 KiB reads happen to complete it
(h11 checks the bound only on a head still incomplete): every header within httpx's sure bound is
read here too. Past aiohttp's own bound a provider's answer, a 4xx with a long header included, was a
reset connection (CONN_RESET, retried) where httpx read it whole."""

HEAD_FIELDS = 256
"""The most header lines the aiohttp session reads in one answer (aiohttp's own bound: 128; httpx has
none, only the head's size). At :data:`HEAD_LINE_BYTES` each, a head stays within the 32 MiB a body may
be (``providers._http.DEFAULT_MAX_RESPONSE_BYTES``)."""


def headers_of(response: Any) -> Mapping[str, str]:
    """An aiohttp answer's headers as httpx reads the same bytes. aiohttp decodes each value as UTF-8,
    a byte that is not as a lone surrogate (``caf\\udce9``); httpx reads the whole head as ASCII, else
    UTF-8, else Latin-1 (``café``). When every value is ASCII (nearly always: one join and one check)
    the two agree and aiohttp's headers are kept; otherwise they are httpx's."""
    headers: Mapping[str, str] = response.headers
    if "".join(headers.values()).isascii():
        return headers
    return httpx.Headers(response.raw_headers)


class DirectPost:
    """One POST on routeproof's aiohttp transport's session, without httpx: what
    ``httpx-aiohttp``'s ``handle_async_request`` asks of aiohttp, with the same headers, timeouts and
    exception translation (:data:`AIOHTTP_TO_HTTPX`). Bodies come undecoded, as there: a caller
    decodes a ``content-encoding`` as httpx does."""

    __slots__ = ("_errors", "_session", "_timeout_type", "_translate")

    def __init__(
        self,
        session: Callable[[], Any],
        translate: Callable[[Exception], Exception],
        errors: type[Exception],
        timeout_type: Callable[..., Any],
    ) -> None:
        self._session = session
        self._translate = translate
        self._errors = errors
        self._timeout_type = timeout_type

    def post(
        self,
        url: str,
        headers: list[tuple[str, str]],
        content: bytes,
        *,
        connect_s: float,
        read_s: float | None,
        pool_s: float,
    ) -> DirectAnswer:
        """``async with direct.post(...) as response``: an ``aiohttp.ClientResponse`` (headers read),
        released on exit; aiohttp's errors, in or out of the block, raised as httpx's. The bounds are
        an ``httpx.Timeout``'s as ``httpx-aiohttp`` passes them on (``read_s`` None: reads unbounded)."""
        timeout = self._timeout_type(sock_connect=connect_s, sock_read=read_s, connect=pool_s)
        request = self._session().request(
            "POST", url, headers=headers, data=content or None, allow_redirects=False,
            auto_decompress=False, compress=False, timeout=timeout,
        )  # fmt: skip
        return DirectAnswer(request, self._translate, self._errors)


class DirectAnswer:
    """:meth:`DirectPost.post`'s block."""

    __slots__ = ("_errors", "_request", "_response", "_translate")

    def __init__(self, request: Any, translate: Callable[[Exception], Exception], errors: type[Exception]) -> None:
        self._request = request
        self._translate = translate
        self._errors = errors
        self._response: Any = None

    async def __aenter__(self) -> Any:
        try:
            self._response = await self._request.__aenter__()
        except self._errors as exc:
            raise self._translate(exc) from exc
        return self._response

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        try:
            await self._request.__aexit__(exc_type, exc, tb)
        except self._errors as error:
            raise self._translate(error) from error
        if isinstance(exc, self._errors):
            raise self._translate(exc) from exc

    async def chunks(self) -> AsyncIterator[bytes]:
        """The entered response's body as it arrives, in the pieces ``httpx-aiohttp`` reads
        (:data:`STREAM_CHUNK_BYTES` at most); aiohttp's errors raised as httpx's, as there."""
        try:
            async for chunk in self._response.content.iter_chunked(STREAM_CHUNK_BYTES):
                yield chunk
        except self._errors as exc:
            raise self._translate(exc) from exc


STREAM_CHUNK_BYTES = 16 * 1024
"""The most :meth:`DirectAnswer.chunks` yields at once: ``httpx_aiohttp.AiohttpResponseStream.CHUNK_SIZE``."""
