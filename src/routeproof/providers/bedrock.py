"""Amazon Bedrock Converse API client, signed with botocore's SigV4 signer.

``POST https://bedrock-runtime.{region}.amazonaws.com/model/{modelId}/converse`` (and
``.../converse-stream``, an AWS event-stream decoded by ``bedrock_stream``). The signature
covers the exact bytes sent; the trace headers are added after signing (unsigned, which SigV4
allows). The response id is the ``x-amzn-requestid`` header.

Credentials are a botocore credentials object: static keys, or whatever botocore's own chain
resolved (``config.resolve_aws_credentials``: profile, SSO, container, instance metadata), possibly
``RefreshableCredentials``. Every request is signed with ``get_frozen_credentials()`` taken just
then, so expiring role credentials are refreshed; a refresh that needs I/O runs in a worker thread,
never on the event loop.

botocore's ``SigV4Auth`` logs the canonical request (with the ``x-amz-security-token`` header) at
DEBUG on the ``botocore.auth`` logger. :class:`RedactSigningLog`, installed on that logger when this
module is imported, rewrites those records before any handler sees them (see its docstring).
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import AsyncGenerator, Mapping
from functools import partial
from typing import Protocol

import httpx

from routeproof.config.read import check_secret
from routeproof.core.capabilities import CapabilityTable, FittedRequest, fit_request
from routeproof.core.formats.cross_fields import caller_fields_plan
from routeproof.core.formats.normalize import normalize_bedrock_converse
from routeproof.core.formats.translate import request_to_bedrock_converse
from routeproof.core.messages import WireFormat
from routeproof.core.types import (
    AttemptFailure,
    AttemptFailureKind,
    ChatRequest,
    ProviderKind,
    ProviderResponse,
    StreamEvent,
)
from routeproof.errors import ConfigError, ProviderCallFailed
from routeproof.providers._http import JSON_HEADERS, encode_json, normalize_or_fail, post_json, stamp
from routeproof.providers._passthrough import HEADER_DROP_PREFIX, RefusedFields, chat_view, log_dropped
from routeproof.providers._stream import EVENT_STREAM, stream_events
from routeproof.providers.bedrock_stream import ConverseStreamDecoder
from routeproof.providers.capabilities import default_capabilities, fit_for
from routeproof.transport import adopt_client, make_client

# botocore (the ``bedrock`` extra) ships no type information; these names are all we use of it.
# Importing this module never needs it; building a BedrockProvider does (MISSING_EXTRA says how).
_botocore_missing: ModuleNotFoundError | None = None
try:
    from botocore.auth import SigV4Auth  # type: ignore[import-untyped]
    from botocore.awsrequest import AWSRequest  # type: ignore[import-untyped]
    from botocore.credentials import Credentials, RefreshableCredentials  # type: ignore[import-untyped]
    from botocore.exceptions import BotoCoreError  # type: ignore[import-untyped]
    from botocore.utils import percent_encode  # type: ignore[import-untyped]
except ModuleNotFoundError as exc:  # pragma: no cover - the extra is installed wherever tests run
    _botocore_missing = exc

__all__ = [
    "MISSING_EXTRA",
    "SIGNING_LOG_FILTER",
    "SIGNING_SERVICE",
    "AwsCredentials",
    "BedrockProvider",
    "RedactSigningLog",
    "default_endpoint",
]

SIGNING_SERVICE = "bedrock"
MISSING_EXTRA = "the Bedrock provider needs botocore: pip install 'routeproof[bedrock]'"
"""The ConfigError message when botocore (the ``bedrock`` extra) is not installed."""
REDACTED = "<redacted>"


class AwsCredentials(Protocol):
    """What signing needs of a botocore credentials object (``Credentials``, ``RefreshableCredentials``)."""

    def get_frozen_credentials(self) -> object:
        """A consistent (access_key, secret_key, token) snapshot, refreshed first if expiring."""
        ...


# A signed header or query parameter that carries a credential: its value up to the end of the line
# (canonical headers) or the next "&" (canonical query string).
_SECRET_FIELD = re.compile(r"(?im)(x-amz-security-token[:=])[^\n&]*")


MIN_SECRET_CHARS = 8
"""The shortest value ``RedactSigningLog.add_secret`` takes as a secret to replace verbatim."""


class RedactSigningLog(logging.Filter):
    """Redacts the session token from botocore's signing DEBUG records (a filter on ``botocore.auth``).

    Why a logger filter and not a handler filter or a quieter signer: a filter on the logger that
    creates the record runs before the record reaches *any* handler (the application's, pytest's,
    a root handler added later), and before it propagates; it matches the header by name, so it
    covers tokens that a refresh has not produced yet; and signing stays botocore's own code, not a
    copy of ``SigV4Auth.add_auth`` that would drift. The secret key itself is only an HMAC key and is
    never logged by botocore; the filter still replaces every value registered with ``add_secret``
    (the keys a provider signs with) in case a future botocore logs more.
    """

    def __init__(self) -> None:
        super().__init__("botocore.auth")
        self._secrets: set[str] = set()

    def add_secret(self, value: str | None) -> None:
        """Also replace ``value`` (a key this process signs with) wherever it appears. Values shorter
        than ``MIN_SECRET_CHARS`` are not real AWS credentials (keys are 20 and 40 characters, tokens
        hundreds) and replacing them would shred every log line (a test key "s" turned
        "CanonicalRequest" into "Canonical<redacted>...")."""
        if value and len(value) >= MIN_SECRET_CHARS:
            self._secrets.add(value)

    def filter(self, record: logging.LogRecord) -> bool:
        """Rewrite ``record`` with its credentials redacted; never drop it."""
        message = record.getMessage()
        redacted = _SECRET_FIELD.sub(lambda m: m.group(1) + REDACTED, message)
        for secret in tuple(self._secrets):
            redacted = redacted.replace(secret, REDACTED)
        if redacted != message:
            record.msg, record.args = redacted, None
        return True


def _install_redaction() -> RedactSigningLog:
    logger = logging.getLogger("botocore.auth")
    for existing in logger.filters:
        if isinstance(existing, RedactSigningLog):
            return existing
    installed = RedactSigningLog()
    logger.addFilter(installed)
    return installed


SIGNING_LOG_FILTER = _install_redaction()


def default_endpoint(region: str) -> str:
    """The Bedrock runtime endpoint of ``region``."""
    return f"https://bedrock-runtime.{region}.amazonaws.com"


class BedrockProvider:
    """One Bedrock region (or a test endpoint via ``base_url``), with static keys or a botocore
    credentials object (``credentials``), refreshed before each request when it expires."""

    __slots__ = ("_capabilities", "_client", "_credentials", "_owns_client", "_region", "base_url", "kind", "name")

    def __init__(
        self,
        *,
        region: str,
        access_key_id: str | None = None,
        secret_access_key: str | None = None,
        session_token: str | None = None,
        credentials: AwsCredentials | None = None,
        client: httpx.AsyncClient | None = None,
        base_url: str | None = None,
        name: str = "bedrock",
        capabilities: CapabilityTable | None = None,
    ) -> None:
        if _botocore_missing is not None:
            raise ConfigError(f"{name!r}: {MISSING_EXTRA}") from _botocore_missing
        if not region:
            raise ValueError(f"{name!r}: a Bedrock region is required")
        for parameter, secret in (("access_key_id", access_key_id), ("secret_access_key", secret_access_key),
                                  ("session_token", session_token)):  # fmt: skip
            check_secret(repr(name), parameter, secret)  # never the value; never to a DEBUG log
        if credentials is None:
            if not access_key_id or not secret_access_key:
                raise ValueError(f"{name!r}: AWS credentials are required (keys or a credentials object)")
            credentials = Credentials(access_key_id, secret_access_key, session_token or None)
        elif access_key_id or secret_access_key or session_token:
            raise ValueError(f"{name!r}: give either AWS keys or a credentials object, not both")
        self.kind = ProviderKind.BEDROCK
        self.name = name
        self.base_url: str | None = (base_url or default_endpoint(region)).rstrip("/")
        self._region = region
        self._credentials: AwsCredentials = credentials
        self._capabilities = capabilities if capabilities is not None else default_capabilities()
        self._owns_client = client is None
        self._client = adopt_client(client) if client is not None else make_client()  # measured default: transport.py

    def __repr__(self) -> str:
        return f"BedrockProvider(name={self.name!r}, region={self._region!r}, base_url={self.base_url!r})"

    def url_for(self, model: str, *, stream: bool = False) -> str:
        """The Converse (or ConverseStream) URL of ``model``; the id is percent-encoded as botocore
        does (``:`` -> ``%3A``)."""
        operation = "converse-stream" if stream else "converse"
        return f"{self.base_url}/model/{percent_encode(model)}/{operation}"

    def sign(
        self, url: str, content: bytes, *, headers: Mapping[str, str] = JSON_HEADERS, frozen: object | None = None
    ) -> dict[str, str]:
        """The headers of a SigV4-signed POST of ``content`` to ``url`` (botocore computes them), signed
        with ``frozen`` (a ``ReadOnlyCredentials``) or a snapshot taken now."""
        if frozen is None:
            frozen = self._credentials.get_frozen_credentials()
        aws_request = AWSRequest(method="POST", url=url, data=content, headers=dict(headers))
        SigV4Auth(frozen, SIGNING_SERVICE, self._region).add_auth(aws_request)
        return {str(name): str(value) for name, value in aws_request.headers.items()}

    async def _frozen(self) -> tuple[object, tuple[str, ...]]:
        """This request's credentials snapshot and its secret values (to redact from errors).

        A ``RefreshableCredentials`` due for refresh may fetch over the network (container endpoint,
        STS, SSO): that runs in a worker thread. A failed refresh fails the attempt over, naming the
        error type only (botocore's messages can quote a credential source's answer).
        """
        credentials = self._credentials
        try:
            if isinstance(credentials, RefreshableCredentials) and credentials.refresh_needed():
                frozen = await asyncio.to_thread(credentials.get_frozen_credentials)
            else:
                frozen = credentials.get_frozen_credentials()
        except BotoCoreError as exc:
            failure = AttemptFailure(
                kind=AttemptFailureKind.CONN_REFUSED,
                message=f"AWS credentials could not be refreshed: {type(exc).__name__}",
            )
            raise ProviderCallFailed(failure) from exc
        secrets = tuple(str(s) for s in (frozen.secret_key, frozen.token, frozen.access_key) if s)
        for secret in secrets:
            SIGNING_LOG_FILTER.add_secret(secret)
        return frozen, secrets

    async def complete(self, request: ChatRequest, model: str, *, timeout_at: float) -> ProviderResponse:
        """One Converse call, normalised; failures raise ``ProviderCallFailed``."""
        url = self.url_for(model)
        request = chat_view(request)  # a Responses request with state only OpenAI keeps is skipped, never faked
        content, dropped = self._body(request, model)
        frozen, secrets = await self._frozen()
        reply = await post_json(
            self._client,
            url,
            content=content,
            headers=self.sign(url, content, frozen=frozen),
            timeout_at=timeout_at,
            secrets=secrets,
        )
        request_id = reply.headers.get("x-amzn-requestid", "")
        normalize = partial(normalize_bedrock_converse, response_id=request_id, model=model)
        return stamp(normalize_or_fail(normalize, reply, secrets=secrets), self.kind, model, dropped=dropped)

    def _body(self, request: ChatRequest, model: str) -> tuple[bytes, tuple[str, ...]]:
        """The Converse body for ``model`` and what was left out of the caller's request.

        What the model rejects is left out (``fit_for``); every field the caller set is judged by the
        field table (``core.cross_fields``): a dropped one is named, a refused one raises
        ``RefusedFields`` (this provider is skipped). Feature headers never cross protocols (named).
        """
        fitted, _ = fit_for(self._capabilities, self.kind, request, model)  # logs the capability drops
        crossed = self._crossed(request, fitted)
        log_dropped(self.kind, model, crossed)
        return encode_json(request_to_bedrock_converse(fitted.request)), fitted.dropped + crossed

    @staticmethod
    def _crossed(request: ChatRequest, fitted: FittedRequest) -> tuple[str, ...]:
        plan = caller_fields_plan(request, fitted.request, WireFormat.BEDROCK_CONVERSE)
        if plan.refused:
            raise RefusedFields(WireFormat.BEDROCK_CONVERSE, plan.refused)
        headers = () if request.origin is None else request.origin.headers
        return tuple(d for d in plan.dropped if d not in fitted.dropped) + tuple(
            f"{HEADER_DROP_PREFIX}{name}" for name, _ in headers
        )

    def dropped_parameters(self, request: ChatRequest, model: str) -> tuple[str, ...]:
        """The parameters of ``request`` that ``model`` does not accept or Converse cannot carry (left out)."""
        request = chat_view(request)  # a Responses origin is judged as its Chat rewriting, as in complete
        fitted = fit_request(request, self._capabilities.lookup(self.kind, model))
        return fitted.dropped + self._crossed(request, fitted)

    async def stream(
        self, request: ChatRequest, model: str, *, timeout_at: float, idle_timeout_s: float | None = None
    ) -> AsyncGenerator[StreamEvent, None]:
        """One signed ConverseStream call as events; see ``providers._stream`` and ``bedrock_stream``."""
        url = self.url_for(model, stream=True)
        request = chat_view(request)  # as in complete
        content, _ = self._body(request, model)
        frozen, secrets = await self._frozen()
        headers = {"content-type": "application/json", "accept": EVENT_STREAM}
        events = stream_events(
            self._client,
            url,
            content=content,
            headers=self.sign(url, content, headers=headers, frozen=frozen),
            timeout_at=timeout_at,
            decoder=ConverseStreamDecoder(),
            secrets=secrets,
            idle_timeout_s=idle_timeout_s,
            accept=EVENT_STREAM,
        )
        try:
            async for event in events:
                yield event
        finally:
            await events.aclose()

    async def aclose(self) -> None:
        """Close the HTTP client if this provider made it."""
        if self._owns_client:
            await self._client.aclose()
