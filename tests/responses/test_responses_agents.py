"""The OpenAI Agents SDK's default model (the Responses API) with a function tool, through the gateway."""

from __future__ import annotations

import openai
import pytest

from routeproof.mock import Scripted
from tests.gateway.conftest import GATEWAY_KEY, Stack

pytest.importorskip("agents", reason="the opt-in 'agents' extra (openai-agents) is not installed")
from agents import Agent, OpenAIResponsesModel, RunConfig, Runner, function_tool

pytestmark = pytest.mark.asyncio

TEXT = {"id": "msg_2", "type": "message", "role": "assistant", "model": "m", "stop_reason": "end_turn",
        "content": [{"type": "text", "text": "It is sunny in Oslo."}],
        "usage": {"input_tokens": 30, "output_tokens": 7}}  # fmt: skip


async def test_an_agent_with_a_tool_runs_through_the_gateway(stack: Stack) -> None:
    """An Agent on the default Responses model calls its tool (answered by Anthropic behind the gateway),
    gets the tool's output back to the model, and ends with the model's text."""
    calls: list[str] = []

    @function_tool  # type: ignore[untyped-decorator]  # the agents extra is typed as Any here (pyproject)
    def search(query: str) -> str:
        """Look the query up."""
        calls.append(query)
        return "sunny"

    client = openai.AsyncOpenAI(base_url=f"{stack.url}/v1", api_key=GATEWAY_KEY, max_retries=0, timeout=15)
    model = OpenAIResponsesModel(model="chat", openai_client=client)
    agent = Agent(name="weather", instructions="Answer briefly.", tools=[search], model=model)
    stack.anthropic.script(Scripted(), Scripted(body=TEXT))  # a tool call, then the final text
    try:
        result = await Runner.run(agent, "Weather in Oslo?", run_config=RunConfig(tracing_disabled=True))
    finally:
        await client.close()
    assert result.final_output == "It is sunny in Oslo."
    assert calls == ["routeproof mock"]
    second = stack.anthropic.journal[1].body_json
    assert isinstance(second, dict)
    results = [
        b for m in second["messages"] for b in m["content"] if isinstance(b, dict) and b["type"] == "tool_result"
    ]
    assert results[0]["content"] == "sunny"
    assert second["system"] == "Answer briefly."


async def test_an_agent_that_reasons_across_a_tool_turn_is_answered(stack: Stack) -> None:
    """With reasoning on, Anthropic thinks on each turn: the first answer's reasoning item (which the
    Agents SDK replays on the next turn) does not break the tool loop; it is named, not refused."""
    from agents import ModelSettings
    from openai.types.shared import Reasoning

    calls: list[str] = []

    @function_tool  # type: ignore[untyped-decorator]  # the agents extra is typed as Any here (pyproject)
    def search(query: str) -> str:
        """Look the query up."""
        calls.append(query)
        return "sunny"

    client = openai.AsyncOpenAI(base_url=f"{stack.url}/v1", api_key=GATEWAY_KEY, max_retries=0, timeout=15)
    model = OpenAIResponsesModel(model="chat", openai_client=client)
    settings = ModelSettings(reasoning=Reasoning(effort="low"), max_tokens=4096)
    agent = Agent(name="weather", instructions="Answer briefly.", tools=[search], model=model, model_settings=settings)
    before = len(stack.anthropic.journal)
    stack.anthropic.script(Scripted(), Scripted(body=TEXT))  # a tool call (with thinking), then the final text
    try:
        result = await Runner.run(agent, "Weather in Oslo?", run_config=RunConfig(tracing_disabled=True))
    finally:
        await client.close()
    assert calls == ["routeproof mock"]
    assert result.final_output == "It is sunny in Oslo."
    kinds = [item.type for item in result.new_items]
    assert "reasoning_item" in kinds  # the thinking reached the agent
    first, second = (e.body_json for e in stack.anthropic.journal[before : before + 2])
    assert isinstance(first, dict)
    assert isinstance(second, dict)
    assert first["thinking"]["type"] == "enabled"
    assert "The user greets me" not in str(second["messages"])  # the replayed reasoning item was left out
