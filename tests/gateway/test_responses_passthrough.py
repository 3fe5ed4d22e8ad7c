"""The Responses API sent verbatim to a provider that serves it (``responses_api = true``), with
Anthropic, Bedrock and a Chat-only OpenAI provider behind it in the chain, through ``routeproof serve``
and the official ``openai`` SDK: OpenAI's own objects, events and ids relayed; state pinned to it."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import httpx
import openai
import pydantic
import pytest
import pytest_asyncio
from openai.types.responses import Response, ResponseStreamEvent
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from routeproof.gateway import ATTEMPTS_HEADER, Backend
from routeproof.mock import DEFAULT_TEXT, MockProviderServer, Scripted, Shape
from routeproof.mock.responses import ResponsesBook
from tests.gateway.conftest import ENVIRON, FAST_BACKOFF, GATEWAY_KEY, serve

pytestmark = pytest.mark.asyncio
AWS = {"AWS_ACCESS_KEY_ID": "AKIDRESPONSES0123456", "AWS_SECRET_ACCESS_KEY": "responses-SECRET-aws-key"}
DOWN = (Scripted(status=503), Scripted(status=503), Scripted(status=503))
EVENTS: pydantic.TypeAdapter[ResponseStreamEvent] = pydantic.TypeAdapter(ResponseStreamEvent)


def _agent_toml(responses: str, anthropic: str, bedrock: str, chat: str) -> str:
    return f"""
[driver.providers.responses]
kind = "openai"
base_url = "{responses}/v1"
model = "gpt-4o"
priority = 1
responses_api = true

[driver.providers.anthropic]
base_url = "{anthropic}"
model = "claude-sonnet-4-20250514"
priority = 2

[driver.providers.bedrock]
base_url = "{bedrock}"
region = "us-east-1"
model = "anthropic.claude-3-haiku-20240307-v1:0"
priority = 3

[driver.providers.chatonly]
kind = "openai"
base_url = "{chat}/v1"
model = "gpt-4o-mini"
priority = 4

{FAST_BACKOFF}

[gateway]
aliases = ["chat"]

[gateway.tenants.team-a]
key_env = "GW_KEY_A"
"""


class Chain:
    """The four mocks (Responses-capable OpenAI, Anthropic, Bedrock, Chat-only OpenAI) and an SDK client."""

    def __init__(self, mocks: tuple[MockProviderServer, ...], url: str, client: openai.AsyncOpenAI) -> None:
        self.responses, self.anthropic, self.bedrock, self.chat = mocks
        self.url, self.client = url, client

    def sent(self) -> dict[str, int]:
        """Requests each mock received."""
        mocks = (self.responses, self.anthropic, self.bedrock, self.chat)
        return {m.name: len(m.journal) for m in mocks}


@pytest_asyncio.fixture
async def chain(tmp_path: Path, metrics_reader: InMemoryMetricReader | None) -> AsyncIterator[Chain]:
    """The four mocks behind a gateway, and a client on it."""
    async with (
        MockProviderServer(Shape.OPENAI, name="responses") as responses,
        MockProviderServer(Shape.ANTHROPIC) as anthropic,
        MockProviderServer(Shape.BEDROCK) as bedrock,
        MockProviderServer(Shape.OPENAI, name="chatonly") as chat,
    ):
        path = tmp_path / "agent.toml"
        path.write_text(_agent_toml(responses.base_url, anthropic.base_url, bedrock.base_url, chat.base_url))
        async with serve(Backend.load(path, environ={**ENVIRON, **AWS}), metrics_reader) as (url, _, _):
            client = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key=GATEWAY_KEY, max_retries=0, timeout=15)
            async with client:
                yield Chain((responses, anthropic, bedrock, chat), url, client)


def _providers(headers: Mapping[str, str]) -> list[tuple[str, str]]:
    return [(a["provider"], a["status"]) for a in json.loads(headers[ATTEMPTS_HEADER])]


async def test_a_plain_response_is_openais_own_object_and_body_verbatim(chain: Chain) -> None:
    """The caller's body reaches /v1/responses verbatim (a field newer than this code included, the
    model resolved), and the answer is the provider's own object: its id, every field."""
    raw = await chain.client.responses.with_raw_response.create(
        model="chat", input="hi", max_output_tokens=40, extra_body={"a_future_field": {"x": [1, 2]}}
    )
    response = Response.model_validate(raw.http_response.json())
    assert response.id.startswith("resp_mock_")
    assert response.output_text == DEFAULT_TEXT
    assert _providers(raw.headers) == [("openai", "succeeded")]
    entry = chain.responses.journal[-1]
    assert entry.path == "/v1/responses"
    assert entry.body_json == {
        "model": "gpt-4o",
        "input": "hi",
        "max_output_tokens": 40,
        "a_future_field": {"x": [1, 2]},
    }
    assert chain.sent() == {"responses": 1, "anthropic": 0, "bedrock": 0, "chatonly": 0}


