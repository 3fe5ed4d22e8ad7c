"""Tried as a new user would: the official openai and anthropic SDKs against ``routeproof serve``,
with an OpenAI, an Anthropic and a Bedrock Converse mock each alone behind a gateway, for every
client -> provider pair (the cross pairs and the same protocol).

Each case sends what today's applications send (an image, structured output, a cache marker,
thinking across a tool loop, ``user``, ``seed``), asserts from the mock's journal that the forwarded
body is what the field table says (verbatim, translated, or left out), and that every field that
was not carried is named in ``x-routeproof-dropped`` or refused with a 400 naming it. Same-protocol
bodies in full are in ``test_passthrough_clients.py``; every row of the Bedrock tables in
``tests/wire/test_bedrock_field_table.py``: this module is the user's view across the pairs.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest

from routeproof.mock import Shape
from routeproof.mock.features import MOCK_SIGNATURE
from tests.wire.stack import GATEWAY_KEY, Running, dropped_of, gateway_in_thread
from tests.wire.test_bedrock_field_table import PNG

Client = str  # "openai" or "anthropic": which official SDK the user has
PAIRS = [(c, s) for c in ("openai", "anthropic") for s in (Shape.OPENAI, Shape.ANTHROPIC, Shape.BEDROCK)]
SIGNATURE = "EqQBCkYIARgCIkD+/sig==\u00e9"  # opaque bytes a client must send back exactly (non-ASCII too)
SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
    "additionalProperties": False,
}


def _id(pair: tuple[Client, Shape]) -> str:
    return f"{pair[0]}->{pair[1].value}"


@pytest.fixture(scope="module")
def gateways(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[Shape, Running]]:
    """One gateway per provider protocol, each with that protocol's mock alone behind it."""
    tmp = tmp_path_factory.mktemp("new-user")
    with (
        gateway_in_thread(tmp, Shape.OPENAI) as oai,
        gateway_in_thread(tmp, Shape.ANTHROPIC) as ant,
        gateway_in_thread(tmp, Shape.BEDROCK) as bed,
    ):
        yield {Shape.OPENAI: oai, Shape.ANTHROPIC: ant, Shape.BEDROCK: bed}


