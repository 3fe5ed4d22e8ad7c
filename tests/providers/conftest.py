"""Shared fixtures: one case per HTTP provider (how to build it, where it posts, a valid answer)."""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

import httpx
import pytest
import pytest_asyncio

from routeproof.core.types import ChatRequest, Message, ProviderKind
from routeproof.providers.anthropic import AnthropicProvider
from routeproof.providers.bedrock import BedrockProvider
from routeproof.providers.openai import OpenAIProvider
from routeproof.providers.protocol import Provider

ANTHROPIC_KEY = "sk-ant-test-SECRET-0123456789"
OPENAI_KEY = "sk-openai-test-SECRET-0123456789"
AWS_ACCESS_KEY_ID = "AKIDEXAMPLE0123456789"
AWS_SECRET_ACCESS_KEY = "wJalrXUtnFEMI-SECRET-bPxRfiCYEXAMPLEKEY"
AWS_SESSION_TOKEN = "session-token-SECRET-0123456789"
BEDROCK_BASE = "https://bedrock-runtime.us-east-1.amazonaws.com"
BEDROCK_MODEL = "anthropic.claude-3-5-sonnet-20240620-v1:0"

ANTHROPIC_OK: dict[str, object] = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-x",
    "content": [{"type": "text", "text": "hi"}],
    "stop_reason": "end_turn",
    "usage": {"input_tokens": 3, "output_tokens": 1},
}
OPENAI_OK: dict[str, object] = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1,
    "model": "gpt-4o",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
}
BEDROCK_OK: dict[str, object] = {
    "output": {"message": {"role": "assistant", "content": [{"text": "hi"}]}},
    "stopReason": "end_turn",
    "usage": {"inputTokens": 3, "outputTokens": 1, "totalTokens": 4},
    "metrics": {"latencyMs": 10},
}


@dataclass(frozen=True, slots=True, kw_only=True)
class HttpCase:
    """How to build one HTTP provider and what its endpoint looks like."""

    label: str
    kind: ProviderKind
    make: Callable[[httpx.AsyncClient], Provider]
    model: str
    url: str
    ok_body: dict[str, object]
    ok_headers: dict[str, str] = field(default_factory=dict)
    secrets: tuple[str, ...] = ()


def _anthropic(client: httpx.AsyncClient) -> Provider:
    return AnthropicProvider(api_key=ANTHROPIC_KEY, client=client)


def _openai(client: httpx.AsyncClient) -> Provider:
    return OpenAIProvider(kind=ProviderKind.OPENAI, api_key=OPENAI_KEY, client=client)


def _bedrock(client: httpx.AsyncClient) -> Provider:
    return BedrockProvider(
        region="us-east-1",
        access_key_id=AWS_ACCESS_KEY_ID,
        secret_access_key=AWS_SECRET_ACCESS_KEY,
        session_token=AWS_SESSION_TOKEN,
        client=client,
    )


HTTP_CASES = (
    HttpCase(
        label="anthropic",
        kind=ProviderKind.ANTHROPIC,
        make=_anthropic,
        model="claude-x",
        url="https://api.anthropic.com/v1/messages",
        ok_body=ANTHROPIC_OK,
        secrets=(ANTHROPIC_KEY,),
    ),
    HttpCase(
        label="openai",
        kind=ProviderKind.OPENAI,
        make=_openai,
        model="gpt-4o",
        url="https://api.openai.com/v1/chat/completions",
        ok_body=OPENAI_OK,
        secrets=(OPENAI_KEY,),
    ),
    HttpCase(
        label="bedrock",
        kind=ProviderKind.BEDROCK,
        make=_bedrock,
        model=BEDROCK_MODEL,
        url=f"{BEDROCK_BASE}/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse",
        ok_body=BEDROCK_OK,
        ok_headers={"x-amzn-requestid": "req-123"},
        secrets=(AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_ACCESS_KEY_ID),
    ),
)


def request_hello() -> ChatRequest:
    """A one-turn request with a system prompt."""
    return ChatRequest(messages=(Message.user("hello"),), system="be brief", max_tokens=64)


@pytest.fixture(params=HTTP_CASES, ids=lambda case: case.label)
def case(request: pytest.FixtureRequest) -> HttpCase:
    """Each HTTP provider in turn."""
    value: HttpCase = request.param
    return value


@pytest.fixture(scope="session")
def tls_context() -> ssl.SSLContext:
    """One TLS context for the session: loading the CA bundle per client costs ~0.1 s a test."""
    return ssl.create_default_context()


@pytest_asyncio.fixture
async def client(tls_context: ssl.SSLContext) -> AsyncIterator[httpx.AsyncClient]:
    """One pooled client, as the router owns it."""
    async with httpx.AsyncClient(verify=tls_context) as pooled:
        yield pooled