async def test_two_turns_continue_with_previous_response_id(chain: Chain) -> None:
    """A two-turn conversation through the gateway: the second turn's previous_response_id reaches
    the provider that stored the first, which answers from it."""
    first = await chain.client.responses.create(model="chat", input="my name is Ada")
    second = await chain.client.responses.create(model="chat", input="who am I?", previous_response_id=first.id)
    assert second.previous_response_id == first.id
    assert second.output_text == f"{DEFAULT_TEXT} Earlier you said: my name is Ada"


async def test_a_stream_is_relayed_event_for_event(chain: Chain) -> None:
    """A streamed call relays OpenAI's own events: the same ids and sequence numbers, each an SDK
    event, and the SDK's stream helper reassembles the final response."""
    async with chain.client.responses.stream(model="chat", input="hi") as stream:
        events = [event async for event in stream]
        final = await stream.get_final_response()
    assert final.id.startswith("resp_mock_")
    assert final.output_text == DEFAULT_TEXT
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert events[0].type == "response.created"
    assert events[-1].type == "response.completed"
    assert chain.responses.journal[-1].body_json == {"model": "gpt-4o", "input": "hi", "stream": True}


async def test_without_state_it_fails_over_to_the_translated_chain(chain: Chain) -> None:
    """The Responses provider down: a stateless request fails over to Anthropic (the Chat rewriting,
    translated), answered as a Response; a stream likewise."""
    chain.responses.script(*DOWN)
    raw = await chain.client.responses.with_raw_response.create(model="chat", input="hi")
    assert raw.parse().output_text == DEFAULT_TEXT
    assert [p for p, _ in _providers(raw.headers)] == ["openai"] * 3 + ["anthropic"]
    assert chain.anthropic.journal[-1].path == "/v1/messages"
    chain.responses.script(*DOWN)
    async with chain.client.responses.stream(model="chat", input="hi") as stream:
        final = await stream.get_final_response()
    assert final.output_text == DEFAULT_TEXT
    assert final.id.startswith("resp_rp")


async def test_state_is_pinned_to_the_responses_provider(chain: Chain, caplog: pytest.LogCaptureFixture) -> None:
    """previous_response_id with the Responses provider down: the other providers are skipped (they
    do not hold that state), nothing is sent to them, and the call fails (502: all providers failed)."""
    first = await chain.client.responses.create(model="chat", input="my name is Ada")
    chain.responses.script(*DOWN)
    with pytest.raises(openai.APIStatusError) as raised:
        await chain.client.responses.create(model="chat", input="who?", previous_response_id=first.id)
    assert raised.value.status_code == 502
    assert chain.sent() == {"responses": 4, "anthropic": 0, "bedrock": 0, "chatonly": 0}
    body: Any = raised.value.response.json()
    assert {(a["provider"], a["fallback_position"]) for a in body["routeproof"]["attempts"]} == {("openai", 0)}
    skips = [r.getMessage() for r in caplog.records if r.getMessage().startswith("router_attempt_skipped")]
    assert len(skips) == 3
    assert all("reason=untranslatable: previous_response_id " in s for s in skips)


async def test_a_hosted_tool_is_carried_only_to_the_responses_provider(chain: Chain) -> None:
    """A built-in server tool (web_search) goes verbatim to the Responses provider."""
    await chain.client.responses.create(model="chat", input="news?", tools=[{"type": "web_search"}])
    entry = chain.responses.journal[-1]
    assert isinstance(entry.body_json, dict)
    assert entry.body_json["tools"] == [{"type": "web_search"}]


async def test_a_stream_cut_before_content_fails_over(chain: Chain) -> None:
    """Cut after response.created and response.in_progress (no content yet): the call fails over and
    the caller sees one clean stream from Anthropic."""
    chain.responses.script(*[Scripted(cut_after_items=2)] * 3)  # each retry cut the same way
    async with chain.client.responses.stream(model="chat", input="hi") as stream:
        final = await stream.get_final_response()
    assert final.output_text == DEFAULT_TEXT
    assert final.id.startswith("resp_rp")  # the gateway's own encoding of Anthropic's stream
    assert chain.sent() == {"responses": 3, "anthropic": 1, "bedrock": 0, "chatonly": 0}


async def test_a_stream_cut_after_content_ends_in_one_response_failed(chain: Chain) -> None:
    """Cut after the first text delta: no failover; the stream ends in exactly one response.failed
    continuing OpenAI's own (its response id, the next sequence number)."""
    chain.responses.script(Scripted(cut_after_items=5))
    body = json.dumps({"model": "chat", "input": "hi", "stream": True})
    headers = {"authorization": f"Bearer {GATEWAY_KEY}", "content-type": "application/json"}
    async with httpx.AsyncClient(timeout=15) as http:
        reply = await http.post(f"{chain.url}/v1/responses", content=body, headers=headers)
    events = [EVENTS.validate_python(json.loads(f.split("data: ", 1)[1])) for f in reply.text.split("\n\n") if f]
    assert [e.type for e in events].count("response.failed") == 1
    last = events[-1]
    assert last.type == "response.failed"
    assert last.sequence_number == events[-2].sequence_number + 1
    assert last.response.id.startswith("resp_mock_")
    assert chain.sent()["anthropic"] == 0


