"""Amazon Bedrock Converse API client, signed with botocore's SigV4 signer.

``POST https://bedrock-runtime.{region}.amazonaws.com/model/{modelId}/converse`` (and
``.../converse-stream``, an AWS event-stream decoded by ``bedrock_stream``). The signature
covers the exact bytes sent; the trace headers are added after signing (unsigned, which SigV4
allows). The response id is the ``x-amzn-requestid`` header.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping
from functools import partial

import httpx

# botocore ships no type information; these three names are all we use of it.
from botocore.auth import SigV4Auth  # type: ignore[import-untyped]
from botocore.awsrequest import AWSRequest  # type: ignore[import-untyped]
from botocore.credentials import Credentials  # type: ignore[import-untyped]
from botocore.utils import percent_encode  # type: ignore[import-untyped]

from routeproof.core.normalize import normalize_bedrock_converse
from routeproof.core.translate import request_to_bedrock_converse
from routeproof.core.types import ChatRequest, ProviderKind, ProviderResponse, StreamEvent
from routeproof.providers._http import JSON_HEADERS, encode_json, normalize_or_fail, post_json, stamp
from routeproof.providers._stream import EVENT_STREAM, stream_events
from routeproof.providers.bedrock_stream import ConverseStreamDecoder
from routeproof.transport import Transport, make_client

__all__ = ["SIGNING_SERVICE", "BedrockProvider", "default_endpoint"]

SIGNING_SERVICE = "bedrock"


def default_endpoint(region: str) -> str:
    """The Bedrock runtime endpoint of ``region``."""
    return f"https://bedrock-runtime.{region}.amazonaws.com"


class BedrockProvider:
    """One Bedrock region (or a test endpoint via ``base_url``), with static AWS credentials."""

    __slots__ = ("_client", "_credentials", "_owns_client", "_region", "_secrets", "base_url", "kind", "name")

    def __init__(
        self,
        *,
        region: str,
        access_key_id: str,
        secret_access_key: str,
        session_token: str | None = None,
        client: httpx.AsyncClient | None = None,
        base_url: str | None = None,
        name: str = "bedrock",
    ) -> None:
        if not region:
            raise ValueError(f"{name!r}: a Bedrock region is required")
        if not access_key_id or not secret_access_key:
            raise ValueError(f"{name!r}: AWS credentials are required")
        self.kind = ProviderKind.BEDROCK
        self.name = name
        self.base_url: str | None = (base_url or default_endpoint(region)).rstrip("/")
        self._region = region
        self._credentials = Credentials(access_key_id, secret_access_key, session_token or None)
        self._secrets = tuple(s for s in (secret_access_key, session_token, access_key_id) if s)
        self._owns_client = client is None
        self._client = client if client is not None else make_client(Transport.HTTPX)  # tuned pool (transport.py)

    def __repr__(self) -> str:
        return f"BedrockProvider(name={self.name!r}, region={self._region!r}, base_url={self.base_url!r})"

    def url_for(self, model: str, *, stream: bool = False) -> str:
        """The Converse (or ConverseStream) URL of ``model``; the id is percent-encoded as botocore
        does (``:`` -> ``%3A``)."""
        operation = "converse-stream" if stream else "converse"
        return f"{self.base_url}/model/{percent_encode(model)}/{operation}"

    def sign(self, url: str, content: bytes, *, headers: Mapping[str, str] = JSON_HEADERS) -> dict[str, str]:
        """The headers of a SigV4-signed POST of ``content`` to ``url`` (botocore computes them)."""
        aws_request = AWSRequest(method="POST", url=url, data=content, headers=dict(headers))
        SigV4Auth(self._credentials, SIGNING_SERVICE, self._region).add_auth(aws_request)
        return {str(name): str(value) for name, value in aws_request.headers.items()}

    async def complete(self, request: ChatRequest, model: str, *, timeout_at: float) -> ProviderResponse:
        """One Converse call, normalised; failures raise ``ProviderCallFailed``."""
        url = self.url_for(model)
        content = encode_json(request_to_bedrock_converse(request))
        reply = await post_json(
            self._client,
            url,
            content=content,
            headers=self.sign(url, content),
            timeout_at=timeout_at,
            secrets=self._secrets,
        )
        request_id = reply.headers.get("x-amzn-requestid", "")
        normalize = partial(normalize_bedrock_converse, response_id=request_id, model=model)
        return stamp(normalize_or_fail(normalize, reply, secrets=self._secrets), self.kind, model)

    def stream(
        self, request: ChatRequest, model: str, *, timeout_at: float, idle_timeout_s: float | None = None
    ) -> AsyncGenerator[StreamEvent, None]:
        """One signed ConverseStream call as events; see ``providers._stream`` and ``bedrock_stream``."""
        url = self.url_for(model, stream=True)
        content = encode_json(request_to_bedrock_converse(request))
        signed = self.sign(url, content, headers={"content-type": "application/json", "accept": EVENT_STREAM})
        return stream_events(
            self._client,
            url,
            content=content,
            headers=signed,
            timeout_at=timeout_at,
            decoder=ConverseStreamDecoder(),
            secrets=self._secrets,
            idle_timeout_s=idle_timeout_s,
            accept=EVENT_STREAM,
        )

    async def aclose(self) -> None:
        """Close the HTTP client if this provider made it."""
        if self._owns_client:
            await self._client.aclose()
