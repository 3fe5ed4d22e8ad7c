"""Providers never send what the model rejects: the body, the dropped-parameter report, strict mode."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from routeproof.core.routing import resolve
from routeproof.core.types import ChatRequest, FallbackProvider, Message, ProviderKind, TenantPolicy
from routeproof.mock import MockProviderServer, Shape
from routeproof.providers import capabilities as caps_module
from routeproof.providers.anthropic import AnthropicProvider
from routeproof.providers.local import LocalProvider
from routeproof.providers.openai import OpenAIProvider
from routeproof.router import Router

TIMEOUT_S = 10.0  # bounds every call of these tests
pytestmark = pytest.mark.asyncio


def _request(**fields: object) -> ChatRequest:
    return ChatRequest(messages=(Message.user("hi"),), alias="chat", **fields)  # type: ignore[arg-type]  # test kwargs


async def test_gpt5_gets_max_completion_tokens_and_no_temperature_and_says_so() -> None:
    """Message.user('hi') with temperature 0.2 to gpt-5.4-mini: max_completion_tokens, no temperature, reported."""
    async with MockProviderServer(Shape.OPENAI) as server, httpx.AsyncClient() as client:
        provider = OpenAIProvider(api_key="k", client=client, base_url=f"{server.base_url}/v1")
        loop = asyncio.get_running_loop()
        response = await provider.complete(
            _request(temperature=0.2), "gpt-5.4-mini", timeout_at=loop.time() + TIMEOUT_S
        )
        sent = server.journal[-1].body_json
    assert isinstance(sent, dict)
    assert sent["max_completion_tokens"] == 1024
    assert "max_tokens" not in sent
    assert "temperature" not in sent
    assert response.dropped_parameters == ("temperature",)


async def test_o3_gets_no_stop_and_a_streamed_call_drops_it_too() -> None:
    """o3 takes no stop sequences: they are left out of the streamed body as well."""
    async with MockProviderServer(Shape.OPENAI) as server, httpx.AsyncClient() as client:
        provider = OpenAIProvider(api_key="k", client=client, base_url=f"{server.base_url}/v1")
        loop = asyncio.get_running_loop()
        stream = provider.stream(_request(stop_sequences=("END",)), "o3", timeout_at=loop.time() + TIMEOUT_S)
        _ = [event async for event in stream]
        sent = server.journal[-1].body_json
    assert isinstance(sent, dict)
    assert "stop" not in sent
    assert sent["messages"][0]["role"] == "user"


async def test_claude_opus_4_7_gets_no_temperature() -> None:
    """Anthropic Opus 4.7 rejects temperature: it is left out and reported."""
    async with MockProviderServer(Shape.ANTHROPIC) as server, httpx.AsyncClient() as client:
        provider = AnthropicProvider(api_key="k", client=client, base_url=server.base_url)
        loop = asyncio.get_running_loop()
        response = await provider.complete(
            _request(temperature=0.5), "claude-opus-4-7", timeout_at=loop.time() + TIMEOUT_S
        )
        sent = server.journal[-1].body_json
        version = server.journal[-1].header("anthropic-version")
    assert isinstance(sent, dict)
    assert "temperature" not in sent
    assert response.dropped_parameters == ("temperature",)
    assert version == "2023-06-01"


async def test_strict_parameters_skip_the_provider_with_a_skip_record() -> None:
    """With strict_parameters the gpt-5 entry is skipped (unsupported_parameter) and the fallback answers."""
    policy = TenantPolicy(
        primary={"chat": (ProviderKind.OPENAI, "gpt-5.4-mini")},
        fallback_chain=(FallbackProvider(kind=ProviderKind.LOCAL, model_alias_map={"chat": "local-echo"}),),
    )
    async with MockProviderServer(Shape.OPENAI) as server, httpx.AsyncClient() as client:
        router = Router([OpenAIProvider(api_key="k", client=client, base_url=f"{server.base_url}/v1"), LocalProvider()])
        resolved = resolve("chat", policy)
        assert resolved is not None
        deadline = asyncio.get_running_loop().time() + TIMEOUT_S
        response = await router.call_provider(
            _request(temperature=0.2, strict_parameters=True), resolved, deadline, policy
        )
        assert server.journal == ()
    assert response.provider is ProviderKind.LOCAL
    skipped = [(s.provider, s.reason) for s in response.skipped]
    assert skipped == [(ProviderKind.OPENAI, "unsupported_parameter: temperature")]


async def test_a_user_table_named_by_the_environment_overrides_the_shipped_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ROUTEPROOF_MODELS_TOML rows apply after the shipped ones, without a release."""
    table = tmp_path / "models.toml"
    table.write_text('[[models]]\nprovider = "openai"\nmatch = "^gpt-5"\ntemperature = true\n', encoding="utf-8")
    monkeypatch.setenv(caps_module.MODELS_TOML_ENV, str(table))
    assert caps_module.default_capabilities().lookup(ProviderKind.OPENAI, "gpt-5.4-mini").temperature is True
    monkeypatch.setenv(caps_module.MODELS_TOML_ENV, str(tmp_path / "missing.toml"))
    with pytest.raises(Exception, match="cannot be read"):
        caps_module.default_capabilities()


