"""The gateway as a plain ASGI app: OpenAI- and Anthropic-shaped endpoints over one Router.

    POST /v1/chat/completions   OpenAI Chat Completions, streamed (``"stream": true``) or not
    POST /v1/messages           Anthropic Messages, streamed or not
    GET  /v1/models             the configured aliases (Anthropic's list shape when the request
                                carries ``anthropic-version``, OpenAI's otherwise)
    GET  /healthz, /readyz      liveness; readiness (200 once started, 503 before and while stopping)
    GET  /metrics               the router's metrics in the Prometheus text format

A request is authenticated by its gateway key (``Authorization: Bearer KEY`` or ``x-api-key: KEY``),
which names the tenant whose policy resolves ``model`` (an alias). The caller's deadline is the
``x-routeproof-deadline-ms`` header (relative milliseconds, capped at the 30 s budget; absent means
30 s). A successful answer carries its attempt records in the ``x-routeproof-attempts`` header (a
JSON list); a failed one in the error body's ``routeproof`` field (see ``failures.py``).

While a call runs, the app listens for the client's disconnect; a disconnect cancels the call, so no
provider request starts after it. No framework: a measured Starlette layer doubled the per-request
overhead (``benchmarks/asgi_stack_probe.py``) and the app needs none of its routing.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import time
import uuid
from collections.abc import Awaitable, Callable, Coroutine, MutableMapping
from dataclasses import dataclass, fields, replace
from typing import Any

import orjson
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import NonRecordingSpan

from routeproof.clock import s_of_ms
from routeproof.core.constants import FAILOVER_BUDGET_MS, STREAM_INTERRUPTED
from routeproof.core.formats.answer_drops import answer_drops, citation_drops, stream_answer_drops
from routeproof.core.formats.passthrough import OUTPUT_CAP_FIELDS, untranslated_fields
from routeproof.core.formats.relay import relays
from routeproof.core.formats.responses_api import responses_estimate, responses_to_chat
from routeproof.core.formats.translate import read_anthropic_request, read_openai_request
from routeproof.core.messages import WireFormat, WireOrigin
from routeproof.core.routing import build_chain
from routeproof.core.types import AttemptRecord, ChatRequest, ProviderResponse, StreamError, StreamEvent
from routeproof.errors import RouterError, TranslationError
from routeproof.gateway.anthropic_wire import AnthropicStream, message
from routeproof.gateway.backend import Backend, Route, protocol_of
from routeproof.gateway.disconnect import ClientGone, run_until_disconnect
from routeproof.gateway.edge import (
    COMPACT_JSON,
    Refused,
    admitted,
    check_content_type,
    deadline_ms,
    read_headers,
    read_json,
    readiness,
    shutdown_answer,
    tenant_admission,
)
from routeproof.gateway.failures import Api, Failure, attempt_json, error_body, failure_for, failure_headers
from routeproof.gateway.openai_wire import OpenAIStream, completion
from routeproof.gateway.relay import FrameRelay
from routeproof.gateway.responses_wire import ResponsesRelay, ResponsesStream, own_response, response_object
from routeproof.gateway.settings import Tenant
from routeproof.gateway.telemetry import MetricsSource, metrics_text, trace_context
from routeproof.observe import tracing_is_noop
from routeproof.traffic_store.port import Traffic
from routeproof.traffic_store.tenant_limits import tenant_rate_limit

__all__ = ["ATTEMPTS_HEADER", "DEADLINE_HEADER", "DEFAULT_MAX_TOKENS", "DROPPED_HEADER", "GatewayApp"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

DEADLINE_HEADER = "x-routeproof-deadline-ms"
"""The caller's deadline: relative milliseconds from the request's arrival, capped at 30 000."""
ATTEMPTS_HEADER = "x-routeproof-attempts"
"""A success's attempt records, as a JSON list (the items of the error body's ``routeproof.attempts``)."""
DROPPED_HEADER = "x-routeproof-dropped"
"""The request fields (and ``header:NAME`` feature headers) the answering provider was sent without, and
what of its answer the caller's shape has no place for (``thinking.signature``), comma-separated."""
DEFAULT_MAX_TOKENS: int = next(f.default for f in fields(ChatRequest) if f.name == "max_tokens")  # type: ignore[assignment]  # the field default, an int
"""The parse's placeholder cap for an OpenAI request that sets none; replaced by the route's documented
maximum output before the call (it is never sent: no cap is invented for an OpenAI request)."""
_ORIGIN = {Api.OPENAI: WireFormat.OPENAI_CHAT, Api.ANTHROPIC: WireFormat.ANTHROPIC_MESSAGES}
_SHAPE = {**_ORIGIN, Api.RESPONSES: WireFormat.OPENAI_RESPONSES}
"""The shape each API answers in (what ``core/formats/answer_drops.py`` judges an answer against)."""
_API_BY_PATH = {"/v1/chat/completions": Api.OPENAI, "/v1/messages": Api.ANTHROPIC, "/v1/responses": Api.RESPONSES}
"""The chat endpoints speak one API each; elsewhere ``anthropic-version`` says the client is Anthropic's."""
_ROUTES = {
    "/v1/chat/completions": "POST",
    "/v1/messages": "POST",
    "/v1/responses": "POST",
    "/v1/models": "GET",
    "/healthz": "GET",
    "/readyz": "GET",
    "/metrics": "GET",
}
"""Each path and the one method it takes."""
_TRACE_HEADERS = ("traceparent", "tracestate")
_JSON = (b"content-type", b"application/json")
_ATTEMPTS = ATTEMPTS_HEADER.encode()
_SSE = (b"content-type", b"text/event-stream")