@pytest.fixture(scope="module")
def reasoning_openai(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    """A gateway in front of an OpenAI mock serving a reasoning model (gpt-4o takes no thinking)."""
    with gateway_in_thread(tmp_path_factory.mktemp("new-user-o3"), Shape.OPENAI, openai_model="o3") as running:
        yield running


class User:
    """One SDK client against one gateway: sends, and reads what the provider received."""

    def __init__(self, client: Client, running: Running) -> None:
        self.client = client
        self.running = running
        self.before = running.count()

    def send(self, **kwargs: Any) -> tuple[int, list[str], str]:
        """The status, the dropped names and the answer text (or the error message)."""
        self.before = self.running.count()
        try:
            if self.client == "openai":
                with openai.OpenAI(base_url=f"{self.running.url}/v1", api_key=GATEWAY_KEY, max_retries=0) as oai:
                    raw = oai.chat.completions.with_raw_response.create(model="chat", **kwargs)
                    answer = raw.parse()
                    return raw.status_code, dropped_of(raw.headers), answer.choices[0].message.content or ""
            with anthropic.Anthropic(base_url=self.running.url, api_key=GATEWAY_KEY, max_retries=0) as ant:
                araw = ant.messages.with_raw_response.create(model="chat", **kwargs)
                message = araw.parse()
                text = "".join(b.text for b in message.content if b.type == "text")
                return araw.status_code, dropped_of(araw.headers), text
        except (openai.BadRequestError, anthropic.BadRequestError) as exc:
            return exc.status_code, [], str(exc)

    def sent(self) -> dict[str, Any]:
        """The body the provider received for the last call."""
        entries = self.running.sent(self.before)
        assert len(entries) == 1, entries
        body = entries[0].body_json
        assert isinstance(body, dict)
        return body

    def sent_text(self) -> str:
        """That body as the provider received it, byte for byte."""
        return self.running.sent(self.before)[0].body_text

    def nothing_sent(self) -> bool:
        """Whether the provider received nothing for the last call."""
        return not self.running.sent(self.before)


def _hello(client: Client) -> dict[str, Any]:
    return {"max_tokens": 256, "messages": [{"role": "user", "content": "hi"}]}


@pytest.mark.parametrize("pair", PAIRS, ids=_id)
def test_an_image(gateways: dict[Shape, Running], pair: tuple[Client, Shape]) -> None:
    """A base64 PNG: an image_url data URL, an Anthropic image block or Converse image bytes."""
    client, shape = pair
    user = User(client, gateways[shape])
    if client == "openai":
        image: Any = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}}
    else:
        image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
    status, dropped, _ = user.send(
        max_tokens=256, messages=[{"role": "user", "content": [{"type": "text", "text": "what?"}, image]}]
    )
    assert (status, dropped) == (200, [])
    content = user.sent()["messages"][0]["content"]
    expected = {
        Shape.OPENAI: {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
        Shape.ANTHROPIC: {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
        Shape.BEDROCK: {"image": {"format": "png", "source": {"bytes": PNG}}},
    }[shape]
    assert expected in content, content


@pytest.mark.parametrize("pair", PAIRS, ids=_id)
def test_structured_output(gateways: dict[Shape, Running], pair: tuple[Client, Shape]) -> None:
    """A JSON schema: response_format / output_config.format where the target has one; Bedrock
    Converse has none, so a 400 naming the field and nothing sent."""
    client, shape = pair
    user = User(client, gateways[shape])
    if client == "openai":
        status, dropped, text = user.send(**_hello(client), response_format={
            "type": "json_schema", "json_schema": {"name": "weather", "schema": SCHEMA, "strict": True}})  # fmt: skip
    else:
        status, dropped, text = user.send(**_hello(client), extra_body={
            "output_config": {"format": {"type": "json_schema", "schema": SCHEMA}}})  # fmt: skip
    if shape is Shape.BEDROCK:
        assert status == 400
        assert ("response_format" if client == "openai" else "output_config.format") in text
        assert user.nothing_sent()
        return
    assert status == 200
    sent = user.sent()
    if shape is Shape.OPENAI:
        assert sent["response_format"]["type"] == "json_schema"
        assert sent["response_format"]["json_schema"]["schema"] == SCHEMA
    else:
        assert sent["output_config"]["format"] == {"type": "json_schema", "schema": SCHEMA}
    # what the target has no place for (OpenAI's name and strict on the way to Anthropic) is named
    assert set(dropped) <= {"response_format.name", "response_format.strict"}, dropped


@pytest.mark.parametrize("pair", PAIRS, ids=_id)
def test_a_cache_marker(gateways: dict[Shape, Running], pair: tuple[Client, Shape]) -> None:
    """Anthropic's system cache_control -> a Converse cachePoint, named dropped for OpenAI (which
    caches by itself); OpenAI's prompt_cache_key hint verbatim to OpenAI, named dropped elsewhere."""
    client, shape = pair
    user = User(client, gateways[shape])
    if client == "openai":
        status, dropped, _ = user.send(**_hello(client), prompt_cache_key="tenant-7")
        assert status == 200
        if shape is Shape.OPENAI:
            assert user.sent()["prompt_cache_key"] == "tenant-7"
            assert dropped == []
        else:
            assert "prompt_cache_key" not in user.sent()
            assert dropped == ["prompt_cache_key"]
        return
    system: Any = [{"type": "text", "text": "a long prompt", "cache_control": {"type": "ephemeral"}}]
    status, dropped, _ = user.send(**_hello(client), system=system)
    assert status == 200
    sent = user.sent()
    if shape is Shape.ANTHROPIC:
        assert sent["system"] == system
        assert dropped == []
    elif shape is Shape.BEDROCK:
        assert sent["system"] == [{"text": "a long prompt"}, {"cachePoint": {"type": "default"}}]
        assert dropped == []
    else:
        assert "a long prompt" in json.dumps(sent["messages"][0])
        assert dropped == ["cache_control"]


def _anthropic_loop(signature: str) -> list[Any]:
    return [
        {"role": "user", "content": "weather in Oslo?"},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "I should call the tool.", "signature": signature},
            {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Oslo"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "3C"}]},
    ]  # fmt: skip


@pytest.mark.parametrize("pair", PAIRS, ids=_id)
def test_thinking_across_a_tool_loop(
    gateways: dict[Shape, Running], reasoning_openai: Running, pair: tuple[Client, Shape]
) -> None:
    """Turn 1 asks for thinking with a tool; turn 2 sends the signed thinking block back with the
    tool result. The signature reaches Anthropic and Bedrock byte-exact (reasoningContent on Converse);
    OpenAI has no place for it: named dropped (``thinking_blocks``). An OpenAI client's
    reasoning_effort becomes a thinking budget on Anthropic and Bedrock (OpenAI: a reasoning model);
    Anthropic's signed answer is named ``thinking.signature`` (its text is ``reasoning_content``)."""
    client, shape = pair
    user = User(client, reasoning_openai if shape is Shape.OPENAI else gateways[shape])
    if client == "openai":
        tools: Any = [{"type": "function", "function": {"name": "weather", "parameters": {"type": "object"}}}]
        loop: Any = [
            {"role": "user", "content": "weather in Oslo?"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": '{"city":"Oslo"}'}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "3C"},
        ]  # fmt: skip
        status, dropped, _ = user.send(max_completion_tokens=8192, messages=loop, tools=tools, reasoning_effort="low")
        # Anthropic's and Bedrock's answers think: the text reaches the client as reasoning_content, the
        # signature is named
        assert (status, dropped) == (200, [] if shape is Shape.OPENAI else ["thinking.signature"])
        sent = user.sent()
        if shape is Shape.OPENAI:
            assert sent["reasoning_effort"] == "low"
            assert sent["messages"] == loop
        elif shape is Shape.ANTHROPIC:
            assert sent["thinking"]["type"] == "enabled"
            assert sent["messages"][1]["content"][0]["type"] == "tool_use"
        else:
            assert sent["additionalModelRequestFields"]["thinking"]["type"] == "enabled"
            assert sent["messages"][1]["content"][0]["toolUse"]["toolUseId"] == "call_1"
        return
    tools = [{"name": "weather", "input_schema": {"type": "object"}}]
    thinking = {"type": "enabled", "budget_tokens": 1024}
    status, _, _ = user.send(max_tokens=4096, messages=[{"role": "user", "content": "weather?"}], tools=tools,
                             thinking=thinking)  # fmt: skip
    assert status == 200
    first = user.sent_text()
    signature = MOCK_SIGNATURE if shape is Shape.ANTHROPIC else SIGNATURE
    status, dropped, _ = user.send(max_tokens=4096, messages=_anthropic_loop(signature), tools=tools, thinking=thinking)
    assert status == 200
    sent = user.sent()
    if shape is Shape.OPENAI:
        assert "thinking" in first or "reasoning_effort" in first
        assert "thinking_blocks" in dropped
        assert signature not in user.sent_text()
        return
    assert dropped == []
    if shape is Shape.ANTHROPIC:
        assert sent["messages"][1]["content"][0] == _anthropic_loop(signature)[1]["content"][0]
    else:
        reasoning = sent["messages"][1]["content"][0]["reasoningContent"]["reasoningText"]
        assert reasoning == {"text": "I should call the tool.", "signature": signature}
        assert sent["additionalModelRequestFields"]["thinking"] == thinking


@pytest.mark.parametrize("pair", PAIRS, ids=_id)
def test_user_and_seed(gateways: dict[Shape, Running], pair: tuple[Client, Shape]) -> None:
    """``user`` <-> ``metadata.user_id`` between OpenAI and Anthropic, named dropped for Converse;
    OpenAI's ``seed`` verbatim to OpenAI, named dropped elsewhere (Anthropic has no seed to send)."""
    client, shape = pair
    user = User(client, gateways[shape])
    if client == "openai":
        status, dropped, _ = user.send(**_hello(client), user="u-1", seed=7)
        assert status == 200
        sent = user.sent()
        if shape is Shape.OPENAI:
            assert (sent["user"], sent["seed"], dropped) == ("u-1", 7, [])
        elif shape is Shape.ANTHROPIC:
            assert sent["metadata"] == {"user_id": "u-1"}
            assert dropped == ["seed"]
        else:
            assert "u-1" not in user.sent_text()
            assert sorted(dropped) == ["seed", "user"]
        return
    status, dropped, _ = user.send(**_hello(client), metadata={"user_id": "u-1"})
    assert status == 200
    sent = user.sent()
    if shape is Shape.ANTHROPIC:
        assert (sent["metadata"], dropped) == ({"user_id": "u-1"}, [])
    elif shape is Shape.OPENAI:
        assert (sent["user"], dropped) == ("u-1", [])
    else:
        assert "u-1" not in user.sent_text()
        assert dropped == ["metadata"]
