"""Citations and server-tool blocks reach the caller where its shape has them, and are named where
they cannot.

An Anthropic application with a document whose ``citations`` are enabled: through the gateway to an
Anthropic provider its streamed ``citations_delta`` events arrive as sent (the ``anthropic`` SDK's
own accumulator puts them on the text block); a Bedrock answer's ``citationsContent`` keeps its text
and names ``citations`` dropped (``core/formats/answer_drops.py``). With Anthropic's web search
tool, the streamed ``server_tool_use`` and ``web_search_tool_result`` blocks arrive whole.
"""

from __future__ import annotations

from typing import Any

import anthropic
import httpx
import pytest

from routeproof.mock import Scripted, Shape
from tests.wire.stack import GATEWAY_KEY, dropped_of, gateway_in_thread

CITATION = {"type": "char_location", "cited_text": "The sky is blue.", "document_index": 0,
            "document_title": "facts", "start_char_index": 0, "end_char_index": 16}  # fmt: skip
DOCUMENT = {"type": "document", "title": "facts", "citations": {"enabled": True},
            "source": {"type": "text", "media_type": "text/plain", "data": "The sky is blue."}}  # fmt: skip
ASK: dict[str, Any] = {
    "model": "chat",
    "max_tokens": 256,
    "messages": [{"role": "user", "content": [DOCUMENT, {"type": "text", "text": "What colour is the sky?"}]}],
}


def _ev(name: str, **data: object) -> dict[str, Any]:
    return {"event": name, "data": {"type": name, **data}}


def _cited_stream() -> tuple[dict[str, Any], ...]:
    usage = {"input_tokens": 10, "output_tokens": 1}
    message: dict[str, Any] = {"id": "msg_c", "type": "message", "role": "assistant", "model": "m", "content": [],
               "stop_reason": None, "stop_sequence": None, "usage": usage}  # fmt: skip
    return (
        _ev("message_start", message=message),
        _ev("content_block_start", index=0, content_block={"type": "text", "text": "", "citations": []}),
        _ev("content_block_delta", index=0, delta={"type": "citations_delta", "citation": CITATION}),
        _ev("content_block_delta", index=0, delta={"type": "text_delta", "text": "It is blue."}),
        _ev("content_block_stop", index=0),
        _ev("message_delta", delta={"stop_reason": "end_turn", "stop_sequence": None}, usage={"output_tokens": 5}),
        _ev("message_stop"),
    )