@functools.lru_cache(maxsize=8)
def _tracer(provider: trace.TracerProvider) -> trace.Tracer:
    """One tracer per provider: an SDK ``get_tracer`` per request cost about as much as the span itself."""
    return provider.get_tracer("routeproof.gateway")


class _Reject(Exception):
    """A request refused before it reached the router; carries the answer."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.message)
        self.failure = failure


async def _send_json(send: Send, status: int, body: object, headers: tuple[tuple[bytes, bytes], ...] = ()) -> None:
    """``body`` as compact JSON (bytes: JSON text already, sent as they are)."""
    data = body if isinstance(body, bytes) else COMPACT_JSON.encode(body).encode()
    length = (b"content-length", str(len(data)).encode())
    await send({"type": "http.response.start", "status": status, "headers": [_JSON, length, *headers]})
    await send({"type": "http.response.body", "body": data})


def _headers(scope: Scope) -> dict[str, str]:
    return read_headers(scope["headers"])  # edge.py: a single-valued header sent twice is refused


def _attempts_header(attempts: tuple[AttemptRecord, ...]) -> tuple[bytes, bytes]:
    """The attempts as compact ASCII JSON (a header value): orjson's bytes when they are printable ASCII
    (labels, models, statuses, numbers: nearly always), else the standard encoder's, which escapes the
    rest (orjson writes a DEL as it is, the standard encoder as ``\u007f``; every other byte alike)."""
    records = [attempt_json(a) for a in attempts]
    value = orjson.dumps(records)
    return _ATTEMPTS, value if value.isascii() and b"\x7f" not in value else COMPACT_JSON.encode(records).encode()


@dataclass(frozen=True, slots=True, kw_only=True)
class _Job:
    """One accepted API request: who answers it and within how long."""

    api: Api
    route: Route
    req: ChatRequest
    timeout_s: float
    echo_json: str = "{}"  # Responses API only: the request fields a response object repeats
    rewrite_dropped: tuple[str, ...] = ()  # Responses API only: what its Chat rewriting leaves out

    def within(self, timeout_s: float) -> _Job:
        """This job with ``timeout_s`` left (every field named: ``dataclasses.replace`` is slower)."""
        return _Job(
            api=self.api, route=self.route, req=self.req, timeout_s=timeout_s, echo_json=self.echo_json,
            rewrite_dropped=self.rewrite_dropped,
        )  # fmt: skip


class GatewayApp:
    """The ASGI application. ``backend`` is started (its health store) at lifespan startup, before
    any request is accepted, and closed at lifespan shutdown."""

    def __init__(self, backend: Backend, *, metrics_reader: MetricsSource | None = None) -> None:
        self.backend = backend
        self.ready = False
        self.in_flight = 0
        self._metrics_reader = metrics_reader
        limits = {t.name: (t.rpm, t.tpm) for t in backend.settings.tenants}  # per-tenant rpm/tpm (issue 32)
        self.tenancy = tenant_admission(backend.settings, tenant_rate_limit(limits, backend.router.traffic_store))
        self.shutting_down: Callable[[], bool] = lambda: False  # server.py: True once uvicorn is stopping

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        elif scope["type"] == "http":
            await self._http(scope, receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            event = await receive()
            if event["type"] == "lifespan.startup":
                await self.backend.start()  # before the first request: shared health is loaded
                self.ready = True
                await send({"type": "lifespan.startup.complete"})
            elif event["type"] == "lifespan.shutdown":
                self.ready = False
                await self.backend.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        method, path = scope["method"], scope["path"]
        try:
            headers = _headers(scope)
        except Refused as refused:
            api = _API_BY_PATH.get(path) or Api.OPENAI
            await _send_json(send, refused.failure.status, error_body(api, refused.failure))
            return
        api = _API_BY_PATH.get(path) or (Api.ANTHROPIC if "anthropic-version" in headers else Api.OPENAI)
        routes = _ROUTES
        if path not in routes:
            failure = Failure(status=404, code="not_found", message=f"no route {path!r}")
            await _send_json(send, 404, error_body(api, failure))
            return
        if method != routes[path]:
            failure = Failure(status=405, code="method_not_allowed", message=f"{path!r} takes {routes[path]}")
            await _send_json(send, 405, error_body(api, failure), ((b"allow", routes[path].encode()),))
            return
        if path == "/healthz":
            await _send_json(send, 200, {"status": "ok"})
        elif path == "/readyz":
            status, body = readiness(self.ready, self.tenancy)  # edge.py: saturation per tenant
            await _send_json(send, status, body)
        elif path == "/metrics":
            text = metrics_text(self._metrics_reader)
            content_type = (b"content-type", b"text/plain; version=0.0.4; charset=utf-8")
            await send({"type": "http.response.start", "status": 200, "headers": [content_type]})
            await send({"type": "http.response.body", "body": text.encode()})
        else:
            self.in_flight += 1
            try:
                await self._api(api, scope, headers, receive, send)
            except (_Reject, Refused) as reject:
                failure = reject.failure
                await _send_json(send, failure.status, error_body(api, failure), failure_headers(failure))
            except ClientGone:
                pass  # the call was cancelled; there is nobody to answer
            except asyncio.CancelledError:
                if not self.shutting_down():
                    raise
                await shutdown_answer(api, send)  # edge.py: uvicorn cut it past the grace period; no traceback
            finally:
                self.in_flight -= 1

    def _tenant(self, headers: dict[str, str]) -> Tenant:
        presented = headers.get("x-api-key")
        authorization = headers.get("authorization", "")
        if presented is None and authorization[:7].lower() == "bearer ":
            presented = authorization[7:].strip()
        tenant = self.backend.settings.tenant_for(presented)
        if tenant is None:
            raise _Reject(Failure(status=401, code="invalid_api_key", message="invalid gateway key"))
        return tenant

    async def _api(self, api: Api, scope: Scope, headers: dict[str, str], receive: Receive, send: Send) -> None:
        tenant = self._tenant(headers)
        path = scope["path"]
        if path == "/v1/models":
            await _send_json(send, 200, self._models(api))
            return
        check_content_type(headers.get("content-type"))
        body = await self._body(headers, receive)
        echo_json = "{}"
        rewrite_dropped: tuple[str, ...] = ()  # Responses API: what its Chat rewriting leaves out
        forward = tuple((h, headers[h]) for h in self.backend.settings.forward_headers if h in headers)
        refusal: str | None = None  # Responses API: why the request has no Chat form (verbatim only)
        caller: dict[str, Any] | None = None  # the body as parsed (the Responses API: its Chat rewriting's, later)
        output_cap = functools.partial(self._output_cap, tenant)
        if api is Api.RESPONSES:
            req, model, stream, echo_json, refusal, rewrite_dropped = _parse_responses(body, forward, output_cap)
            include_usage = True
        else:
            req, model, stream, include_usage, caller = _parse(api, body, forward, output_cap)
        route = self.backend.route(tenant, model)
        if route is None:
            message_text = f"model {model!r} is not configured (known: {list(self.backend.aliases)!r})"
            raise _Reject(Failure(status=404, code="model_not_found", message=message_text))
        if refusal is not None and not self._responses_capable(route):  # none can honour it: never faked
            raise _Reject(Failure(status=400, code="invalid_request", message=refusal))
        self._fit_to_route(route, req, caller)
        if api is Api.RESPONSES:  # the caller's own Responses body: verbatim where the API is served
            req = replace(req, origin=WireOrigin(protocol=WireFormat.OPENAI_RESPONSES, body_json=body.decode(),
                                                 headers=forward))  # fmt: skip
        timeout_s = _timeout_s(headers.get(DEADLINE_HEADER))
        job = _Job(
            api=api, route=route, req=req, timeout_s=timeout_s, echo_json=echo_json, rewrite_dropped=rewrite_dropped
        )

        def answer_for(admitted: _Job) -> Coroutine[Any, Any, None]:
            return self._stream(admitted, include_usage, send) if stream else self._call(admitted, send)

        answer = self._admitted(tenant, job, answer_for)
        if any(name in headers for name in _TRACE_HEADERS):  # the caller's trace continues as our child
            answer = _in_server_span(path, trace_context(headers), answer)
        # Untraced: no server span. The sampler records no trace the gateway starts itself
        # (ParentBased(ALWAYS_OFF)), so that span did nothing but cost about a tenth of the app's CPU.
        await run_until_disconnect(scope, receive, answer)

    async def _admitted(
        self, tenant: Tenant, job: _Job, answer_for: Callable[[_Job], Coroutine[Any, Any, None]]
    ) -> None:
        """Answer ``job`` within one of ``tenant``'s slots (edge.py's ``admitted``), its deadline less the wait."""
        tokens = Traffic.estimate_tokens(job.req) if self.tenancy.counts_tokens else 0  # (it walks every turn)
        async with admitted(self.tenancy, tenant.name, job.timeout_s, tokens) as timeout_s:
            await answer_for(job if timeout_s == job.timeout_s else job.within(timeout_s))

    def _fit_to_route(self, route: Route, req: ChatRequest, caller: dict[str, Any] | None) -> None:
        """A 400 when no provider of ``route`` can carry a field of ``req``. ``caller``: the origin's
        body as parsed already (None: parsed here)."""
        origin = req.origin
        assert origin is not None  # the gateway always keeps the caller's request
        if self.backend.carries_as_is(route, origin.protocol):  # the body goes as it is: no field to judge
            return
        if caller is None:
            caller = json.loads(origin.body_json)
        fields = untranslated_fields(origin.protocol, caller)
        refused = self.backend.refused_everywhere(route, origin.protocol, fields, request=req)
        if refused is not None:
            raise _Reject(Failure(status=400, code="invalid_request", message=refused))

    def _output_cap(self, tenant: Tenant, model: str) -> int:
        """The output tokens a request to ``model`` with no output cap reserves: the largest documented
        maximum output of its route's chain (``Backend.output_reservation``), so no provider of the
        chain can bill past the reservation; the ChatRequest default when ``model`` has no route (404)."""
        route = self.backend.route(tenant, model)
        return DEFAULT_MAX_TOKENS if route is None else self.backend.output_reservation(route)

    def _responses_capable(self, route: Route) -> bool:
        """Whether a provider of ``route``'s chain serves OpenAI's Responses API (``responses_api = true``)."""
        names = {p.name for p in self.backend.config.providers if p.responses_api}
        return any(str(entry.provider) in names for entry in build_chain(route.resolved, route.policy))

    def _models(self, api: Api) -> dict[str, Any]:
        if api is Api.ANTHROPIC:
            data = [
                {"type": "model", "id": a, "display_name": a, "created_at": "1970-01-01T00:00:00Z"}
                for a in self.backend.aliases
            ]
            first, last = self.backend.aliases[0], self.backend.aliases[-1]
            return {"data": data, "has_more": False, "first_id": first, "last_id": last}
        models = [{"id": a, "object": "model", "created": 0, "owned_by": "routeproof"} for a in self.backend.aliases]
        return {"object": "list", "data": models}

    async def _body(self, headers: dict[str, str], receive: Receive) -> bytes:
        limit = self.backend.settings.max_body_bytes
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            raise _too_large(limit)
        chunks, size = [], 0
        while True:
            event = await receive()
            if event["type"] == "http.disconnect":
                raise ClientGone
            chunk = event.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise _too_large(limit)
            chunks.append(chunk)
            if not event.get("more_body", False):
                return b"".join(chunks)

    async def _call(self, job: _Job, send: Send) -> None:
        api = job.api
        try:
            resp = await self.backend.call(job.route, job.req, job.timeout_s)
        except RouterError as exc:
            failure = failure_for(exc)
            await _send_json(send, failure.status, error_body(api, failure), failure_headers(failure))
            return
        own = own_response(resp) if api is Api.RESPONSES else _own_answer(api, resp)
        lost: tuple[str, ...]
        if own is not None:  # the provider's own answer, relayed whole
            body, lost = own, ()
        elif api is Api.RESPONSES:  # answered through the Chat rewriting: what it left out, too
            response_id, echo = f"resp_rp{uuid.uuid4().hex}", json.loads(job.echo_json)
            body = response_object(resp, response_id=response_id, created_at=int(time.time()), echo=echo)
            lost = job.rewrite_dropped + answer_drops(_SHAPE[api], resp.choices[0])
        else:
            body = message(resp) if api is Api.ANTHROPIC else completion(resp, created=int(time.time()))
            lost = answer_drops(_SHAPE[api], resp.choices[0])
        kind = None if resp.provider is None else resp.provider.kind
        lost += citation_drops(_SHAPE[api], None if kind is None else protocol_of(kind), job.req)
        dropped = resp.dropped_parameters + tuple(name for name in lost if name not in resp.dropped_parameters)
        await _send_json(send, 200, body, (_attempts_header(resp.attempts), *_dropped_header(dropped)))

    async def _stream(self, job: _Job, include_usage: bool, send: Send) -> None:
        api = job.api
        stream = self.backend.stream(job.route, job.req, job.timeout_s)
        try:
            try:  # up to the first event the call may still fail as a whole: answer with a status
                first: StreamEvent = await anext(stream)
            except RouterError as exc:
                failure = failure_for(exc)
                await _send_json(send, failure.status, error_body(api, failure), failure_headers(failure))
                return
            kind = None if stream.provider is None else stream.provider.kind
            provider = None if kind is None else protocol_of(kind)
            encoder: AnthropicStream | OpenAIStream | ResponsesStream | ResponsesRelay | FrameRelay
            if api is Api.RESPONSES and ResponsesRelay.relays(first):  # OpenAI's own events, verbatim
                encoder = ResponsesRelay()
            elif api is Api.RESPONSES:
                encoder = ResponsesStream(
                    response_id=f"resp_rp{uuid.uuid4().hex}", model=stream.model,
                    created_at=int(time.time()), echo=json.loads(job.echo_json),
                )  # fmt: skip
            elif api is Api.ANTHROPIC:
                encoder = AnthropicStream(response_id=f"msg_rp{uuid.uuid4().hex}", model=stream.model)
            else:
                encoder = OpenAIStream(
                    response_id=f"chatcmpl-rp{uuid.uuid4().hex}", model=stream.model,
                    created=int(time.time()), include_usage=include_usage,
                )  # fmt: skip
            if relays(_SHAPE[api], provider, first):  # the provider's own frames, as core/formats/relay.py keeps them
                encoder = FrameRelay(_SHAPE[api], caller_usage=include_usage, cut=encoder.encode)
            headers = [_SSE, (b"cache-control", b"no-cache"), _attempts_header(stream.attempts)]
            # known once the stream is committed: the request's drops, and what of the answer this shape
            # cannot carry (named up front: the header goes before the first event)
            lost = stream_answer_drops(_SHAPE[api], provider, job.req) + citation_drops(_SHAPE[api], provider, job.req)
            if isinstance(encoder, ResponsesStream):  # answered through the Chat rewriting: what it left out
                lost = job.rewrite_dropped + lost
            dropped = stream.dropped_parameters + tuple(n for n in lost if n not in stream.dropped_parameters)
            headers += _dropped_header(dropped)
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": encoder.encode(first), "more_body": True})
            try:
                async for event in stream:
                    await send({"type": "http.response.body", "body": encoder.encode(event), "more_body": True})
            except asyncio.CancelledError:  # shutdown past the grace period: say so, then stop
                cut = encoder.encode(StreamError(message=f"{STREAM_INTERRUPTED}: the gateway is shutting down"))
                with contextlib.suppress(OSError):  # best effort: the client may be gone (a disconnect)
                    await send({"type": "http.response.body", "body": cut})
                raise
            await send({"type": "http.response.body", "body": b""})
        finally:
            await stream.aclose()


async def _in_server_span(path: str, parent: Context, work: Coroutine[Any, Any, None]) -> None:
    """``work`` inside a SERVER span continuing the caller's trace ``parent``.

    Without an SDK the no-op tracer's span is the caller's own (non-recording) one: it is made
    current directly, as the no-op tracer would, without the tracer's per-request work."""
    if tracing_is_noop():
        span = trace.get_current_span(parent)
        if not isinstance(span, NonRecordingSpan):
            span = NonRecordingSpan(span.get_span_context())
        token = otel_context.attach(trace.set_span_in_context(span))
        try:
            await work
        finally:
            otel_context.detach(token)
        return
    with _tracer(trace.get_tracer_provider()).start_as_current_span(path, context=parent, kind=trace.SpanKind.SERVER):
        await work


