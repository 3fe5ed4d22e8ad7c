"""Every row of the field table's openai->bedrock and anthropic->bedrock parts, through the gateway.

One case per row (parametrised over ``field_table.ROWS``, so a new row is a new case; a row without a
sample here fails, naming it): a request that sets that field goes to ``routeproof serve`` with a
Bedrock Converse mock as its only provider, and is

- TRANSLATED: answered 200, the field not named dropped, and the Converse body the mock received
  carries it as the row's note says (the sample's check);
- DROPPED: answered 200 with the field named in ``x-routeproof-dropped``;
- REFUSED: answered 400 naming the field, nothing sent to the mock.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from routeproof.core.formats.field_table import ROWS, FieldRow, Treatment
from routeproof.core.messages import WireFormat
from routeproof.mock import Shape
from routeproof.mock.journal import JournalEntry
from tests.wire.stack import BEDROCK_MODEL, GATEWAY_KEY, Running, dropped_of, gateway_in_thread

PNG = base64.b64encode(
    bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000"
                  "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082")
).decode()  # fmt: skip
PDF = base64.b64encode(b"%PDF-1.4\n%%EOF\n").decode()

Body = dict[str, Any]
Sample = tuple[Callable[[Body], None], Callable[[JournalEntry], object] | None]
"""How to set the field on a base body, and (TRANSLATED rows) what the Converse body must then show."""


def _set(**fields: Any) -> Callable[[Body], None]:
    def apply(body: Body) -> None:
        body.update(fields)

    return apply


def _msgs(*messages: Any) -> Callable[[Body], None]:
    return _set(messages=list(messages))


def _sent(entry: JournalEntry) -> Body:
    assert isinstance(entry.body_json, dict)
    return entry.body_json


def _config(entry: JournalEntry) -> Body:
    config = _sent(entry)["inferenceConfig"]
    assert isinstance(config, dict)
    return config


def _extra(entry: JournalEntry) -> Body:
    extra = _sent(entry).get("additionalModelRequestFields", {})
    assert isinstance(extra, dict)
    return extra


def _first_content(entry: JournalEntry) -> list[Body]:
    content = _sent(entry)["messages"][0]["content"]
    assert isinstance(content, list)
    return content


OAI_FUNCTION = {"name": "get_weather", "parameters": {"type": "object"}}
OAI_TOOL = {"type": "function", "function": OAI_FUNCTION}
ANT_TOOL = {"name": "get_weather", "input_schema": {"type": "object"}}
DATA_URL = f"data:image/png;base64,{PNG}"
OAI_IMAGE = {"type": "image_url", "image_url": {"url": DATA_URL}}
HI = [{"role": "user", "content": "hi"}]
ANT_IMAGE = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
ANT_DOC = {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": PDF}}
EPHEMERAL_1H = {"type": "ephemeral", "ttl": "1h"}


def _legacy_cap(body: Body) -> None:
    del body["max_completion_tokens"]
    body["max_tokens"] = 34


def _tool_names(entry: JournalEntry) -> list[str]:
    return [t["toolSpec"]["name"] for t in _sent(entry)["toolConfig"]["tools"] if "toolSpec" in t]


OPENAI_SAMPLES: dict[str, Sample] = {
    "messages": (_msgs({"role": "user", "content": [{"type": "text", "text": "what?"}, OAI_IMAGE]}),
                 lambda e: _first_content(e)[1]["image"] == {"format": "png", "source": {"bytes": PNG}}),
    "model": (_set(), lambda e: e.model == BEDROCK_MODEL),
    "audio": (_set(audio={"voice": "alloy", "format": "wav"}), None),
    "frequency_penalty": (_set(frequency_penalty=0.5), None),
    "function_call": (_set(function_call="auto"), None),
    "functions": (_set(functions=[{"name": "f", "parameters": {"type": "object"}}]), None),
    "logit_bias": (_set(logit_bias={"50256": -100}), None),
    "logprobs": (_set(logprobs=True), None),
    "max_completion_tokens": (_set(max_completion_tokens=33), lambda e: _config(e)["maxTokens"] == 33),
    "max_tokens": (_legacy_cap, lambda e: _config(e)["maxTokens"] == 34),
    "metadata": (_set(metadata={"team": "a"}), None),
    "modalities": (_set(modalities=["text"]), None),
    "moderation": (_set(moderation={"mode": "block"}), None),
    "n": (_set(n=1), lambda e: "n" not in _sent(e)),
    "parallel_tool_calls": (_set(tools=[OAI_TOOL], parallel_tool_calls=False), None),
    "prediction": (_set(prediction={"type": "content", "content": "x"}), None),
    "presence_penalty": (_set(presence_penalty=0.5), None),
    "prompt_cache_key": (_set(prompt_cache_key="k"), None),
    "prompt_cache_options": (_set(prompt_cache_options={"mode": "auto"}), None),
    "prompt_cache_retention": (_set(prompt_cache_retention="24h"), None),
    "reasoning_effort": (_set(reasoning_effort="low", max_completion_tokens=8192),
                         lambda e: _extra(e)["thinking"]["type"] == "enabled"),
    "response_format": (_set(response_format={"type": "json_object"}), None),
    "safety_identifier": (_set(safety_identifier="s-1"), None),
    "seed": (_set(seed=7), None),
    "service_tier": (_set(service_tier="auto"), None),
    "stop": (_set(stop=["END"]), lambda e: _config(e)["stopSequences"] == ["END"]),
    "store": (_set(store=True), None),
    "stream": (_set(stream=True), lambda e: e.path.endswith("/converse-stream")),
    "stream_options": (_set(stream=True, stream_options={"include_usage": True}),
                       lambda e: e.path.endswith("/converse-stream")),
    "temperature": (_set(temperature=0.25), lambda e: _config(e)["temperature"] == 0.25),
    "tool_choice": (_set(tools=[OAI_TOOL], tool_choice="required"),
                    lambda e: _sent(e)["toolConfig"]["toolChoice"] == {"any": {}}),
    "tools": (_set(tools=[OAI_TOOL]), lambda e: _tool_names(e) == ["get_weather"]),
    "tools[].function.strict": (_set(tools=[{"type": "function", "function": {**OAI_FUNCTION, "strict": True}}]),
                                None),
    "top_logprobs": (_set(logprobs=True, top_logprobs=2), None),
    "top_p": (_set(top_p=0.5), lambda e: _config(e)["topP"] == 0.5),
    "user": (_set(user="u-1"), None),
    "verbosity": (_set(verbosity="low"), None),
    "web_search_options": (_set(web_search_options={}), None),
    "messages[].name": (_msgs({"role": "user", "content": "hi", "name": "bob"}), None),
    "messages[].refusal": (_msgs({"role": "user", "content": "hi"},
                                 {"role": "assistant", "content": "no", "refusal": "no"},
                                 {"role": "user", "content": "please"}), None),
    "messages[].content[].input_audio": (
        _msgs({"role": "user", "content": [{"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}}]}),
        None),
    "messages[].content[].image_url.detail": (
        _msgs({"role": "user", "content": [{"type": "image_url", "image_url": {"url": DATA_URL, "detail": "low"}}]}),
        None),
    "messages[]": (_msgs({"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"},
                         {"role": "system", "content": "now be brief"}, {"role": "user", "content": "again"}), None),
}  # fmt: skip

ANTHROPIC_SAMPLES: dict[str, Sample] = {
    "max_tokens": (_set(max_tokens=33), lambda e: _config(e)["maxTokens"] == 33),
    "messages": (_msgs({"role": "user", "content": [{"type": "text", "text": "what?"}, ANT_IMAGE]}),
                 lambda e: _first_content(e)[1]["image"] == {"format": "png", "source": {"bytes": PNG}}),
    "model": (_set(), lambda e: e.model == BEDROCK_MODEL),
    "cache_control": (_set(cache_control={"type": "ephemeral"}), None),
    "container": (_set(container="container-1"), None),
    "diagnostics": (_set(diagnostics={"cache": True}), None),
    "inference_geo": (_set(inference_geo="us"), None),
    "metadata": (_set(metadata={"user_id": "u-1"}), None),
    "output_config": (_set(output_config={"effort": "low"}, max_tokens=8192),
                      lambda e: _extra(e)["thinking"]["type"] == "enabled"),
    "service_tier": (_set(service_tier="auto"), None),
    "speed": (_set(speed="fast"), None),
    "stop_sequences": (_set(stop_sequences=["END"]), lambda e: _config(e)["stopSequences"] == ["END"]),
    "stream": (_set(stream=True), lambda e: e.path.endswith("/converse-stream")),
    "system": (_set(system=[{"type": "text", "text": "be brief", "cache_control": {"type": "ephemeral"}}]),
               lambda e: _sent(e)["system"] == [{"text": "be brief"}, {"cachePoint": {"type": "default"}}]),
    "temperature": (_set(temperature=0.25), lambda e: _config(e)["temperature"] == 0.25),
    "thinking": (_set(thinking={"type": "enabled", "budget_tokens": 1024}, max_tokens=4096),
                 lambda e: _extra(e)["thinking"] == {"type": "enabled", "budget_tokens": 1024}),
    "tool_choice": (_set(tools=[ANT_TOOL], tool_choice={"type": "any"}),
                    lambda e: _sent(e)["toolConfig"]["toolChoice"] == {"any": {}}),
    "tools": (_set(tools=[ANT_TOOL]), lambda e: _tool_names(e) == ["get_weather"]),
    "top_k": (_set(top_k=5), lambda e: _extra(e)["top_k"] == 5),
    "top_p": (_set(top_p=0.5), lambda e: _config(e)["topP"] == 0.5),
    "user_profile_id": (_set(user_profile_id="p-1"), None),
    "workspace_id": (_set(workspace_id="w-1"), None),
    "context_management": (_set(context_management={"edits": []}), None),
    "mcp_servers": (_set(mcp_servers=[{"type": "url", "url": "https://mcp.example", "name": "x"}]), None),
    "tools[]": (_set(tools=[{"type": "web_search_20250305", "name": "web_search"}]), None),
    "messages[].content[]": (_msgs({"role": "user", "content": [
        {"type": "search_result", "source": "s", "title": "t", "content": [{"type": "text", "text": "x"}]}]}), None),
    "messages[].content[].citations": (
        _msgs({"role": "user", "content": [{**ANT_DOC, "citations": {"enabled": True}}]}),
        lambda e: _first_content(e)[0]["document"]["citations"] == {"enabled": True}),
    "system[].cache_control.ttl": (_set(system=[{"type": "text", "text": "be brief", "cache_control": EPHEMERAL_1H}]),
                                   None),
    "messages[].content[].cache_control.ttl": (
        _msgs({"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": EPHEMERAL_1H}]}), None),
    "tools[].cache_control.ttl": (_set(tools=[{**ANT_TOOL, "cache_control": EPHEMERAL_1H}]), None),
    "tools[].strict": (_set(tools=[{**ANT_TOOL, "strict": True}]), None),
    "output_config.format": (_set(output_config={"format": {"type": "json_schema", "schema": {"type": "object"}}}),
                             None),
    "messages[].content[].context": (_msgs({"role": "user", "content": [{**ANT_DOC, "context": "a report"}]}), None),
    "tool_choice.disable_parallel_tool_use": (
        _set(tools=[ANT_TOOL], tool_choice={"type": "auto", "disable_parallel_tool_use": True}), None),
}  # fmt: skip

SAMPLES = {WireFormat.OPENAI_CHAT: OPENAI_SAMPLES, WireFormat.ANTHROPIC_MESSAGES: ANTHROPIC_SAMPLES}
BASE: dict[WireFormat, Body] = {
    WireFormat.OPENAI_CHAT: {"model": "chat", "max_completion_tokens": 64, "messages": HI},
    WireFormat.ANTHROPIC_MESSAGES: {"model": "chat", "max_tokens": 64, "messages": HI},
}  # fmt: skip
PATHS = {WireFormat.OPENAI_CHAT: "/v1/chat/completions", WireFormat.ANTHROPIC_MESSAGES: "/v1/messages"}
BEDROCK_ROWS = [row for row in ROWS if row.target is WireFormat.BEDROCK_CONVERSE and row.source in SAMPLES]


@pytest.fixture(scope="module")
def bedrock(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    """A gateway whose only provider is a Bedrock Converse mock."""
    with gateway_in_thread(tmp_path_factory.mktemp("bedrock-table"), Shape.BEDROCK) as running:
        yield running


def send(running: Running, source: WireFormat, body: Body) -> httpx.Response:
    """``body`` to the gateway in ``source``'s API, read whole (a stream's events included)."""
    headers = {"authorization": f"Bearer {GATEWAY_KEY}", "x-api-key": GATEWAY_KEY}
    url = f"{running.url}{PATHS[source]}"
    with httpx.Client(timeout=15) as client, client.stream("POST", url, json=body, headers=headers) as response:
        response.read()
        return response


def _case_id(row: FieldRow) -> str:
    return f"{row.source.value}:{row.field}"


@pytest.mark.parametrize("row", BEDROCK_ROWS, ids=_case_id)
def test_each_row_is_carried_named_or_refused_as_the_table_says(bedrock: Running, row: FieldRow) -> None:
    """The row's treatment, observed at the gateway and at the Bedrock mock."""
    sample = SAMPLES[row.source].get(row.field)
    assert sample is not None, f"field-table row {row.source.value} {row.field!r} -> bedrock has no sample here"
    apply, check = sample
    body = json.loads(json.dumps(BASE[row.source]))
    apply(body)
    before = bedrock.count()
    response = send(bedrock, row.source, body)
    sent = bedrock.sent(before)
    if row.treatment is Treatment.REFUSED:
        assert response.status_code == 400, response.text
        assert row.field.split("[")[0] in response.text or row.field in response.text, response.text
        assert not sent, "a refused field must not reach the provider"
        return
    assert response.status_code == 200, response.text
    assert len(sent) == 1
    dropped = dropped_of(response.headers)
    if row.treatment is Treatment.DROPPED:
        assert row.field in dropped, (row.field, dropped)
    else:
        assert row.field not in dropped, (row.field, dropped)
        assert check is not None, f"TRANSLATED row {row.field!r} needs a check of what Converse received"
        assert check(sent[0]), (row.field, sent[0].body_json)


