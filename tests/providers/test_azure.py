"""Azure OpenAI: deployment URLs, api-key or bearer auth, retry-after-ms, content filtering, config,
``check_provider``, and the mock checked against the official ``openai.AzureOpenAI`` client."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import openai
import pytest

from routeproof import ChatRequest, Message, ProviderCallFailed, ProviderKind
from routeproof.config import load_config
from routeproof.core.types import FinishReason, MessageStop
from routeproof.errors import ConfigError
from routeproof.mock import DEFAULT_TEXT, MockProviderServer, Scripted, Shape
from routeproof.mock.variants import AZURE_CONTENT_FILTER
from routeproof.providers.azure import AzureOpenAIProvider
from routeproof.testing import Scenario, Subject, check_provider, wire_scenario

KEY = "azure-SECRET-key-0123456789"
HELLO = ChatRequest(messages=(Message.user("hi"),), max_tokens=16)


def _provider(url: str, *, bearer: bool = False, version: str = "2024-10-21") -> AzureOpenAIProvider:
    return AzureOpenAIProvider(endpoint=url, api_key=KEY, api_version=version, bearer_auth=bearer)


def _deadline() -> float:
    return asyncio.get_running_loop().time() + 10


@pytest.mark.asyncio
@pytest.mark.looptime(end=600)
async def test_the_azure_provider_passes_check_provider() -> None:
    """AzureOpenAIProvider passes every check_provider scenario over Azure-shaped wire answers."""

    def factory(scenario: Scenario) -> Subject:
        wire = wire_scenario(Shape.AZURE, scenario, secret=KEY)
        client = httpx.AsyncClient(transport=wire.transport)
        provider = AzureOpenAIProvider(endpoint="https://res.openai.azure.com", api_key=KEY, api_version="v1",
                                       client=client)  # fmt: skip
        return Subject(provider=provider, secret=KEY, released=wire.released)

    assert await check_provider(factory) == ()


@pytest.mark.asyncio
async def test_deployment_url_api_version_and_api_key_header() -> None:
    """A call goes to the deployment's URL with api-version, authenticated by the api-key header."""
    async with MockProviderServer(Shape.AZURE) as mock:
        provider = _provider(mock.base_url)
        try:
            answer = await provider.complete(HELLO, "my-gpt4o", timeout_at=_deadline())
        finally:
            await provider.aclose()
        entry = mock.journal[0]
    assert answer.choices[0].content == DEFAULT_TEXT
    assert entry.path == "/openai/deployments/my-gpt4o/chat/completions?api-version=2024-10-21"
    assert entry.model == "my-gpt4o"
    assert entry.auth_present
    assert entry.header("authorization") is None  # the key went as api-key (a secret: not journaled)


@pytest.mark.asyncio
async def test_bearer_auth_and_the_v1_api() -> None:
    """auth = bearer sends the token as Authorization: Bearer; api_version v1 uses /openai/v1 without a query."""
    async with MockProviderServer(Shape.AZURE) as mock:
        provider = _provider(mock.base_url, bearer=True, version="v1")
        try:
            await provider.complete(HELLO, "gpt-4o", timeout_at=_deadline())
            streamed = [e async for e in provider.stream(HELLO, "gpt-4o", timeout_at=_deadline())]
        finally:
            await provider.aclose()
        paths = [e.path for e in mock.journal]
    assert paths == ["/openai/v1/chat/completions"] * 2
    assert "".join(getattr(e, "text", "") for e in streamed) == DEFAULT_TEXT


@pytest.mark.asyncio
async def test_a_429_waits_retry_after_ms_not_retry_after() -> None:
    """Azure's 429 says retry-after: 1 and retry-after-ms: 20; the failure carries 20 ms."""
    async with MockProviderServer(Shape.AZURE) as mock:
        mock.script(Scripted(status=429))
        provider = _provider(mock.base_url)
        try:
            with pytest.raises(ProviderCallFailed) as caught:
                await provider.complete(HELLO, "my-gpt4o", timeout_at=_deadline())
        finally:
            await provider.aclose()
    assert caught.value.failure.http_status == 429
    assert caught.value.failure.retry_after_ms == 20


@pytest.mark.asyncio
async def test_content_filter_is_terminal_or_filtered_never_an_empty_success() -> None:
    """A filtered prompt is a 400 naming content_filter; a filtered completion is FinishReason.CONTENT_FILTER."""
    filtered = {"id": "c", "object": "chat.completion", "created": 1, "model": "gpt-4o",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": None},
                             "finish_reason": "content_filter"}],
                "usage": {"prompt_tokens": 3, "completion_tokens": 0, "total_tokens": 3}}  # fmt: skip
    async with MockProviderServer(Shape.AZURE) as mock:
        mock.script(Scripted(status=400, body=AZURE_CONTENT_FILTER), Scripted(body=filtered))
        provider = _provider(mock.base_url)
        try:
            with pytest.raises(ProviderCallFailed) as caught:
                await provider.complete(HELLO, "my-gpt4o", timeout_at=_deadline())
            answer = await provider.complete(HELLO, "my-gpt4o", timeout_at=_deadline())
        finally:
            await provider.aclose()
    assert caught.value.failure.http_status == 400
    assert "content_filter" in caught.value.failure.message
    assert answer.finish_reason is FinishReason.CONTENT_FILTER


