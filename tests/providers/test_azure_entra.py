"""Azure OpenAI's Entra ID tokens: asked for again when due (not read once at load), once more after a
401, from the environment or from a credential with azure-identity's ``get_token(scope)`` protocol."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from routeproof import ChatRequest, Message, ProviderCallFailed
from routeproof.config import load_config
from routeproof.core.entra import REFRESH_MARGIN_S, resend_after_auth_failure, token_refresh_due
from routeproof.core.types import MessageStop
from routeproof.errors import ConfigError
from routeproof.mock import DEFAULT_TEXT
from routeproof.providers.azure import AZURE_SCOPE, AzureOpenAIProvider, EnvironmentToken

HELLO = ChatRequest(messages=(Message.user("hi"),), max_tokens=16)
ANSWER = {
    "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "gpt-4o",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": DEFAULT_TEXT}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
}  # fmt: skip
STREAM = (
    'data: {"id":"c","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,'
    '"delta":{"content":"hi"},"finish_reason":"stop"}]}\n\n'
    'data: {"id":"c","object":"chat.completion.chunk","created":0,"model":"m","choices":[],'
    '"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}\n\ndata: [DONE]\n\n'
)


class Token:
    """azure-core's AccessToken shape."""

    def __init__(self, token: str, expires_on: int) -> None:
        self.token, self.expires_on = token, expires_on


class FakeCredential:
    """A credential handing out tok-1, tok-2, ... each valid for ``lifetime_s`` from the fake clock."""

    def __init__(self, clock: list[int], lifetime_s: int = 3600) -> None:
        self.clock, self.lifetime_s = clock, lifetime_s
        self.scopes: list[str] = []

    def get_token(self, *scopes: str) -> Token:
        self.scopes += scopes
        return Token(f"tok-{len(self.scopes)}", self.clock[0] + self.lifetime_s)


def _server(statuses: list[int], seen: list[str], *, stream: bool = False) -> httpx.AsyncClient:
    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("authorization", ""))
        status = statuses.pop(0) if statuses else 200
        if status != 200:
            return httpx.Response(status, json={"error": {"code": "401", "message": "Access denied: invalid token"}})
        if stream:
            return httpx.Response(200, text=STREAM, headers={"content-type": "text/event-stream"})
        return httpx.Response(200, json=ANSWER)

    return httpx.AsyncClient(transport=httpx.MockTransport(handle))


def _provider(client: httpx.AsyncClient, credential: object, clock: list[int]) -> AzureOpenAIProvider:
    provider = AzureOpenAIProvider(
        endpoint="https://res.openai.azure.com", api_key=None, api_version="v1", client=client,
        credential=credential,  # type: ignore[arg-type]  # a structural TokenCredential
    )  # fmt: skip
    provider._tokens._wall_s = lambda: clock[0]  # type: ignore[union-attr]  # the fake clock
    return provider


def _deadline() -> float:
    return asyncio.get_running_loop().time() + 10


def test_the_refresh_rules() -> None:
    """Due when missing or within the margin of expiry; a resend only after a first 401 with a credential."""
    assert token_refresh_due(None, 0)
    assert not token_refresh_due(1000 + REFRESH_MARGIN_S + 1, 1000)
    assert token_refresh_due(1000 + REFRESH_MARGIN_S, 1000)
    assert resend_after_auth_failure(http_status=401, refreshable=True, resent=False)
    assert not resend_after_auth_failure(http_status=401, refreshable=True, resent=True)
    assert not resend_after_auth_failure(http_status=403, refreshable=True, resent=False)
    assert not resend_after_auth_failure(http_status=401, refreshable=False, resent=False)


@pytest.mark.asyncio
async def test_a_token_is_kept_until_due_then_asked_for_again() -> None:
    """The credential is asked for Azure's scope once; again only when the token nears its expiry."""
    clock, seen = [1_000_000], list[str]()
    credential = FakeCredential(clock)
    provider = _provider(_server([], seen), credential, clock)
    await provider.complete(HELLO, "dep", timeout_at=_deadline())
    await provider.complete(HELLO, "dep", timeout_at=_deadline())
    clock[0] += 3600 - REFRESH_MARGIN_S  # now within the margin
    answer = await provider.complete(HELLO, "dep", timeout_at=_deadline())
    assert answer.choices[0].content == DEFAULT_TEXT
    assert seen == ["Bearer tok-1", "Bearer tok-1", "Bearer tok-2"]
    assert credential.scopes == [AZURE_SCOPE, AZURE_SCOPE]


