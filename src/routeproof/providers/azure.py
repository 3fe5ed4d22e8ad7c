"""Azure OpenAI: OpenAI's Chat Completions protocol at per-deployment URLs.

    POST {endpoint}/openai/deployments/{deployment}/chat/completions?api-version={api_version}
    POST {endpoint}/openai/v1/chat/completions                      (api_version = "v1")

A configuration of the OpenAI-compatible client, not a second client: the request and answer
bodies, the SSE stream and the normaliser are OpenAI's. What differs is here or in data:

- the URL: the deployment is the model routeproof routes to (``model = "my-gpt4o"`` in
  ``agent.toml``: Azure's ``model`` field is ignored, the path names the deployment), so a
  capability row in ``models.toml`` (``provider = "azure"``) is per deployment;
- auth: the ``api-key`` header (``AZURE_OPENAI_API_KEY``), or an Entra ID token sent as
  ``Authorization: Bearer``: ``auth = "bearer"`` reads it from ``AZURE_OPENAI_AD_TOKEN`` again
  whenever the kept one is due (its JWT ``exp``; a token without one is read again each minute), so
  a rotated environment is picked up without a restart; ``auth = "azure-identity"`` asks
  ``azure-identity``'s ``DefaultAzureCredential`` (the optional ``azure`` extra), or any object
  with its ``get_token(scope)`` protocol passed as ``credential``. A token is replaced before use
  when it expires within 5 minutes, and once after a 401 (``core/entra.py``);
- waits: ``retry-after-ms`` before ``retry-after`` and ``x-ratelimit-*`` (``core/provider_variants.py``,
  through the one error mapping in ``providers/_http.py``);
- content filtering: a prompt the filter refuses is a 400 with ``code: "content_filter"``
  (terminal: no retry, no failover); a completion the filter cut is ``finish_reason:
  "content_filter"``, normalised to ``FinishReason.CONTENT_FILTER`` and answered as filtered
  (OpenAI shape: ``content_filter``; Responses: ``incomplete`` with reason ``content_filter``),
  never as a plain success.
"""

from __future__ import annotations

import base64
import binascii
import inspect
import json
import os
import time
from collections.abc import AsyncGenerator, Callable, Mapping
from typing import Any, Protocol

import httpx

from routeproof.core.capabilities import CapabilityTable
from routeproof.core.entra import resend_after_auth_failure, token_refresh_due
from routeproof.core.errors import ProviderCallFailed
from routeproof.core.provider_variants import azure_chat_url
from routeproof.core.types import (
    AttemptFailure,
    AttemptFailureKind,
    ChatRequest,
    ProviderKind,
    ProviderResponse,
    StreamEvent,
)
from routeproof.providers._http import DEFAULT_MAX_RESPONSE_BYTES
from routeproof.providers._passthrough import Outgoing
from routeproof.providers.openai import OpenAIProvider

__all__ = ["AZURE_SCOPE", "AzureOpenAIProvider", "EntraTokens", "EnvironmentToken", "TokenCredential"]

AZURE_SCOPE = "https://cognitiveservices.azure.com/.default"
"""The Entra ID scope of Azure OpenAI's data plane."""
_UNKNOWN_EXPIRY_S = 60
"""A token without a readable ``exp`` is kept this long, then read (or asked for) again."""


class AccessTokenLike(Protocol):
    """azure-core's ``AccessToken``: the token and its expiry (Unix seconds)."""

    @property
    def token(self) -> str: ...

    @property
    def expires_on(self) -> int: ...


class TokenCredential(Protocol):
    """azure-core's credential protocol (``DefaultAzureCredential`` and friends; sync or ``.aio``)."""

    def get_token(self, *scopes: str) -> Any:  # an AccessTokenLike, or an awaitable of one
        """A token for ``scopes``."""
        ...


def _jwt_expiry_s(token: str) -> int | None:
    """The ``exp`` claim of a JWT (unverified: only to know when to ask again), or None."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        claims = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (ValueError, binascii.Error):
        return None
    exp = claims.get("exp") if isinstance(claims, dict) else None
    return exp if isinstance(exp, int) and not isinstance(exp, bool) else None


class _Token:
    __slots__ = ("expires_on", "token")

    def __init__(self, token: str, expires_on: int) -> None:
        self.token, self.expires_on = token, expires_on


class EnvironmentToken:
    """A credential reading an Entra token from an environment variable each time it is asked."""

    def __init__(
        self, variable: str = "AZURE_OPENAI_AD_TOKEN", *, environ: Mapping[str, str] | None = None,
        fallback: str | None = None, wall_s: Callable[[], float] = time.time,
    ) -> None:  # fmt: skip
        self._variable = variable
        self._fallback = fallback  # the value read at load, used while the variable is unset
        self._environ = os.environ if environ is None else environ
        self._wall_s = wall_s

    def __repr__(self) -> str:
        return f"EnvironmentToken({self._variable!r})"

    def get_token(self, *scopes: str) -> AccessTokenLike:
        """The variable's current value, expiring at its JWT ``exp`` (else in a minute)."""
        del scopes
        token = self._environ.get(self._variable) or self._fallback or ""
        if not token:
            raise ProviderCallFailed(_auth_failure(f"{self._variable} is not set"))
        return _Token(token, _jwt_expiry_s(token) or int(self._wall_s()) + _UNKNOWN_EXPIRY_S)