def test_the_mock_speaks_what_the_official_azure_client_expects() -> None:
    """openai.AzureOpenAI (its own URL building, api-key header and error parsing) against the Azure mock."""

    async def run() -> tuple[str, int, str]:
        async with MockProviderServer(Shape.AZURE) as mock:
            client = openai.AsyncAzureOpenAI(
                azure_endpoint=mock.base_url, api_key=KEY, api_version="2024-10-21", max_retries=0
            )
            async with client:
                answer = await client.chat.completions.create(
                    model="my-gpt4o", messages=[{"role": "user", "content": "hi"}]
                )
                mock.script(Scripted(status=429))
                with pytest.raises(openai.RateLimitError) as caught:
                    await client.chat.completions.create(model="my-gpt4o", messages=[{"role": "user", "content": "x"}])
            path = mock.journal[0].path
        return answer.choices[0].message.content or "", caught.value.status_code, path

    text, status, path = asyncio.run(run())
    assert text == DEFAULT_TEXT
    assert status == 429
    assert path == "/openai/deployments/my-gpt4o/chat/completions?api-version=2024-10-21"


def _config(tmp_path: Path, table: str) -> Path:
    path = tmp_path / "agent.toml"
    path.write_text(f'[driver.providers.azure]\nkind = "azure"\nmodel = "my-gpt4o"\n{table}\n')
    return path


def test_azure_is_configured_from_agent_toml(tmp_path: Path) -> None:
    """kind = azure reads the endpoint, api_version (default the GA version) and the key from the environment."""
    config = load_config(
        _config(tmp_path, 'base_url = "https://res.openai.azure.com"'), environ={"AZURE_OPENAI_API_KEY": KEY}
    )
    provider = config.provider("azure")
    assert provider.kind is ProviderKind.AZURE
    assert provider.api_version == "2024-10-21"
    assert provider.api_key == KEY
    assert not provider.bearer_auth
    bearer = load_config(
        _config(tmp_path, 'base_url = "https://res.openai.azure.com"\nauth = "bearer"\napi_version = "v1"'),
        environ={"AZURE_OPENAI_AD_TOKEN": "tok"},
    ).provider("azure")
    assert (bearer.bearer_auth, bearer.api_key, bearer.api_version) == (True, "tok", "v1")


@pytest.mark.parametrize(
    ("table", "named"),
    [
        ("", "base_url"),
        ('base_url = "https://res.openai.azure.com"\napi_version = "latest"', "api_version"),
        ('base_url = "https://res.openai.azure.com"\nauth = "magic"', "auth"),
    ],
)
def test_bad_azure_config_fails_at_load_naming_the_key(tmp_path: Path, table: str, named: str) -> None:
    """A missing endpoint, a malformed api_version or an unknown auth fails at load, naming the key."""
    with pytest.raises(ConfigError, match=named):
        load_config(_config(tmp_path, table), environ={"AZURE_OPENAI_API_KEY": KEY})


@pytest.mark.asyncio
async def test_a_stream_led_by_prompt_filter_results_and_cut_by_the_filter() -> None:
    """Azure's stream opens with a choices-less prompt_filter_results chunk; a completion the filter
    stops ends with MessageStop(CONTENT_FILTER), the text before it kept."""
    filters = {"hate": {"filtered": False, "severity": "safe"}}
    events = (
        {"data": {"id": "", "object": "", "created": 0, "model": "", "choices": [],
                  "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": filters}]}},
        {"data": {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o", "choices": [
            {"index": 0, "delta": {"role": "assistant", "content": "Once"}, "finish_reason": None,
             "content_filter_results": filters}]}},
        {"data": {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o", "choices": [
            {"index": 0, "delta": {}, "finish_reason": "content_filter"}]}},
        {"data": {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o", "choices": [],
                  "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6}}},
        {"data": "[DONE]"},
    )  # fmt: skip
    async with MockProviderServer(Shape.AZURE) as mock:
        mock.script(Scripted(stream_events=events))
        provider = _provider(mock.base_url)
        try:
            seen = [e async for e in provider.stream(HELLO, "my-gpt4o", timeout_at=_deadline())]
        finally:
            await provider.aclose()
    assert "".join(getattr(e, "text", "") for e in seen) == "Once"
    last = seen[-1]
    assert isinstance(last, MessageStop)
    assert last.stop_reason is FinishReason.CONTENT_FILTER