def _own_answer(api: Api, resp: ProviderResponse) -> bytes | None:
    """A same-protocol answer as its provider gave it, every field kept (reasoning tokens, logprobs,
    refusal, annotations, thinking blocks and signatures, cache usage): the provider's JSON object as
    it wrote it (``providers._http.own_json``); None when it crossed protocols."""
    kind = None if resp.provider is None else resp.provider.kind
    own = resp.wire_body_json
    if own is None or kind is None or protocol_of(kind) is not _ORIGIN.get(api) or own.lstrip()[:1] != "{":
        return None
    return own.encode()


def _dropped_header(dropped: tuple[str, ...]) -> tuple[tuple[bytes, bytes], ...]:
    return ((DROPPED_HEADER.encode(), ",".join(dropped).encode()),) if dropped else ()


def _too_large(limit: int) -> _Reject:
    return _Reject(Failure(status=413, code="request_too_large", message=f"request body over {limit} bytes"))


def _parse(
    api: Api, body: bytes, forward: tuple[tuple[str, str], ...], output_cap: Callable[[str], int]
) -> tuple[ChatRequest, str, bool, bool, dict[str, Any]]:
    """The request (keeping the caller's own body and ``forward`` headers as its origin), its model
    alias, whether it streams, whether it wants usage in the stream, and the caller's body as parsed.

    A request with no output cap (OpenAI's are optional) reserves ``output_cap(alias)`` output tokens:
    the ledger's reservation, never sent. Built once, with every field the gateway sets.
    """
    data: Any = read_json(body)  # edge.py: depth limit, surrogates, NaN, digit limit -> 400
    if not isinstance(data, dict):
        raise _Reject(
            Failure(status=400, code="invalid_request", message=f"body must be a JSON object, got {data!r:.80}")
        )
    try:
        parts = read_anthropic_request(data) if api is Api.ANTHROPIC else read_openai_request(data)
        extras = parts.extras
        given: dict[str, Any] = {
            "alias": extras.model,  # the alias the route resolves (core/routing.resolve keeps it): no rebuild there
            # judged per cross-protocol provider
            "origin": WireOrigin(
                protocol=_ORIGIN[api],
                body_json=body.decode(),
                headers=forward,
                untranslated=extras.untranslated,
                parsed=data,
            ),
        }
        if parts.fields["tool_choice"] is not None and not parts.fields["tools"]:
            given["tool_choice"] = None  # a tool_choice with no tools has nothing to choose
        cache_key = data.get("prompt_cache_key")  # OpenAI's own cache key: cache affinity's key too
        if isinstance(cache_key, str) and cache_key:  # (still sent to OpenAI verbatim, as before)
            given["cache_affinity_key"] = cache_key
        if api is not Api.ANTHROPIC and _OPENAI_CAPS.isdisjoint(data):  # no cap set: none is sent
            given["max_tokens"] = output_cap(extras.model)
        req = parts.build(**given)
    except (TranslationError, ValueError) as exc:
        raise _Reject(Failure(status=400, code="invalid_request", message=str(exc))) from exc
    options = data.get("stream_options")
    include_usage = isinstance(options, dict) and options.get("include_usage") is True
    return req, extras.model, extras.stream is True, include_usage, data


