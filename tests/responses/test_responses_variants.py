"""Azure OpenAI and Gemini configured from agent.toml behind the gateway, answering the Responses API:
Azure's 429 wait (retry-after-ms) is honoured by the router, and Gemini takes over when Azure is down."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import openai
import pytest
import pytest_asyncio
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from routeproof.gateway import ATTEMPTS_HEADER, Backend
from routeproof.mock import DEFAULT_TEXT, MockProviderServer, Scripted, Shape
from tests.gateway.conftest import ENVIRON, GATEWAY_KEY, serve

pytestmark = pytest.mark.asyncio
KEYS = {"AZURE_OPENAI_API_KEY": "azure-SECRET-gw", "GEMINI_API_KEY": "gemini-SECRET-gw"}


def _agent_toml(azure: str, gemini: str) -> str:
    return f"""
[driver.providers.azure]
kind = "azure"
base_url = "{azure}"
model = "my-gpt4o"
priority = 1

[driver.providers.gemini]
base_url = "{gemini}/v1beta/openai"
model = "gemini-2.5-flash"
priority = 2

[driver.backoff]
policy = "full_jitter"
base_ms = 1
cap_ms = 2
max_retries = 3

[gateway]
aliases = ["chat"]

[gateway.tenants.team-a]
key_env = "GW_KEY_A"
"""


@pytest_asyncio.fixture
async def pair(
    tmp_path: Path, metrics_reader: InMemoryMetricReader | None
) -> AsyncIterator[tuple[MockProviderServer, MockProviderServer, openai.AsyncOpenAI]]:
    """Azure and Gemini mocks behind a gateway, and an SDK client on it."""
    async with MockProviderServer(Shape.AZURE) as azure, MockProviderServer(Shape.GEMINI) as gemini:
        path = tmp_path / "agent.toml"
        path.write_text(_agent_toml(azure.base_url, gemini.base_url))
        async with serve(Backend.load(path, environ={**ENVIRON, **KEYS}), metrics_reader) as (url, _, _):
            client = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key=GATEWAY_KEY, max_retries=0, timeout=15)
            async with client:
                yield azure, gemini, client


async def test_azure_answers_after_its_429_wait(
    pair: tuple[MockProviderServer, MockProviderServer, openai.AsyncOpenAI],
) -> None:
    """Azure's 429 (retry-after-ms 20) is retried on Azure itself, which then answers."""
    azure, gemini, client = pair
    azure.script(Scripted(status=429))
    raw = await client.responses.with_raw_response.create(model="chat", input="hi")
    assert raw.parse().output_text == DEFAULT_TEXT
    attempts = json.loads(raw.headers[ATTEMPTS_HEADER])
    assert [(a["provider"], a["http_status"]) for a in attempts] == [("azure", 429), ("azure", 200)]
    assert attempts[0]["retry_reason"] is not None
    assert azure.journal[-1].path == "/openai/deployments/my-gpt4o/chat/completions?api-version=2024-10-21"
    assert not gemini.journal


async def test_gemini_takes_over_when_azure_is_down(
    pair: tuple[MockProviderServer, MockProviderServer, openai.AsyncOpenAI],
) -> None:
    """Azure failing three times fails over to Gemini, plain and streamed."""
    azure, gemini, client = pair
    azure.script(*(Scripted(status=503),) * 3)
    response = await client.responses.create(model="chat", input="hi")
    assert response.output_text == DEFAULT_TEXT
    azure.script(*(Scripted(status=503),) * 3)
    async with client.responses.stream(model="chat", input="hi") as stream:
        final = await stream.get_final_response()
    assert final.output_text == DEFAULT_TEXT
    assert [e.path for e in gemini.journal] == ["/v1beta/openai/chat/completions"] * 2