@pytest.mark.asyncio
async def test_a_401_refreshes_once_and_resends() -> None:
    """A 401 gets a fresh token and one resend; a second 401 is the answer (two requests, not more)."""
    clock, seen = [1_000_000], list[str]()
    provider = _provider(_server([401], seen), FakeCredential(clock), clock)
    answer = await provider.complete(HELLO, "dep", timeout_at=_deadline())
    assert answer.choices[0].content == DEFAULT_TEXT
    assert seen == ["Bearer tok-1", "Bearer tok-2"]
    seen.clear()
    provider = _provider(_server([401, 401, 401], seen), FakeCredential(clock), clock)
    with pytest.raises(ProviderCallFailed) as failed:
        await provider.complete(HELLO, "dep", timeout_at=_deadline())
    assert failed.value.failure.http_status == 401
    assert seen == ["Bearer tok-1", "Bearer tok-2"]


@pytest.mark.asyncio
async def test_a_stream_refreshes_after_a_401_too() -> None:
    """A streamed call answered 401 is sent once more with a fresh token, then streams."""
    clock, seen = [1_000_000], list[str]()
    provider = _provider(_server([401], seen, stream=True), FakeCredential(clock), clock)
    events = [e async for e in provider.stream(HELLO, "dep", timeout_at=_deadline())]
    assert isinstance(events[-1], MessageStop)
    assert seen == ["Bearer tok-1", "Bearer tok-2"]


def _jwt(exp: int) -> str:
    claims = base64.urlsafe_b64encode(json.dumps({"exp": exp}).encode()).decode().rstrip("=")
    return f"eyJhbGciOiJub25lIn0.{claims}.sig"


@pytest.mark.asyncio
async def test_the_environment_token_is_read_again_when_due() -> None:
    """auth = "bearer": AZURE_OPENAI_AD_TOKEN is read again once the kept JWT nears its exp, so a
    rotated environment is used without a restart."""
    clock, seen = [1_000_000], list[str]()
    environ = {"AZURE_OPENAI_AD_TOKEN": _jwt(1_000_000 + 3600)}
    provider = _provider(_server([], seen), EnvironmentToken(environ=environ, wall_s=lambda: clock[0]), clock)
    await provider.complete(HELLO, "dep", timeout_at=_deadline())
    environ["AZURE_OPENAI_AD_TOKEN"] = rotated = _jwt(1_000_000 + 7200)
    await provider.complete(HELLO, "dep", timeout_at=_deadline())  # the kept one is not due yet
    clock[0] += 3600
    await provider.complete(HELLO, "dep", timeout_at=_deadline())
    assert seen[1] == seen[0] != seen[2]
    assert seen[2] == f"Bearer {rotated}"


def _config(tmp_path: Path, auth: str) -> Callable[[], object]:
    path = tmp_path / "agent.toml"
    path.write_text(
        '[driver.providers.az]\nkind = "azure"\nbase_url = "https://res.openai.azure.com"\n'
        f'model = "dep"\nauth = "{auth}"\n'
    )
    return lambda: load_config(path, environ={"AZURE_OPENAI_AD_TOKEN": "t"})


def test_azure_identity_without_the_package_fails_at_load_naming_the_key(tmp_path: Path) -> None:
    """auth = "azure-identity" with azure-identity not installed is a ConfigError naming the key and the extra."""
    try:
        import azure.identity  # type: ignore[import-not-found,unused-ignore]  # noqa: F401
    except ModuleNotFoundError:
        with pytest.raises(ConfigError, match=r"driver\.providers\.az\.auth.*routeproof\[azure\]"):
            _config(tmp_path, "azure-identity")()
    else:
        pytest.skip("azure-identity is installed here: nothing to refuse")