@pytest.mark.parametrize(
    ("source", "extra", "named"),
    [
        (WireFormat.OPENAI_CHAT, {"n": 2}, "n=2"),
        (WireFormat.OPENAI_CHAT, {"messages": [{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}]}]}, "https://example.com/cat.png"),
    ],
)  # fmt: skip
def test_a_value_the_translated_row_refuses_is_a_400_naming_it(
    bedrock: Running, source: WireFormat, extra: Body, named: str
) -> None:
    """``n > 1`` and an image by http URL: the rows (``n``, ``messages``) say refused for these values."""
    before = bedrock.count()
    response = send(bedrock, source, {**BASE[source], **extra})
    assert response.status_code == 400, response.text
    assert named in response.text
    assert not bedrock.sent(before)


def test_a_value_the_emitter_leaves_out_is_named_under_the_callers_field(bedrock: Running) -> None:
    """``tool_choice: "none"`` (Converse has no none) and a past answer's text citations."""
    body = {**BASE[WireFormat.OPENAI_CHAT], "tools": [OAI_TOOL], "tool_choice": "none"}
    response = send(bedrock, WireFormat.OPENAI_CHAT, body)
    assert response.status_code == 200
    assert dropped_of(response.headers) == ["tool_choice"]
    cited = {"type": "text", "text": "per the doc", "citations": [{"type": "char_location", "cited_text": "x",
             "document_index": 0, "start_char_index": 0, "end_char_index": 1}]}  # fmt: skip
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": [cited]},
                {"role": "user", "content": "more"}]  # fmt: skip
    response = send(
        bedrock, WireFormat.ANTHROPIC_MESSAGES, {**BASE[WireFormat.ANTHROPIC_MESSAGES], "messages": messages}
    )
    assert response.status_code == 200
    assert dropped_of(response.headers) == ["messages[].content[].citations"]


def test_feature_headers_never_cross_to_bedrock_and_are_named(bedrock: Running) -> None:
    """``anthropic-beta`` cannot go to Converse: named ``header:anthropic-beta``."""
    headers = {"x-api-key": GATEWAY_KEY, "anthropic-beta": "interleaved-thinking-2025-05-14"}
    with httpx.Client(timeout=15) as client:
        response = client.post(f"{bedrock.url}/v1/messages", json=BASE[WireFormat.ANTHROPIC_MESSAGES], headers=headers)
    assert response.status_code == 200
    assert dropped_of(response.headers) == ["header:anthropic-beta"]