_OPENAI_CAPS = frozenset(OUTPUT_CAP_FIELDS[WireFormat.OPENAI_CHAT])
"""A Chat Completions body with none of these keys set no output cap."""


def _parse_responses(
    body: bytes, forward: tuple[tuple[str, str], ...], output_cap: Callable[[str], int]
) -> tuple[ChatRequest, str, bool, str, str | None, tuple[str, ...]]:
    """A Responses API request: the request, its model alias, whether it streams, its echo fields,
    why it has no Chat Completions form (None when it has one), and what its Chat form leaves out.

    The body is rewritten to the equivalent Chat Completions body (``core/formats/responses_api.py``): the
    router decides on it, and providers without the Responses API are sent it. A request with a field
    only the Responses API carries (stateful, a hosted tool, a field newer than this code) is sized
    by a text-only estimate; it goes only to providers with the API, verbatim (the caller refuses it
    with a 400 naming the field when the route has none).
    """
    data: Any = read_json(body)  # edge.py: depth limit, surrogates, NaN, digit limit -> 400
    if not isinstance(data, dict):
        raise _Reject(
            Failure(status=400, code="invalid_request", message=f"body must be a JSON object, got {data!r:.80}")
        )
    refusal = None
    try:
        rewritten = responses_to_chat(data)
    except TranslationError as exc:
        refusal, rewritten = str(exc), responses_estimate(data)
    req, model, stream, _, _ = _parse(Api.OPENAI, rewritten.chat_json.encode(), forward, output_cap)
    return req, model, stream, rewritten.echo_json, refusal, rewritten.dropped


def _timeout_s(raw: str | None) -> float:
    """The caller's deadline header as seconds from now, capped at the 30 s budget."""
    if raw is None:
        return s_of_ms(FAILOVER_BUDGET_MS)
    return s_of_ms(min(deadline_ms(raw, DEADLINE_HEADER), FAILOVER_BUDGET_MS))
