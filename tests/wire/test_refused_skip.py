"""A provider skipped because the caller set a field its protocol refuses is recorded naming the field."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from typing import Any

import httpx
import pytest

from routeproof import NoEligibleProvider, Router
from routeproof.core.formats.translate import parse_openai_request
from routeproof.core.messages import WireFormat, WireOrigin
from routeproof.core.routing import resolve
from routeproof.core.types import ChatRequest, FallbackProvider, ProviderKind, TenantPolicy
from routeproof.mock import MockProviderServer, Shape
from routeproof.providers.anthropic import AnthropicProvider
from routeproof.providers.openai import OpenAIProvider

pytestmark = pytest.mark.asyncio
TIMEOUT_S = 10.0
AUDIO = {"voice": "alloy", "format": "wav"}  # OpenAI's audio output: refused for Anthropic (no audio)


def _request(body: dict[str, Any]) -> ChatRequest:
    """The request as the gateway builds it from an OpenAI caller's ``body`` (its origin kept)."""
    req, extras = parse_openai_request(body)
    origin = WireOrigin(protocol=WireFormat.OPENAI_CHAT, body_json=json.dumps(body), untranslated=extras.untranslated)
    return replace(req, alias="chat", origin=origin)


def _tenant(*chain: tuple[ProviderKind, str]) -> TenantPolicy:
    (kind, model), *rest = chain
    return TenantPolicy(
        primary={"chat": (kind, model)},
        fallback_chain=tuple(FallbackProvider(kind=k, model_alias_map={"chat": m}) for k, m in rest),
    )


async def test_the_skip_record_names_the_refused_field_and_the_next_provider_answers() -> None:
    """Anthropic first, OpenAI second, an OpenAI caller's ``audio``: Anthropic is skipped with
    ``untranslatable: audio`` (nothing sent), OpenAI answers with the field verbatim."""
    body = {"model": "chat", "max_tokens": 32, "audio": AUDIO, "messages": [{"role": "user", "content": "hi"}]}
    async with (
        MockProviderServer(Shape.ANTHROPIC) as ant,
        MockProviderServer(Shape.OPENAI) as oai,
        httpx.AsyncClient() as client,
    ):
        router = Router([
            AnthropicProvider(api_key="k", client=client, base_url=ant.base_url),
            OpenAIProvider(api_key="k", client=client, base_url=f"{oai.base_url}/v1"),
        ])  # fmt: skip
        tenant = _tenant((ProviderKind.ANTHROPIC, "claude-sonnet-4-5"), (ProviderKind.OPENAI, "gpt-4o"))
        deadline = asyncio.get_running_loop().time() + TIMEOUT_S
        answer = await router.call_provider(_request(body), resolve("chat", tenant), deadline, tenant)
        assert ant.journal == ()
        sent = oai.journal[-1].body_json
    assert answer.provider is ProviderKind.OPENAI
    assert [(s.provider, s.reason) for s in answer.skipped] == [(ProviderKind.ANTHROPIC, "untranslatable: audio")]
    assert isinstance(sent, dict)
    assert sent["audio"] == AUDIO


async def test_when_no_provider_can_carry_it_the_error_names_the_field() -> None:
    """An Anthropic-only chain: NoEligibleProvider names the provider and ``untranslatable: audio``."""
    body = {"model": "chat", "max_tokens": 32, "audio": AUDIO, "messages": [{"role": "user", "content": "hi"}]}
    async with MockProviderServer(Shape.ANTHROPIC) as ant, httpx.AsyncClient() as client:
        router = Router([AnthropicProvider(api_key="k", client=client, base_url=ant.base_url)])
        tenant = _tenant((ProviderKind.ANTHROPIC, "claude-sonnet-4-5"))
        deadline = asyncio.get_running_loop().time() + TIMEOUT_S
        with pytest.raises(NoEligibleProvider, match="untranslatable: audio"):
            await router.call_provider(_request(body), resolve("chat", tenant), deadline, tenant)
        assert ant.journal == ()
