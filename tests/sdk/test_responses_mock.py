"""The OpenAI mock's ``POST /v1/responses`` speaks OpenAI's Responses API: the official ``openai`` SDK's
own types are the oracle for every body and event, and its store makes a two-turn conversation work."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import httpx
import openai
import pydantic
import pytest
import pytest_asyncio
from openai.types.responses import Response, ResponseStreamEvent

from routeproof.mock import DEFAULT_TEXT, DEFAULT_TOOL_INPUT, MockProviderServer, Shape

pytestmark = pytest.mark.asyncio
EVENTS: pydantic.TypeAdapter[ResponseStreamEvent] = pydantic.TypeAdapter(ResponseStreamEvent)


@pytest_asyncio.fixture
async def mock() -> AsyncIterator[MockProviderServer]:
    """An OpenAI-shaped mock on loopback."""
    async with MockProviderServer(Shape.OPENAI) as server:
        yield server


@pytest_asyncio.fixture
async def client(mock: MockProviderServer) -> AsyncIterator[openai.AsyncOpenAI]:
    """The SDK pointed straight at the mock."""
    async with openai.AsyncOpenAI(base_url=f"{mock.base_url}/v1", api_key="sk-test", max_retries=0, timeout=10) as c:
        yield c


async def test_a_plain_response_is_the_sdks_response(client: openai.AsyncOpenAI, mock: MockProviderServer) -> None:
    """responses.create's raw body validates as the SDK's Response, and the request is journaled."""
    raw = await client.responses.with_raw_response.create(model="gpt-4o", input="hi")
    response = Response.model_validate(raw.http_response.json())
    assert response.output_text == DEFAULT_TEXT
    assert response.usage is not None
    assert response.usage.total_tokens == 20
    assert mock.journal[-1].path == "/v1/responses"
    assert mock.journal[-1].body_json == {"model": "gpt-4o", "input": "hi"}


async def test_every_streamed_event_is_an_sdk_event(client: openai.AsyncOpenAI, mock: MockProviderServer) -> None:
    """Each SSE event validates as the SDK's ResponseStreamEvent, sequence numbers count up, and the
    stream helper reassembles the final response."""
    async with client.responses.stream(model="gpt-4o", input="hi") as stream:
        kinds = [event.type async for event in stream]
        final = await stream.get_final_response()
    assert kinds[0] == "response.created"
    assert kinds[-1] == "response.completed"
    assert final.output_text == DEFAULT_TEXT
    raw = json.dumps({"model": "gpt-4o", "input": "hi", "stream": True}).encode()
    async with httpx.AsyncClient(timeout=10) as http:
        reply = await http.post(f"{mock.base_url}/v1/responses", content=raw, headers={"authorization": "Bearer k"})
    frames = [f for f in reply.text.split("\n\n") if f]
    seqs = []
    for frame in frames:
        data = json.loads(frame.split("data: ", 1)[1])
        seqs.append(EVENTS.validate_python(data).sequence_number)
    assert seqs == list(range(len(frames)))


async def test_two_turns_continue_through_the_store(client: openai.AsyncOpenAI) -> None:
    """A second turn with previous_response_id answers from the stored conversation; an unknown id is
    OpenAI's 400 naming previous_response_id; store=false keeps nothing."""
    first = await client.responses.create(model="gpt-4o", input="my name is Ada")
    second = await client.responses.create(model="gpt-4o", input="who am I?", previous_response_id=first.id)
    assert second.previous_response_id == first.id
    assert second.output_text == f"{DEFAULT_TEXT} Earlier you said: my name is Ada"
    with pytest.raises(openai.BadRequestError) as raised:
        await client.responses.create(model="gpt-4o", input="x", previous_response_id="resp_nope")
    assert raised.value.param == "previous_response_id"
    unstored = await client.responses.create(model="gpt-4o", input="x", store=False)
    with pytest.raises(openai.BadRequestError):
        await client.responses.create(model="gpt-4o", input="y", previous_response_id=unstored.id)


async def test_a_function_tool_is_called_then_answered(client: openai.AsyncOpenAI) -> None:
    """With a function tool the model calls it; given the call's output it answers with text."""
    tool = {"type": "function", "name": "search", "parameters": {"type": "object"}, "strict": False}
    called = await client.responses.create(model="gpt-4o", input="look it up", tools=[tool])  # type: ignore[list-item]
    call = called.output[0]
    assert call.type == "function_call"
    assert call.name == "search"
    assert call.arguments == DEFAULT_TOOL_INPUT
    done = await client.responses.create(
        model="gpt-4o",
        tools=[tool],  # type: ignore[list-item]
        previous_response_id=called.id,
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": "found"}],
    )
    assert done.output_text.startswith(DEFAULT_TEXT)


async def test_credentials_and_method_come_first(mock: MockProviderServer) -> None:
    """Without credentials the Responses route is the shape's 401 (even naming an unknown previous
    response), and a GET is a 405; both journaled."""
    async with httpx.AsyncClient(base_url=mock.base_url, timeout=10) as http:
        unauthenticated = await http.post("/v1/responses", json={"input": "x", "previous_response_id": "resp_nope"})
        wrong_method = await http.get("/v1/responses", headers={"authorization": "Bearer k"})
    assert (unauthenticated.status_code, wrong_method.status_code) == (401, 405)
    assert len(mock.journal) == 2
