"""Frameworks nobody here wrote, through ``routeproof serve`` with a same-protocol mock first:
LangChain's ``ChatOpenAI`` / ``ChatAnthropic`` (structured output, bound tools, an image message) and
the OpenAI Agents SDK with a strict tool on a Chat Completions model. Opt-in extras: ``frameworks``,
``agents``; a missing one skips its tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pydantic
import pytest
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from routeproof.mock import MockProviderServer, Scripted, Shape
from tests.gateway.conftest import GATEWAY_KEY, metrics_reader
from tests.sdk.test_passthrough_clients import PNG_1PX, same_stack

__all__ = ["metrics_reader"]  # the gateway suite's session fixture, used here too

pytestmark = pytest.mark.asyncio


class City(pydantic.BaseModel):
    """A structured-output schema."""

    name: str
    population: int


def _openai_text(text: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-s", "object": "chat.completion", "created": 1, "model": "gpt-4o",
        "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                     "message": {"role": "assistant", "content": text, "refusal": None}}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 3, "total_tokens": 6},
    }  # fmt: skip


def _last(server: MockProviderServer) -> dict[str, Any]:
    body = server.journal[-1].body_json
    assert isinstance(body, dict)
    return body


async def test_langchain_chat_openai_structured_output_tools_and_an_image(
    tmp_path: Path, metrics_reader: InMemoryMetricReader | None
) -> None:
    """ChatOpenAI: with_structured_output parses the answer; bind_tools yields a tool call; an image
    part reaches the provider verbatim."""
    lc_openai = pytest.importorskip("langchain_openai")
    messages = pytest.importorskip("langchain_core.messages")
    async with same_stack(tmp_path, metrics_reader, Shape.OPENAI) as s:
        llm = lc_openai.ChatOpenAI(model="chat", base_url=f"{s.url}/v1", api_key=GATEWAY_KEY, max_retries=0)
        s.first.script(Scripted(body=_openai_text('{"name": "Oslo", "population": 709000}')))
        city = await llm.with_structured_output(City, method="json_schema").ainvoke("largest city in Norway?")
        assert city == City(name="Oslo", population=709000)
        assert _last(s.first)["response_format"]["json_schema"]["schema"]["required"] == ["name", "population"]

        def lookup(city: str) -> str:
            """Look a city up."""
            return city

        answer = await llm.bind_tools([lookup], strict=True).ainvoke("find Oslo")
        assert answer.tool_calls[0]["name"] == "lookup"
        assert _last(s.first)["tools"][0]["function"]["strict"] is True
        image = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG_1PX}"}}
        await llm.ainvoke([messages.HumanMessage(content=[{"type": "text", "text": "what is it?"}, image])])
        assert _last(s.first)["messages"][0]["content"][1] == image


async def test_langchain_chat_anthropic_structured_output_and_an_image(
    tmp_path: Path, metrics_reader: InMemoryMetricReader | None
) -> None:
    """ChatAnthropic: with_structured_output (a forced tool) parses; an image block reaches Anthropic verbatim."""
    lc_anthropic = pytest.importorskip("langchain_anthropic")
    messages = pytest.importorskip("langchain_core.messages")
    async with same_stack(tmp_path, metrics_reader, Shape.ANTHROPIC) as s:
        llm = lc_anthropic.ChatAnthropic(
            model="chat", base_url=s.url, api_key=GATEWAY_KEY, max_retries=0, max_tokens=256
        )
        tool_answer = {
            "id": "msg_s", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": "City",
                         "input": {"name": "Oslo", "population": 709000}}],
            "stop_reason": "tool_use", "stop_sequence": None, "usage": {"input_tokens": 3, "output_tokens": 3},
        }  # fmt: skip
        s.first.script(Scripted(body=tool_answer))
        city = await llm.with_structured_output(City).ainvoke("largest city in Norway?")
        assert city == City(name="Oslo", population=709000)
        assert _last(s.first)["tool_choice"]["name"] == "City"
        image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_1PX}}
        await llm.ainvoke([messages.HumanMessage(content=[{"type": "text", "text": "what is it?"}, image])])
        assert _last(s.first)["messages"][0]["content"][1] == image


async def test_openai_agents_sdk_strict_tool_on_a_chat_completions_model(
    tmp_path: Path, metrics_reader: InMemoryMetricReader | None
) -> None:
    """An Agents SDK agent on OpenAIChatCompletionsModel: its strict tool schema reaches the provider
    verbatim, the tool runs, and the final answer comes back."""
    agents = pytest.importorskip("agents")
    import openai

    async with same_stack(tmp_path, metrics_reader, Shape.OPENAI) as s:
        called: list[str] = []

        @agents.function_tool  # type: ignore[untyped-decorator]  # agents comes from importorskip (Any)
        def lookup(query: str) -> str:
            """Look something up."""
            called.append(query)
            return "found"

        client = openai.AsyncOpenAI(base_url=f"{s.url}/v1", api_key=GATEWAY_KEY, max_retries=0, timeout=15)
        model = agents.OpenAIChatCompletionsModel(model="chat", openai_client=client)
        agent = agents.Agent(name="a", instructions="use the tool", tools=[lookup], model=model)
        s.first.script(Scripted(), Scripted(body=_openai_text("done")))  # the default tool call, then text
        result = await agents.Runner.run(agent, "look up routeproof", max_turns=3,
                                         run_config=agents.RunConfig(tracing_disabled=True))  # fmt: skip
        await client.close()
        assert result.final_output == "done"
        assert called == ["routeproof mock"]
        first = s.first.journal[0].body_json
        assert isinstance(first, dict)
        assert first["tools"][0]["function"]["strict"] is True
        assert json.loads(json.dumps(first["tools"][0]["function"]["parameters"]))["additionalProperties"] is False