class Weather(pydantic.BaseModel):
    """A structured answer."""

    city: str
    sunny: bool


async def test_parse_with_a_pydantic_model_goes_verbatim(chain: Chain) -> None:
    """responses.parse: text.format (the SDK's strict JSON schema) reaches OpenAI untouched, and the
    provider's JSON text parses into the model."""
    answer = ResponsesBook().turn({"model": "gpt-4o", "input": "x"}, 7).body()
    answer["output"][0]["content"][0]["text"] = '{"city": "Oslo", "sunny": true}'
    chain.responses.script(Scripted(body=answer))
    parsed = await chain.client.responses.parse(model="chat", input="weather in Oslo?", text_format=Weather)
    assert parsed.output_parsed == Weather(city="Oslo", sunny=True)
    sent = chain.responses.journal[-1].body_json
    assert isinstance(sent, dict)
    assert sent["text"]["format"]["type"] == "json_schema"
    assert sent["text"]["format"]["schema"]["properties"].keys() == {"city", "sunny"}


async def test_the_agents_sdk_default_model_runs_a_tool_loop_verbatim(chain: Chain) -> None:
    """The OpenAI Agents SDK's default (Responses) model with a function tool: OpenAI's function_call is
    relayed, the tool runs, its output goes back verbatim, and the model's text ends the run."""
    agents = pytest.importorskip("agents", reason="the opt-in 'agents' extra (openai-agents) is not installed")
    calls: list[str] = []

    def search(query: str) -> str:
        """Look the query up."""
        calls.append(query)
        return "sunny"

    model = agents.OpenAIResponsesModel(model="chat", openai_client=chain.client)
    agent = agents.Agent(name="w", instructions="Answer briefly.", tools=[agents.function_tool(search)], model=model)
    result = await agents.Runner.run(agent, "Weather in Oslo?", run_config=agents.RunConfig(tracing_disabled=True))
    assert result.final_output == DEFAULT_TEXT
    assert calls == ["routeproof mock"]
    second = chain.responses.journal[1].body_json
    assert isinstance(second, dict)
    outputs = [i for i in second["input"] if isinstance(i, dict) and i.get("type") == "function_call_output"]
    assert outputs == [{"call_id": "call_mock_1", "output": "sunny", "type": "function_call_output"}]
    assert chain.sent() == {"responses": 2, "anthropic": 0, "bedrock": 0, "chatonly": 0}


OWN_REASONING = {"type": "reasoning", "id": "rs_rp0123", "summary": [],
                 "content": [{"type": "reasoning_text", "text": "the gateway's thought"}]}  # fmt: skip


async def test_the_gateways_own_reasoning_item_is_left_out_of_a_verbatim_turn(chain: Chain) -> None:
    """A turn after a failover: the turn before was answered by Anthropic with thinking (a reasoning
    item ``rs_rp...``), and the client replays every output item (the Agents SDK does). The next turn
    goes verbatim to OpenAI again, which never issued that id (its 404: terminal, the whole call
    would fail): the item is left out and named ``input[].reasoning``, plain and streamed."""
    items: list[Any] = [
        {"role": "user", "content": "hi"},
        OWN_REASONING,
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "hello"}]},
        {"role": "user", "content": "go on"},
    ]
    raw = await chain.client.responses.with_raw_response.create(model="chat", input=items)
    assert raw.parse().output_text == DEFAULT_TEXT
    assert "input[].reasoning" in raw.headers["x-routeproof-dropped"].split(",")
    entry = chain.responses.journal[-1]
    assert isinstance(entry.body_json, dict)
    assert entry.body_json["input"] == [items[0], items[2], items[3]]
    streamed = await chain.client.responses.with_raw_response.create(model="chat", input=items, stream=True)
    assert "input[].reasoning" in streamed.headers["x-routeproof-dropped"].split(",")
    assert [event.type async for event in streamed.parse()][-1] == "response.completed"
    assert chain.sent() == {"responses": 2, "anthropic": 0, "bedrock": 0, "chatonly": 0}


async def test_the_mock_refuses_a_reasoning_item_it_never_issued(chain: Chain) -> None:
    """The premise, as OpenAI answers it: a reasoning item id the service never issued is a 404
    naming the item (the mock's /v1/responses, called directly)."""
    body = {"model": "gpt-4o", "input": [{"role": "user", "content": "hi"}, OWN_REASONING]}
    async with httpx.AsyncClient() as client:
        reply = await client.post(
            f"{chain.responses.base_url}/v1/responses", json=body, headers={"authorization": "Bearer k"}
        )
    assert reply.status_code == 404
    assert reply.json()["error"]["message"].startswith("Item with id 'rs_rp0123' not found.")
