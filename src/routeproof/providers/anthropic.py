"""Anthropic Messages API client: ``POST {base_url}/v1/messages`` with ``x-api-key``."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

import httpx

from routeproof.config.read import check_secret
from routeproof.core.capabilities import ANTHROPIC_API_VERSION, CapabilityTable, ModelCapabilities, fit_request
from routeproof.core.formats.normalize import normalize_anthropic
from routeproof.core.formats.sse import MAX_LINE_CHARS, StreamDecoder, WireProtocol
from routeproof.core.formats.translate import request_to_anthropic
from routeproof.core.messages import WireFormat
from routeproof.core.types import ChatRequest, ProviderKind, ProviderResponse, StreamEvent
from routeproof.providers._http import (
    DEFAULT_MAX_RESPONSE_BYTES,
    encode_json,
    normalize_or_fail,
    own_json,
    post_json,
    stamp,
)
from routeproof.providers._passthrough import Outgoing, log_dropped, outgoing_body
from routeproof.providers._stream import stream_events
from routeproof.providers.capabilities import default_capabilities, fit_for
from routeproof.transport import adopt_client, make_client

__all__ = ["ANTHROPIC_VERSION", "DEFAULT_BASE_URL", "AnthropicProvider"]

ANTHROPIC_VERSION = ANTHROPIC_API_VERSION
DEFAULT_BASE_URL = "https://api.anthropic.com"


class AnthropicProvider:
    """One Anthropic endpoint. Uses the router's pooled client; makes its own only if given none."""

    __slots__ = (
        "_api_key",
        "_capabilities",
        "_client",
        "_max_response_bytes",
        "_max_sse_line_chars",
        "_owns_client",
        "base_url",
        "kind",
        "name",
    )

    def __init__(
        self,
        *,
        api_key: str,
        client: httpx.AsyncClient | None = None,
        base_url: str = DEFAULT_BASE_URL,
        name: str = "anthropic",
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        capabilities: CapabilityTable | None = None,
        max_sse_line_chars: int | None = MAX_LINE_CHARS,
    ) -> None:
        if not api_key:
            raise ValueError(f"{name!r}: an Anthropic API key is required")
        check_secret(repr(name), "api_key", api_key)  # never the value; never to httpcore's DEBUG log
        self.kind = ProviderKind.ANTHROPIC
        self.name = name
        self.base_url: str | None = base_url.rstrip("/")
        self._api_key = api_key
        if max_response_bytes < 1:
            raise ValueError(f"max_response_bytes must be >= 1, got {max_response_bytes!r}")
        self._max_response_bytes = max_response_bytes
        self._max_sse_line_chars = max_sse_line_chars
        self._capabilities = capabilities if capabilities is not None else default_capabilities()
        self._owns_client = client is None
        self._client = adopt_client(client) if client is not None else make_client()  # measured default: transport.py

    def __repr__(self) -> str:
        return f"AnthropicProvider(name={self.name!r}, base_url={self.base_url!r})"

    def _headers(self, caps: ModelCapabilities, out: Outgoing) -> dict[str, str]:
        headers = dict(out.headers)  # the caller's allowed feature headers (anthropic-beta)
        headers["x-api-key"] = self._api_key
        headers["anthropic-version"] = caps.api_version or ANTHROPIC_VERSION
        return headers

    def _body(
        self, request: ChatRequest, model: str, *, stream: bool
    ) -> tuple[dict[str, Any], Outgoing, ModelCapabilities]:
        """The wire body for ``model``, what goes with it (headers, what was left out), and the
        model's capabilities.

        The caller's own Anthropic request (``request.origin``) is sent as received but for the
        router's fields (``providers._passthrough``); otherwise the neutral request is translated.
        What the model rejects is left out (or UnsupportedParameters); a field this protocol cannot
        carry raises RefusedFields (this provider is skipped).
        """
        fitted, caps = fit_for(self._capabilities, self.kind, request, model)
        out = outgoing_body(request, fitted, caps, target=WireFormat.ANTHROPIC_MESSAGES, model=model, stream=stream)
        # fit_for logged the capability drops; the cross-protocol ones are logged here
        log_dropped(self.kind, model, out.dropped[len(fitted.dropped) :] if out.body is None else ())
        if out.body is not None:
            return out.body, out, caps
        body = request_to_anthropic(fitted.request, model)
        if out.max_tokens is not None:
            body["max_tokens"] = out.max_tokens
        if stream:
            body["stream"] = True
        return body, out, caps

    async def complete(self, request: ChatRequest, model: str, *, timeout_at: float) -> ProviderResponse:
        """One Messages API call, normalised; failures raise ``ProviderCallFailed``."""
        secrets = (self._api_key,)
        body, out, caps = self._body(request, model, stream=False)
        dropped = out.dropped
        reply = await post_json(
            self._client,
            f"{self.base_url}/v1/messages",
            content=encode_json(body),
            headers=self._headers(caps, out),
            timeout_at=timeout_at,
            secrets=secrets,
            max_response_bytes=self._max_response_bytes,
        )
        response = normalize_or_fail(normalize_anthropic, reply, secrets=secrets)
        # same protocol: the caller gets the provider's own answer, every field of it
        wire = own_json(reply) if out.body is not None else None
        return stamp(response, self.kind, model, wire_body_json=wire, dropped=dropped)

    def dropped_parameters(self, request: ChatRequest, model: str) -> tuple[str, ...]:
        """The parameters of ``request`` that ``model`` does not accept or this protocol cannot carry (left out)."""
        caps = self._capabilities.lookup(self.kind, model)
        fitted = fit_request(request, caps)
        target = WireFormat.ANTHROPIC_MESSAGES
        return outgoing_body(request, fitted, caps, target=target, model=model, stream=True).dropped

    def stream(
        self, request: ChatRequest, model: str, *, timeout_at: float, idle_timeout_s: float | None = None
    ) -> AsyncGenerator[StreamEvent, None]:
        """One streamed Messages API call (``"stream": true``) as events; see ``providers._stream``."""
        body, out, caps = self._body(request, model, stream=True)
        return stream_events(
            self._client,
            f"{self.base_url}/v1/messages",
            content=encode_json(body),
            headers=self._headers(caps, out),
            timeout_at=timeout_at,
            decoder=StreamDecoder(
                WireProtocol.ANTHROPIC, max_line_chars=self._max_sse_line_chars, keep_frames=out.relay
            ),
            secrets=(self._api_key,),
            idle_timeout_s=idle_timeout_s,
            max_error_bytes=self._max_response_bytes,
        )

    async def aclose(self) -> None:
        """Close the HTTP client if this provider made it."""
        if self._owns_client:
            await self._client.aclose()
