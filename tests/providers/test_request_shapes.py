"""What each HTTP provider sends: path, headers and the body built by core.formats.translate."""

from __future__ import annotations

import asyncio
import datetime
import json

import httpx
import pytest
import respx

# botocore ships no type information.
from botocore.auth import SigV4Auth  # type: ignore[import-untyped]
from botocore.awsrequest import AWSRequest  # type: ignore[import-untyped]
from botocore.credentials import Credentials  # type: ignore[import-untyped]

from routeproof.core.capabilities import kind_default
from routeproof.core.formats.translate import request_to_anthropic, request_to_bedrock_converse, request_to_openai
from routeproof.core.types import AttemptFailureKind, ProviderKind
from routeproof.errors import ProviderCallFailed
from routeproof.providers.anthropic import AnthropicProvider
from routeproof.providers.bedrock import BedrockProvider
from routeproof.providers.openai import OpenAIProvider

from .conftest import (
    ANTHROPIC_KEY,
    ANTHROPIC_OK,
    AWS_ACCESS_KEY_ID,
    AWS_SECRET_ACCESS_KEY,
    AWS_SESSION_TOKEN,
    BEDROCK_BASE,
    BEDROCK_MODEL,
    BEDROCK_OK,
    OPENAI_KEY,
    OPENAI_OK,
    HttpCase,
    request_hello,
)

FIXED_NOW = datetime.datetime(2024, 1, 2, 3, 4, 5)


def _deadline() -> float:
    return asyncio.get_running_loop().time() + 5


@pytest.mark.asyncio
async def test_anthropic_request_shape(client: httpx.AsyncClient, respx_mock: respx.MockRouter) -> None:
    """Anthropic: POST /v1/messages with x-api-key, anthropic-version and the translated body."""
    route = respx_mock.post("https://api.anthropic.com/v1/messages").respond(200, json=ANTHROPIC_OK)
    provider = AnthropicProvider(api_key=ANTHROPIC_KEY, client=client)
    await provider.complete(request_hello(), "claude-x", timeout_at=_deadline())
    sent = route.calls.last.request
    assert sent.headers["x-api-key"] == ANTHROPIC_KEY
    assert sent.headers["anthropic-version"] == "2023-06-01"
    assert sent.headers["content-type"] == "application/json"
    assert "authorization" not in sent.headers
    assert json.loads(sent.content) == request_to_anthropic(request_hello(), "claude-x")


@pytest.mark.asyncio
async def test_anthropic_custom_base_url(client: httpx.AsyncClient, respx_mock: respx.MockRouter) -> None:
    """A configured base URL (trailing slash or not) replaces api.anthropic.com."""
    route = respx_mock.post("http://127.0.0.1:9000/v1/messages").respond(200, json=ANTHROPIC_OK)
    provider = AnthropicProvider(api_key=ANTHROPIC_KEY, client=client, base_url="http://127.0.0.1:9000/")
    response = await provider.complete(request_hello(), "claude-x", timeout_at=_deadline())
    assert route.called
    assert response.id == "msg_1"


@pytest.mark.parametrize(
    ("kind", "base_url", "expected_url"),
    [
        (ProviderKind.OPENAI, None, "https://api.openai.com/v1/chat/completions"),
        (ProviderKind.OPENROUTER, None, "https://openrouter.ai/api/v1/chat/completions"),
        (ProviderKind.OLLAMA, None, "http://localhost:11434/v1/chat/completions"),
        (ProviderKind.VLLM, "http://10.0.0.5:8000/v1", "http://10.0.0.5:8000/v1/chat/completions"),
    ],
    ids=["openai", "openrouter", "ollama", "vllm"],
)
@pytest.mark.asyncio
async def test_openai_compatible_request_shape(
    client: httpx.AsyncClient,
    respx_mock: respx.MockRouter,
    kind: ProviderKind,
    base_url: str | None,
    expected_url: str,
) -> None:
    """OpenAI-compatible kinds: POST {base}/chat/completions, Bearer key, translated body, kind kept;
    OpenAI itself gets max_completion_tokens, compatible servers keep max_tokens."""
    route = respx_mock.post(expected_url).respond(200, json=OPENAI_OK)
    provider = OpenAIProvider(kind=kind, api_key=OPENAI_KEY, client=client, base_url=base_url)
    response = await provider.complete(request_hello(), "gpt-4o", timeout_at=_deadline())
    sent = route.calls.last.request
    assert sent.headers["authorization"] == f"Bearer {OPENAI_KEY}"
    caps = kind_default(kind, "gpt-4o")
    assert json.loads(sent.content) == request_to_openai(request_hello(), "gpt-4o", capabilities=caps)
    field = "max_completion_tokens" if kind is ProviderKind.OPENAI else "max_tokens"
    assert json.loads(sent.content)[field] == request_hello().max_tokens
    assert response.provider is kind
    assert provider.name == kind.value


@pytest.mark.asyncio
async def test_openai_without_key_sends_no_authorization(
    client: httpx.AsyncClient, respx_mock: respx.MockRouter
) -> None:
    """A keyless endpoint (a local Ollama) gets no Authorization header at all."""
    route = respx_mock.post("http://localhost:11434/v1/chat/completions").respond(200, json=OPENAI_OK)
    provider = OpenAIProvider(kind=ProviderKind.OLLAMA, client=client)
    await provider.complete(request_hello(), "qwen3", timeout_at=_deadline())
    assert "authorization" not in route.calls.last.request.headers


def test_openai_vllm_needs_base_url() -> None:
    """vLLM has no public default endpoint: building it without a base URL is refused."""
    with pytest.raises(ValueError, match="base_url"):
        OpenAIProvider(kind=ProviderKind.VLLM)