async def test_a_streamed_call_reports_the_dropped_parameters_too() -> None:
    """Router streaming to gpt-5.4-mini with temperature: the stream says temperature was left out."""
    policy = TenantPolicy(primary={"chat": (ProviderKind.OPENAI, "gpt-5.4-mini")})
    async with MockProviderServer(Shape.OPENAI) as server, httpx.AsyncClient() as client:
        router = Router([OpenAIProvider(api_key="k", client=client, base_url=f"{server.base_url}/v1")])
        resolved = resolve("chat", policy)
        assert resolved is not None
        deadline = asyncio.get_running_loop().time() + TIMEOUT_S
        stream = router.call_provider_streaming(_request(temperature=0.2), resolved, deadline, policy)
        _ = [event async for event in stream]
        sent = server.journal[-1].body_json
    assert stream.dropped_parameters == ("temperature",)
    assert isinstance(sent, dict)
    assert "temperature" not in sent


async def test_bedrock_opus_4_7_gets_no_temperature_plain_or_streamed() -> None:
    """Opus 4.7 through Bedrock Converse: no inferenceConfig.temperature, plain or streamed, and reported."""
    from routeproof.providers.bedrock import BedrockProvider

    model = "us.anthropic.claude-opus-4-7-v1:0"
    async with MockProviderServer(Shape.BEDROCK) as server, httpx.AsyncClient() as client:
        provider = BedrockProvider(
            region="us-east-1",
            access_key_id="AKIDEXAMPLE",
            secret_access_key="s",
            client=client,
            base_url=server.base_url,
        )
        loop = asyncio.get_running_loop()
        response = await provider.complete(_request(temperature=0.5), model, timeout_at=loop.time() + TIMEOUT_S)
        plain = server.journal[-1].body_json
        _ = [e async for e in provider.stream(_request(temperature=0.5), model, timeout_at=loop.time() + TIMEOUT_S)]
        streamed = server.journal[-1].body_json
        kept = await provider.complete(
            _request(temperature=0.5), "anthropic.claude-sonnet-4-20250514-v1:0", timeout_at=loop.time() + TIMEOUT_S
        )
        older = server.journal[-1].body_json
    for sent in (plain, streamed):
        assert isinstance(sent, dict)
        assert "temperature" not in sent.get("inferenceConfig", {})
    assert response.dropped_parameters == ("temperature",)
    assert provider.dropped_parameters(_request(temperature=0.5), model) == ("temperature",)
    assert isinstance(older, dict)
    assert older["inferenceConfig"]["temperature"] == 0.5
    assert kept.dropped_parameters == ()