def test_a_streamed_citation_reaches_an_anthropic_client_as_sent(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The citations_delta of Anthropic's stream is relayed: the SDK's final text block holds the citation."""
    with gateway_in_thread(tmp_path_factory.mktemp("citations"), Shape.ANTHROPIC) as running:
        running.mock.script(Scripted(stream_events=_cited_stream()))
        client = anthropic.Anthropic(base_url=running.url, api_key=GATEWAY_KEY, max_retries=0, timeout=15)
        with client, client.messages.stream(**ASK) as events:
            message = events.get_final_message()
            dropped = dropped_of(events.response.headers)
        sent = running.sent(0)[0].body_json
    block = message.content[0]
    assert block.type == "text"
    assert block.text == "It is blue."
    assert [c.model_dump(exclude_none=True) for c in block.citations or []] == [CITATION]
    assert dropped == []
    assert isinstance(sent, dict)
    assert sent["messages"][0]["content"][0]["citations"] == {"enabled": True}


def test_a_bedrock_answer_with_citations_keeps_its_text_and_names_them(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Converse answers a citations request with a ``citationsContent`` block: its text reaches the
    Anthropic client, and ``citations`` (not modelled for Converse) is named dropped."""
    location = {"documentChar": {"documentIndex": 0, "start": 0, "end": 16}}
    cited = {"citationsContent": {"content": [{"text": "It is blue."}],
                                  "citations": [{"title": "facts", "location": location}]}}  # fmt: skip
    usage = {"inputTokens": 10, "outputTokens": 5, "totalTokens": 15}
    body = {"output": {"message": {"role": "assistant", "content": [cited]}}, "stopReason": "end_turn",
            "usage": usage, "metrics": {"latencyMs": 1}}  # fmt: skip
    with gateway_in_thread(tmp_path_factory.mktemp("citations-bedrock"), Shape.BEDROCK) as running:
        running.mock.script(Scripted(body=body))
        raw = httpx.post(f"{running.url}/v1/messages", json=ASK, headers={"x-api-key": GATEWAY_KEY}, timeout=15)
        sent = running.sent(0)[0].body_json
    assert raw.status_code == 200, raw.text
    assert [b["text"] for b in raw.json()["content"] if b["type"] == "text"] == ["It is blue."]
    assert "citations" in dropped_of(raw.headers)
    assert isinstance(sent, dict)
    assert sent["messages"][0]["content"][0]["document"]["citations"] == {"enabled": True}


def _web_search_stream() -> tuple[dict[str, Any], ...]:
    usage = {"input_tokens": 10, "output_tokens": 1}
    message: dict[str, Any] = {"id": "msg_w", "type": "message", "role": "assistant", "model": "m", "content": [],
                               "stop_reason": None, "stop_sequence": None, "usage": usage}  # fmt: skip
    use = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}
    result = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": [
        {"type": "web_search_result", "url": "https://w.example/oslo", "title": "Oslo", "encrypted_content": "EqA=",
         "page_age": None}]}  # fmt: skip
    return (
        _ev("message_start", message=message),
        _ev("content_block_start", index=0, content_block=use),
        _ev("content_block_delta", index=0, delta={"type": "input_json_delta", "partial_json": '{"query": "oslo"}'}),
        _ev("content_block_stop", index=0),
        _ev("content_block_start", index=1, content_block=result),
        _ev("content_block_stop", index=1),
        _ev("content_block_start", index=2, content_block={"type": "text", "text": "", "citations": []}),
        _ev("content_block_delta", index=2, delta={"type": "citations_delta", "citation": WEB_CITATION}),
        _ev("content_block_delta", index=2, delta={"type": "text_delta", "text": "Sunny."}),
        _ev("content_block_stop", index=2),
        _ev("message_delta", delta={"stop_reason": "end_turn", "stop_sequence": None}, usage={"output_tokens": 9}),
        _ev("message_stop"),
    )


WEB_CITATION = {"type": "web_search_result_location", "url": "https://w.example/oslo", "title": "Oslo",
                "encrypted_index": "Eo8=", "cited_text": "Sunny in Oslo"}  # fmt: skip


def test_a_streamed_web_search_reaches_an_anthropic_client_whole(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Anthropic's server tool blocks (server_tool_use with its input, web_search_tool_result) and the
    cited text reach an Anthropic client's stream as sent; they were left out of the re-encoded stream."""
    ask = {**ASK, "messages": [{"role": "user", "content": "Weather in Oslo?"}],
           "tools": [{"type": "web_search_20250305", "name": "web_search", "max_uses": 1}]}  # fmt: skip
    with gateway_in_thread(tmp_path_factory.mktemp("web-search"), Shape.ANTHROPIC) as running:
        running.mock.script(Scripted(stream_events=_web_search_stream()))
        client = anthropic.Anthropic(base_url=running.url, api_key=GATEWAY_KEY, max_retries=0, timeout=15)
        with client, client.messages.stream(**ask) as events:
            message = events.get_final_message()
        sent = running.sent(0)[0].body_json
    assert [block.type for block in message.content] == ["server_tool_use", "web_search_tool_result", "text"]
    use, result, text = message.content
    assert use.type == "server_tool_use"
    assert use.input == {"query": "oslo"}
    assert result.type == "web_search_tool_result"
    assert result.model_dump()["content"][0]["encrypted_content"] == "EqA="
    assert text.type == "text"
    assert [c.model_dump(exclude_none=True) for c in text.citations or []] == [WEB_CITATION]
    assert isinstance(sent, dict)
    assert sent["tools"] == ask["tools"]