def test_openai_refuses_foreign_kind() -> None:
    """The OpenAI client does not pretend to be Anthropic or Bedrock."""
    with pytest.raises(ValueError, match="does not serve"):
        OpenAIProvider(kind=ProviderKind.ANTHROPIC)


def _bedrock(client: httpx.AsyncClient, base_url: str | None = None) -> BedrockProvider:
    return BedrockProvider(
        region="us-east-1",
        access_key_id=AWS_ACCESS_KEY_ID,
        secret_access_key=AWS_SECRET_ACCESS_KEY,
        session_token=AWS_SESSION_TOKEN,
        client=client,
        base_url=base_url,
    )


@pytest.mark.asyncio
async def test_bedrock_request_is_sigv4_signed(
    client: httpx.AsyncClient, respx_mock: respx.MockRouter, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bedrock: the sent request carries the SigV4 signature botocore computes for exactly what was sent."""
    monkeypatch.setattr("botocore.auth.get_current_datetime", lambda remove_tzinfo=True: FIXED_NOW)
    url = f"{BEDROCK_BASE}/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse"
    route = respx_mock.post(url).respond(200, json=BEDROCK_OK, headers={"x-amzn-requestid": "req-123"})
    await _bedrock(client).complete(request_hello(), BEDROCK_MODEL, timeout_at=_deadline())
    sent = route.calls.last.request
    assert sent.url.raw_path == b"/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse"
    assert sent.headers["x-amz-date"] == "20240102T030405Z"
    assert sent.headers["x-amz-security-token"] == AWS_SESSION_TOKEN
    authorization = sent.headers["authorization"]
    assert authorization.startswith(
        f"AWS4-HMAC-SHA256 Credential={AWS_ACCESS_KEY_ID}/20240102/us-east-1/bedrock/aws4_request, SignedHeaders="
    )
    assert json.loads(sent.content) == request_to_bedrock_converse(request_hello())
    # Re-sign what was actually sent (URL, body, the signed headers) with botocore itself.
    signed = authorization.split("SignedHeaders=")[1].split(",")[0].split(";")
    headers = {name: sent.headers[name] for name in signed if name not in {"host", "x-amz-date"}}
    reference = AWSRequest(method="POST", url=str(sent.url), data=sent.content, headers=headers)
    credentials = Credentials(AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN)
    SigV4Auth(credentials, "bedrock", "us-east-1").add_auth(reference)
    assert reference.headers["Authorization"] == authorization
    assert "traceparent" not in signed


@pytest.mark.asyncio
async def test_bedrock_response_id_from_header(client: httpx.AsyncClient, respx_mock: respx.MockRouter) -> None:
    """The Converse body has no id: the response id is the x-amzn-requestid header; the model is the one called."""
    respx_mock.post(url__regex=r".*/converse$").respond(200, json=BEDROCK_OK, headers={"x-amzn-requestid": "req-123"})
    response = await _bedrock(client).complete(request_hello(), BEDROCK_MODEL, timeout_at=_deadline())
    assert response.id == "req-123"
    assert response.model == BEDROCK_MODEL
    assert response.provider is ProviderKind.BEDROCK


@pytest.mark.asyncio
async def test_bedrock_base_url_override(client: httpx.AsyncClient, respx_mock: respx.MockRouter) -> None:
    """A base URL (a test endpoint) replaces the regional host, and the signature still covers it."""
    route = respx_mock.post("http://127.0.0.1:9001/model/m1/converse").respond(200, json=BEDROCK_OK)
    provider = _bedrock(client, base_url="http://127.0.0.1:9001")
    await provider.complete(request_hello(), "m1", timeout_at=_deadline())
    assert "SignedHeaders=" in route.calls.last.request.headers["authorization"]
    assert provider.base_url == "http://127.0.0.1:9001"


@pytest.mark.asyncio
async def test_bedrock_default_endpoint_is_regional(client: httpx.AsyncClient) -> None:
    """Without a base URL the endpoint is bedrock-runtime.{region}.amazonaws.com."""
    provider = BedrockProvider(region="eu-west-3", access_key_id="a", secret_access_key="b", client=client)
    assert provider.url_for("m") == "https://bedrock-runtime.eu-west-3.amazonaws.com/model/m/converse"


@pytest.mark.asyncio
async def test_provider_owns_client_only_when_none_given(respx_mock: respx.MockRouter) -> None:
    """A provider built without a client makes and closes its own; a shared client is left open."""
    async with httpx.AsyncClient() as shared:
        borrowed = AnthropicProvider(api_key=ANTHROPIC_KEY, client=shared)
        await borrowed.aclose()
        assert not shared.is_closed
    own = OpenAIProvider(kind=ProviderKind.OLLAMA)
    route = respx_mock.post("http://localhost:11434/v1/chat/completions").respond(200, json=OPENAI_OK)
    await own.complete(request_hello(), "qwen3", timeout_at=_deadline())
    await own.aclose()
    assert route.called
    with pytest.raises(RuntimeError):
        await own.complete(request_hello(), "qwen3", timeout_at=_deadline())


@pytest.mark.asyncio
async def test_http_stream_past_timeout_is_attempt_timeout(case: HttpCase, client: httpx.AsyncClient) -> None:
    """stream() sends nothing until iterated; with timeout_at already past the first step is ATTEMPT_TIMEOUT."""
    events = case.make(client).stream(request_hello(), case.model, timeout_at=0.0)
    with pytest.raises(ProviderCallFailed) as info:
        await anext(events)
    assert info.value.failure.kind is AttemptFailureKind.ATTEMPT_TIMEOUT