def _auth_failure(message: str) -> AttemptFailure:
    return AttemptFailure(kind=AttemptFailureKind.HTTP_STATUS, http_status=401, message=f"entra token: {message}")


class EntraTokens:
    """The Entra token an Azure provider sends: kept, and replaced when due or after a 401 (``core/entra.py``)."""

    def __init__(self, credential: TokenCredential, *, wall_s: Callable[[], float] = time.time) -> None:
        self._credential = credential
        self._wall_s = wall_s
        self.current: str | None = None
        self._expires_on: int | None = None

    async def bearer(self) -> str:
        """The token to send now, asked for anew when the kept one is due."""
        if self.current is None or token_refresh_due(self._expires_on, int(self._wall_s())):
            got = self._credential.get_token(AZURE_SCOPE)
            if inspect.isawaitable(got):
                got = await got
            self.current, self._expires_on = str(got.token), int(got.expires_on)
        return self.current

    def invalidate(self) -> None:
        """Forget the kept token (Azure answered 401): the next request asks for a new one."""
        self._expires_on = None


class AzureOpenAIProvider(OpenAIProvider):
    """One Azure OpenAI resource; each routed model is a deployment of it."""

    __slots__ = ("_api_version", "_bearer_auth", "_tokens")

    def __init__(
        self,
        *,
        endpoint: str,
        api_key: str | None,
        api_version: str,
        bearer_auth: bool = False,
        client: httpx.AsyncClient | None = None,
        name: str | None = None,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        capabilities: CapabilityTable | None = None,
        responses_api: bool = False,
        credential: TokenCredential | None = None,
    ) -> None:
        if not api_version:
            raise ValueError(f"AzureOpenAIProvider needs an api_version, got {api_version!r}")
        super().__init__(
            kind=ProviderKind.AZURE, api_key=api_key, client=client, base_url=endpoint, name=name,
            max_response_bytes=max_response_bytes, capabilities=capabilities, responses_api=responses_api,
        )  # fmt: skip
        self._api_version = api_version
        self._bearer_auth = bearer_auth or credential is not None
        self._tokens = None if credential is None else EntraTokens(credential)

    def __repr__(self) -> str:
        return f"AzureOpenAIProvider(name={self.name!r}, endpoint={self.base_url!r}, api_version={self._api_version!r})"

    def _chat_url(self, model: str) -> str:
        assert self.base_url is not None  # set in __init__
        return azure_chat_url(self.base_url, model, self._api_version)

    def _responses_url(self, model: str) -> str:
        """Azure's Responses API: ``/openai/v1/responses`` (the v1 API), else ``/openai/responses?api-version=``;
        the deployment is the body's ``model``."""
        if self._api_version == "v1":
            return f"{self.base_url}/openai/v1/responses"
        return f"{self.base_url}/openai/responses?api-version={self._api_version}"

    def _secrets(self) -> tuple[str, ...]:
        token = None if self._tokens is None else self._tokens.current
        return super()._secrets() + (() if token is None else (token,))

    async def complete(self, request: ChatRequest, model: str, *, timeout_at: float) -> ProviderResponse:
        """One call; with an Entra credential, a fresh token when due, and one resend after a 401."""
        if self._tokens is None:
            return await super().complete(request, model, timeout_at=timeout_at)
        resent = False
        while True:
            await self._tokens.bearer()
            try:
                return await super().complete(request, model, timeout_at=timeout_at)
            except ProviderCallFailed as exc:
                status = exc.failure.http_status
                if not resend_after_auth_failure(http_status=status, refreshable=True, resent=resent):
                    raise
                self._tokens.invalidate()
                resent = True

    def stream(
        self, request: ChatRequest, model: str, *, timeout_at: float, idle_timeout_s: float | None = None
    ) -> AsyncGenerator[StreamEvent, None]:
        """One streamed call; with an Entra credential, as :meth:`complete` (a 401 comes before any event)."""
        if self._tokens is None:
            return super().stream(request, model, timeout_at=timeout_at, idle_timeout_s=idle_timeout_s)
        return self._entra_stream(request, model, timeout_at=timeout_at, idle_timeout_s=idle_timeout_s)

    async def _entra_stream(
        self, request: ChatRequest, model: str, *, timeout_at: float, idle_timeout_s: float | None
    ) -> AsyncGenerator[StreamEvent, None]:
        assert self._tokens is not None
        resent = False
        while True:
            await self._tokens.bearer()
            events = super().stream(request, model, timeout_at=timeout_at, idle_timeout_s=idle_timeout_s)
            try:
                first = await anext(events)
            except ProviderCallFailed as exc:
                await events.aclose()
                if not resend_after_auth_failure(http_status=exc.failure.http_status, refreshable=True, resent=resent):
                    raise
                self._tokens.invalidate()
                resent = True
                continue
            try:
                yield first
                async for event in events:
                    yield event
            finally:
                await events.aclose()
            return

    def _headers(self, out: Outgoing | None = None) -> dict[str, str]:
        headers = dict(out.headers) if out is not None else {}
        if self._tokens is not None and self._tokens.current is not None:
            headers["authorization"] = f"Bearer {self._tokens.current}"
        elif self._api_key is not None:
            if self._bearer_auth:
                headers["authorization"] = f"Bearer {self._api_key}"
            else:
                headers["api-key"] = self._api_key
        return headers
