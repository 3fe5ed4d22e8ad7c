"""Shared router test fixtures: providers on respx routes, provider-shaped bodies, policies."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable

import httpx

from routeproof.core.routing import resolve
from routeproof.core.types import (
    ChatRequest,
    FallbackProvider,
    Message,
    PrivacyTier,
    ProviderKind,
    ResolvedModel,
    TenantPolicy,
)
from routeproof.providers.anthropic import AnthropicProvider
from routeproof.providers.bedrock import BedrockProvider
from routeproof.providers.local import LocalProvider
from routeproof.providers.openai import OpenAIProvider
from routeproof.providers.protocol import Provider

ANTHROPIC_KEY = "sk-ant-SECRET-test-key-0001"
OPENAI_KEY = "sk-openai-SECRET-test-key-0002"
AWS_SECRET = "aws-SECRET-access-key-0003"

BEDROCK_BASE = "https://bedrock-runtime.us-east-1.amazonaws.com"
ANTHROPIC_URL = "https://api.anthropic.com/v1/messages"
OPENAI_URL = "https://api.openai.com/v1/chat/completions"

B, A, OA = ProviderKind.BEDROCK, ProviderKind.ANTHROPIC, ProviderKind.OPENAI
ALIAS = "chat.smart"
MODELS = {B: "claude-b", A: "claude-sonnet-4-20250514", OA: "gpt-4o"}


def bedrock_url(model: str = MODELS[B]) -> str:
    """The Converse URL of a Bedrock model."""
    return f"{BEDROCK_BASE}/model/{model}/converse"


def providers(client: httpx.AsyncClient) -> list[Provider]:
    """Bedrock, Anthropic and OpenAI clients on ``client``, plus the in-process Local model."""
    return [
        BedrockProvider(
            region="us-east-1",
            access_key_id="AKIDEXAMPLE",
            secret_access_key=AWS_SECRET,
            client=client,
            base_url=BEDROCK_BASE,
        ),
        AnthropicProvider(api_key=ANTHROPIC_KEY, client=client),
        OpenAIProvider(api_key=OPENAI_KEY, client=client),
        LocalProvider(),
    ]


def policy(
    primary: ProviderKind = B,
    fallbacks: Iterable[ProviderKind] = (),
    tier: PrivacyTier = PrivacyTier.STANDARD,
    **kw: bool,
) -> TenantPolicy:
    """A policy whose alias points at ``primary`` and falls back through ``fallbacks``."""
    return TenantPolicy(
        tenant_id="t1",
        privacy_tier=tier,
        primary={ALIAS: (primary, MODELS.get(primary, "local-model"))},
        fallback_chain=tuple(
            FallbackProvider(kind=k, model_alias_map={ALIAS: MODELS.get(k, "local-model")}) for k in fallbacks
        ),
        context_window_failover=kw.get("context_window_failover", False),
    )


def resolved_for(tenant: TenantPolicy, alias: str = ALIAS) -> ResolvedModel:
    """The alias resolved the only way production code may: through ``resolve``."""
    result = resolve(alias, tenant)
    assert result is not None
    return result


def request(text: str = "What is 2 + 2?", max_tokens: int = 256) -> ChatRequest:
    """A small user request for the test alias."""
    return ChatRequest(messages=(Message.user(text),), max_tokens=max_tokens, alias=ALIAS)


def anthropic_body(text: str = "4", msg_id: str = "msg_01", in_tok: int = 12, out_tok: int = 3) -> dict[str, object]:
    """A documented Anthropic Messages answer."""
    return {
        "id": msg_id,
        "type": "message",
        "role": "assistant",
        "model": MODELS[A],
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": in_tok, "output_tokens": out_tok},
    }


def openai_body(text: str = "4", msg_id: str = "chatcmpl-1", in_tok: int = 12, out_tok: int = 3) -> dict[str, object]:
    """A documented OpenAI chat.completion answer."""
    return {
        "id": msg_id,
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": MODELS[OA],
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": in_tok, "completion_tokens": out_tok, "total_tokens": in_tok + out_tok},
    }


def bedrock_body(text: str = "4", in_tok: int = 12, out_tok: int = 3) -> dict[str, object]:
    """A documented Bedrock Converse answer (the id travels in x-amzn-requestid)."""
    return {
        "output": {"message": {"role": "assistant", "content": [{"text": text}]}},
        "stopReason": "end_turn",
        "usage": {"inputTokens": in_tok, "outputTokens": out_tok, "totalTokens": in_tok + out_tok},
        "metrics": {"latencyMs": 850},
    }


def bedrock_ok(text: str = "4", request_id: str = "req-1") -> httpx.Response:
    """A Bedrock 200 with its request id header."""
    return httpx.Response(200, json=bedrock_body(text), headers={"x-amzn-requestid": request_id})


def status(code: int, headers: dict[str, str] | None = None, body: object = None) -> httpx.Response:
    """An error answer with an optional JSON body."""
    content = json.dumps(body if body is not None else {"message": f"status {code}"}).encode()
    return httpx.Response(code, content=content, headers={"content-type": "application/json", **(headers or {})})


def deadline(seconds: float = 30.0) -> float:
    """An absolute deadline ``seconds`` from now on the running loop's clock."""
    return asyncio.get_running_loop().time() + seconds
