"""Azure OpenAI: OpenAI's Chat Completions protocol at per-deployment URLs.

    POST {endpoint}/openai/deployments/{deployment}/chat/completions?api-version={api_version}
    POST {endpoint}/openai/v1/chat/completions                      (api_version = "v1")

A configuration of the OpenAI-compatible client, not a second client: the request and answer
bodies, the SSE stream and the normaliser are OpenAI's. What differs is here or in data:

- the URL: the deployment is the model routeproof routes to (``model = "my-gpt4o"`` in
  ``agent.toml``: Azure's ``model`` field is ignored, the path names the deployment), so a
  capability row in ``models.toml`` (``provider = "azure"``) is per deployment;
- auth: the ``api-key`` header (``AZURE_OPENAI_API_KEY``), or ``auth = "bearer"``: an Entra ID
  token sent as ``Authorization: Bearer`` (``AZURE_OPENAI_AD_TOKEN``; read at load, so a token
  that expires needs a restart or a rotated environment);
- waits: ``retry-after-ms`` before ``retry-after`` and ``x-ratelimit-*`` (``core/provider_variants.py``,
  through the one error mapping in ``providers/_http.py``);
- content filtering: a prompt the filter refuses is a 400 with ``code: "content_filter"``
  (terminal: no retry, no failover); a completion the filter cut is ``finish_reason:
  "content_filter"``, normalised to ``FinishReason.CONTENT_FILTER`` and answered as filtered
  (OpenAI shape: ``content_filter``; Responses: ``incomplete`` with reason ``content_filter``),
  never as a plain success.
"""

from __future__ import annotations

import httpx

from routeproof.core.capabilities import CapabilityTable
from routeproof.core.provider_variants import azure_chat_url
from routeproof.core.types import ProviderKind
from routeproof.providers._http import DEFAULT_MAX_RESPONSE_BYTES
from routeproof.providers._passthrough import Outgoing
from routeproof.providers.openai import OpenAIProvider

__all__ = ["AzureOpenAIProvider"]


class AzureOpenAIProvider(OpenAIProvider):
    """One Azure OpenAI resource; each routed model is a deployment of it."""

    __slots__ = ("_api_version", "_bearer_auth")

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
    ) -> None:
        if not api_version:
            raise ValueError(f"AzureOpenAIProvider needs an api_version, got {api_version!r}")
        super().__init__(
            kind=ProviderKind.AZURE, api_key=api_key, client=client, base_url=endpoint, name=name,
            max_response_bytes=max_response_bytes, capabilities=capabilities, responses_api=responses_api,
        )  # fmt: skip
        self._api_version = api_version
        self._bearer_auth = bearer_auth

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

    def _headers(self, out: Outgoing | None = None) -> dict[str, str]:
        headers = dict(out.headers) if out is not None else {}
        if self._api_key is not None:
            if self._bearer_auth:
                headers["authorization"] = f"Bearer {self._api_key}"
            else:
                headers["api-key"] = self._api_key
        return headers
