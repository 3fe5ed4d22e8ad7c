"""The Responses API through the gateway with three providers of three protocols behind it — Anthropic
Messages, then Bedrock Converse, then OpenAI Chat Completions — and failover down the chain."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import openai
import pytest
import pytest_asyncio
from openai.types.responses import FunctionToolParam
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from routeproof.gateway import ATTEMPTS_HEADER, Backend
from routeproof.mock import DEFAULT_TEXT, DEFAULT_TOOL_INPUT, MockProviderServer, Scripted, Shape
from tests.gateway.conftest import ENVIRON, FAST_BACKOFF, GATEWAY_KEY, serve

pytestmark = pytest.mark.asyncio
AWS = {"AWS_ACCESS_KEY_ID": "AKIDRESPONSES0123456", "AWS_SECRET_ACCESS_KEY": "responses-SECRET-aws-key"}
DOWN = (Scripted(status=503), Scripted(status=503), Scripted(status=503))


def _agent_toml(anthropic: str, bedrock: str, openai_url: str) -> str:
    return f"""
[driver.providers.anthropic]
base_url = "{anthropic}"
model = "claude-sonnet-4-20250514"
priority = 1

[driver.providers.bedrock]
base_url = "{bedrock}"
region = "us-east-1"
model = "anthropic.claude-3-haiku-20240307-v1:0"
priority = 2

[driver.providers.openai]
base_url = "{openai_url}/v1"
model = "gpt-4o"
priority = 3

{FAST_BACKOFF}

[gateway]
aliases = ["chat"]

[gateway.tenants.team-a]
key_env = "GW_KEY_A"
"""


class Three:
    """The three mocks and an SDK client on the gateway in front of them."""

    def __init__(self, anthropic: MockProviderServer, bedrock: MockProviderServer, oai: MockProviderServer,
                 client: openai.AsyncOpenAI) -> None:  # fmt: skip
        self.anthropic, self.bedrock, self.openai, self.client = anthropic, bedrock, oai, client


@pytest_asyncio.fixture
async def three(tmp_path: Path, metrics_reader: InMemoryMetricReader | None) -> AsyncIterator[Three]:
    """Anthropic, Bedrock and OpenAI mocks behind a gateway, and a client on it."""
    async with (
        MockProviderServer(Shape.ANTHROPIC) as anthropic,
        MockProviderServer(Shape.BEDROCK) as bedrock,
        MockProviderServer(Shape.OPENAI) as oai,
    ):
        path = tmp_path / "agent.toml"
        path.write_text(_agent_toml(anthropic.base_url, bedrock.base_url, oai.base_url))
        async with serve(Backend.load(path, environ={**ENVIRON, **AWS}), metrics_reader) as (url, _, _):
            client = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key=GATEWAY_KEY, max_retries=0, timeout=15)
            async with client:
                yield Three(anthropic, bedrock, oai, client)


async def test_each_protocol_answers_in_turn_as_the_ones_before_it_fail(three: Three) -> None:
    """Anthropic answers; Anthropic down, Bedrock answers; both down, OpenAI answers — each a valid Response."""
    providers = []
    for down in ((), (three.anthropic,), (three.anthropic, three.bedrock)):
        for server in down:
            server.script(*DOWN)
        raw = await three.client.responses.with_raw_response.create(model="chat", input="hi", instructions="brief")
        assert raw.parse().output_text == DEFAULT_TEXT
        providers.append(json.loads(raw.headers[ATTEMPTS_HEADER])[-1]["provider"])
    assert providers == ["anthropic", "bedrock", "openai"]
    converse = three.bedrock.journal[-1].body_json
    assert isinstance(converse, dict)
    assert converse["system"] == [{"text": "brief"}]


async def test_bedrock_streams_a_function_call_as_responses_events(three: Three) -> None:
    """With Anthropic down, Bedrock's streamed tool use arrives as function_call events the SDK assembles."""
    three.anthropic.script(*DOWN)
    tool: FunctionToolParam = {"type": "function", "name": "search", "parameters": {"type": "object"}, "strict": False}
    async with three.client.responses.stream(model="chat", input="find", tools=[tool]) as stream:
        final = await stream.get_final_response()
    calls = [item for item in final.output if item.type == "function_call"]
    assert [c.name for c in calls] == ["search"]
    assert json.loads(calls[0].arguments) == json.loads(DEFAULT_TOOL_INPUT)
    assert three.bedrock.journal[-1].path.endswith("/converse-stream")
