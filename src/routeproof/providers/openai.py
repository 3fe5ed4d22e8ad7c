"""OpenAI Chat Completions client: ``POST {base_url}/chat/completions``.

One client serves every OpenAI-compatible endpoint; the kind and base URL say which: OpenAI
(``https://api.openai.com/v1``), OpenRouter (``https://openrouter.ai/api/v1``), Ollama
(``http://localhost:11434/v1``) and vLLM (wherever it is served, ``.../v1``).
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Mapping
from functools import partial
from types import MappingProxyType
from typing import Any

import httpx

from routeproof.config.read import check_secret
from routeproof.core.capabilities import CapabilityTable, fit_request
from routeproof.core.formats.normalize import normalize_openai
from routeproof.core.formats.responses_upstream import ResponsesStreamDecoder, normalize_responses
from routeproof.core.formats.sse import MAX_LINE_CHARS, StreamDecoder, WireProtocol
from routeproof.core.formats.translate import request_to_openai
from routeproof.core.messages import WireFormat
from routeproof.core.responses_route import (
    ResponsesPath,
    responses_passthrough_body,
    responses_path_for,
    verbatim_dropped,
)
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

__all__ = ["DEFAULT_BASE_URLS", "OPENAI_COMPATIBLE_KINDS", "OpenAIProvider"]

OPENAI_COMPATIBLE_KINDS = frozenset(
    {ProviderKind.OPENAI, ProviderKind.OPENROUTER, ProviderKind.OLLAMA, ProviderKind.VLLM}
    | {ProviderKind.AZURE, ProviderKind.GEMINI}  # their own modules configure this client (azure.py, gemini.py)
)

DEFAULT_BASE_URLS: Mapping[ProviderKind, str] = MappingProxyType(
    {
        ProviderKind.OPENAI: "https://api.openai.com/v1",
        ProviderKind.OPENROUTER: "https://openrouter.ai/api/v1",
        ProviderKind.OLLAMA: "http://localhost:11434/v1",
    }
)
"""vLLM has no default: it is wherever it is served."""


class OpenAIProvider:
    """One OpenAI-compatible endpoint. ``Authorization: Bearer`` is sent only when a key is set."""

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
        "responses_api",
    )

    def __init__(
        self,
        *,
        kind: ProviderKind = ProviderKind.OPENAI,
        api_key: str | None = None,
        client: httpx.AsyncClient | None = None,
        base_url: str | None = None,
        name: str | None = None,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        capabilities: CapabilityTable | None = None,
        max_sse_line_chars: int | None = MAX_LINE_CHARS,
        responses_api: bool = False,
    ) -> None:
        if kind not in OPENAI_COMPATIBLE_KINDS:
            raise ValueError(f"OpenAIProvider does not serve kind {kind!r}")
        url = base_url if base_url is not None else DEFAULT_BASE_URLS.get(kind)
        if url is None:
            raise ValueError(f"{kind!r} needs a base_url")
        self.kind = kind
        self.name = name if name is not None else kind.value
        self.base_url: str | None = url.rstrip("/")
        check_secret(repr(self.name), "api_key", api_key)  # never the value; never to httpcore's DEBUG log
        self._api_key = api_key or None
        if max_response_bytes < 1:
            raise ValueError(f"max_response_bytes must be >= 1, got {max_response_bytes!r}")
        self._max_response_bytes = max_response_bytes
        self._max_sse_line_chars = max_sse_line_chars
        self._capabilities = capabilities if capabilities is not None else default_capabilities()
        self.responses_api = responses_api  # it serves OpenAI's Responses API: Responses requests go verbatim
        self._owns_client = client is None
        self._client = adopt_client(client) if client is not None else make_client()  # measured default: transport.py

    def __repr__(self) -> str:
        return f"OpenAIProvider(kind={self.kind.value!r}, name={self.name!r}, base_url={self.base_url!r})"

    def _headers(self, out: Outgoing | None = None) -> dict[str, str]:
        headers = dict(out.headers) if out is not None else {}  # the caller's allowed feature headers
        if self._api_key is not None:
            headers["authorization"] = f"Bearer {self._api_key}"
        return headers

    def _chat_url(self, model: str) -> str:
        """Where ``model``'s Chat Completions requests go (Azure puts the deployment in the path)."""
        return f"{self.base_url}/chat/completions"

    def _responses_url(self, model: str) -> str:
        """Where ``model``'s Responses API requests go (``responses_api = true`` only)."""
        return f"{self.base_url}/responses"

    def _verbatim(self, request: ChatRequest, model: str, *, stream: bool) -> Outgoing | None:
        """The caller's Responses body for ``model`` (and its allowed feature headers) when it goes
        verbatim to this provider, else None."""
        origin = request.origin
        if origin is None or origin.protocol is not WireFormat.OPENAI_RESPONSES:
            return None
        if responses_path_for(origin.body_json, responses_api=self.responses_api).path is not ResponsesPath.VERBATIM:
            return None  # the Chat rewriting, or a skip (providers._passthrough.chat_view)
        caller = json.loads(origin.body_json)
        body = responses_passthrough_body(caller, model=model, stream=stream)
        return Outgoing(body=body, headers=origin.headers, dropped=verbatim_dropped(caller))

    async def _responses_complete(self, out: Outgoing, model: str, *, timeout_at: float) -> ProviderResponse:
        """One verbatim Responses API call; the caller gets OpenAI's own response object."""
        secrets = self._secrets()
        reply = await post_json(
            self._client,
            self._responses_url(model),
            content=encode_json(out.body or {}),  # _verbatim always sets it
            headers=self._headers(out),
            timeout_at=timeout_at,
            secrets=secrets,
            max_response_bytes=self._max_response_bytes,
        )
        response = normalize_or_fail(normalize_responses, reply, secrets=secrets)
        log_dropped(self.kind, model, out.dropped)
        return stamp(response, self.kind, model, wire_body_json=own_json(reply), dropped=out.dropped)

    def _secrets(self) -> tuple[str, ...]:
        return () if self._api_key is None else (self._api_key,)

    async def complete(self, request: ChatRequest, model: str, *, timeout_at: float) -> ProviderResponse:
        """One Chat Completions call, normalised; failures raise ``ProviderCallFailed``."""
        verbatim = self._verbatim(request, model, stream=False)
        if verbatim is not None:
            return await self._responses_complete(verbatim, model, timeout_at=timeout_at)
        secrets = self._secrets()
        body, out = self._body(request, model, stream=False)
        dropped = out.dropped
        reply = await post_json(
            self._client,
            self._chat_url(model),
            content=encode_json(body),
            headers=self._headers(out),
            timeout_at=timeout_at,
            secrets=secrets,
            max_response_bytes=self._max_response_bytes,
        )
        # same protocol: the caller gets the provider's own answer, every field of it
        wire = own_json(reply) if out.body is not None else None
        normalize = partial(normalize_openai, provider=self.kind, wire_body_json=wire, dropped_parameters=dropped)
        response = normalize_or_fail(normalize, reply, secrets=secrets)
        return stamp(response, self.kind, model)  # the model it was sent, when the body names none

    def _body(self, request: ChatRequest, model: str, *, stream: bool) -> tuple[dict[str, Any], Outgoing]:
        """The wire body for ``model`` and what goes with it (headers, what was left out).

        The caller's own OpenAI request (``request.origin``) is sent as received but for the
        router's fields (``providers._passthrough``); otherwise the neutral request is translated.
        What the model rejects is left out (or UnsupportedParameters); a field this protocol
        cannot carry raises RefusedFields (this provider is skipped).
        """
        fitted, caps = fit_for(self._capabilities, self.kind, request, model)
        out = outgoing_body(request, fitted, caps, target=WireFormat.OPENAI_CHAT, model=model, stream=stream)
        # fit_for logged the capability drops; the cross-protocol ones are logged here
        log_dropped(self.kind, model, out.dropped[len(fitted.dropped) :] if out.body is None else ())
        if out.body is not None:
            return out.body, out
        body = request_to_openai(fitted.request, model, capabilities=caps)
        if stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}  # else the stream carries no usage at all
        return body, out

    def dropped_parameters(self, request: ChatRequest, model: str) -> tuple[str, ...]:
        """The parameters of ``request`` that ``model`` does not accept or this protocol cannot carry (left out)."""
        verbatim = self._verbatim(request, model, stream=True)
        if verbatim is not None:
            return verbatim.dropped  # verbatim: only this gateway's own reasoning items are left out
        caps = self._capabilities.lookup(self.kind, model)
        fitted = fit_request(request, caps)
        return outgoing_body(request, fitted, caps, target=WireFormat.OPENAI_CHAT, model=model, stream=True).dropped

    def stream(
        self, request: ChatRequest, model: str, *, timeout_at: float, idle_timeout_s: float | None = None
    ) -> AsyncGenerator[StreamEvent, None]:
        """One streamed Chat Completions call, usage included; see ``providers._stream``.

        A Responses request to a provider with the Responses API streams OpenAI's typed events verbatim.
        """
        verbatim = self._verbatim(request, model, stream=True)
        if verbatim is not None:
            log_dropped(self.kind, model, verbatim.dropped)
            return stream_events(
                self._client,
                self._responses_url(model),
                content=encode_json(verbatim.body or {}),  # _verbatim always sets it
                headers=self._headers(verbatim),
                timeout_at=timeout_at,
                decoder=ResponsesStreamDecoder(),
                secrets=self._secrets(),
                idle_timeout_s=idle_timeout_s,
                max_error_bytes=self._max_response_bytes,
            )
        body, out = self._body(request, model, stream=True)
        return stream_events(
            self._client,
            self._chat_url(model),
            content=encode_json(body),
            headers=self._headers(out),
            timeout_at=timeout_at,
            decoder=StreamDecoder(WireProtocol.OPENAI, max_line_chars=self._max_sse_line_chars, keep_frames=out.relay),
            secrets=self._secrets(),
            idle_timeout_s=idle_timeout_s,
            max_error_bytes=self._max_response_bytes,
        )

    async def aclose(self) -> None:
        """Close the HTTP client if this provider made it."""
        if self._owns_client:
            await self._client.aclose()
