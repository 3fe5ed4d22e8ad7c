"""Same-protocol streams are the provider's own frames: the official SDKs streaming through
``routeproof serve`` receive exactly what the mock provider sent (``core/formats/relay.py``).

OpenAI client -> OpenAI mock: the chunks' own ``id``, ``system_fingerprint``, ``service_tier``,
streamed ``annotations`` and ``delta.audio`` arrive as sent; the usage chunk the router asked for
(``stream_options.include_usage``) is held back when the caller did not ask for it. Anthropic client ->
Anthropic mock: every event type and field (``message_start`` usage details, ``ping``, thinking with
``signature_delta``, ``citations_delta``, server-tool blocks, a block type and an event type newer than
this code, comments) arrives as sent. A stream cut after its first content ends in the shape's error
event after the frames that came; an in-band error before the first content fails over, and the client
gets only the retry's frames.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest

from routeproof.gateway import ATTEMPTS_HEADER, Backend
from routeproof.mock import MockProviderServer, Scripted, Shape
from routeproof.mock.features import MOCK_ANNOTATION, MOCK_AUDIO_DATA, MOCK_FINGERPRINT, asked, enrich_stream
from routeproof.mock.script import CutMode, StreamItem
from routeproof.mock.shapes import RequestView, default_stream, encode_stream_item, match_route
from tests.gateway.conftest import ENVIRON, FAST_BACKOFF, serve
from tests.wire.stack import GATEWAY_KEY, Running, dropped_of, gateway_in_thread

ASK: dict[str, Any] = {"model": "chat", "messages": [{"role": "user", "content": "Hello?"}], "stream": True}


@pytest.fixture(scope="module")
def openai_behind(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    """A gateway whose only provider is an OpenAI Chat Completions mock."""
    with gateway_in_thread(tmp_path_factory.mktemp("relay-openai"), Shape.OPENAI) as running:
        yield running


@pytest.fixture(scope="module")
def anthropic_behind(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    """A gateway whose only provider is an Anthropic Messages mock."""
    with gateway_in_thread(tmp_path_factory.mktemp("relay-anthropic"), Shape.ANTHROPIC) as running:
        yield running


def _mock_frames(shape: Shape, entry_body: object, path: str) -> list[bytes]:
    """The frames the mock sends for a request body it received (its default stream, enriched)."""
    view = match_route(shape, "POST", path, entry_body)
    assert isinstance(view, RequestView)
    events = enrich_stream(shape, asked(shape, entry_body), default_stream(shape, view))
    return [encode_stream_item(shape, e) for e in events]


def _raw_stream(running: Running, path: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[bytes, Any]:
    """The gateway's streamed answer, as bytes, and its headers."""
    with (
        httpx.Client(timeout=15) as client,
        client.stream("POST", f"{running.url}{path}", json=body, headers=headers) as response,
    ):
        assert response.status_code == 200, response.read()
        return response.read(), response.headers


def _openai_raw(running: Running, body: dict[str, Any]) -> tuple[bytes, Any]:
    return _raw_stream(running, "/v1/chat/completions", body, {"authorization": f"Bearer {GATEWAY_KEY}"})


def _is_usage_chunk(frame: bytes) -> bool:
    return b'"choices": []' in frame and b'"usage": {' in frame


def test_an_openai_stream_is_the_providers_frames_byte_for_byte(openai_behind: Running) -> None:
    """Seed, service tier, web search and usage asked: the client's bytes are the mock's frames, all of them."""
    since = openai_behind.count()
    body = {**ASK, "seed": 7, "service_tier": "auto", "web_search_options": {},
            "stream_options": {"include_usage": True}}  # fmt: skip
    received, headers = _openai_raw(openai_behind, body)
    sent = openai_behind.sent(since)[0]
    frames = _mock_frames(Shape.OPENAI, sent.body_json, sent.path)
    assert received == b"".join(frames)
    assert any(_is_usage_chunk(f) for f in frames)
    assert b'"system_fingerprint": "fp_mock0001"' in received
    assert b'"annotations"' in received
    assert dropped_of(headers) == []


def test_the_openai_sdk_reads_the_providers_own_chunk_fields(openai_behind: Running) -> None:
    """Each chunk's id, system_fingerprint and service_tier are the provider's; annotations arrive on a delta."""
    with openai.OpenAI(base_url=f"{openai_behind.url}/v1", api_key=GATEWAY_KEY, max_retries=0, timeout=15) as client:
        chunks = list(
            client.chat.completions.create(
                model="chat",
                messages=[{"role": "user", "content": "Hello?"}],
                stream=True,
                seed=7,
                service_tier="flex",
                web_search_options={},
                stream_options={"include_usage": True},
            )
        )
    assert {c.id for c in chunks} == {"chatcmpl-mock-1"}
    assert {c.system_fingerprint for c in chunks} == {MOCK_FINGERPRINT}
    assert {c.service_tier for c in chunks} == {"flex"}
    annotations = [d for c in chunks for ch in c.choices if (d := (ch.delta.model_extra or {}).get("annotations"))]
    assert annotations == [[MOCK_ANNOTATION]]
    text = "".join(ch.delta.content or "" for c in chunks for ch in c.choices)
    assert text == "Hello from the routeproof mock."
    assert chunks[-1].usage is not None
    assert chunks[-1].usage.total_tokens == 20


def test_the_usage_chunk_the_router_asked_for_is_held_back(openai_behind: Running) -> None:
    """No include_usage from the caller: the router asked for it (billing), the client gets every frame but it."""
    since = openai_behind.count()
    received, _ = _openai_raw(openai_behind, {**ASK, "seed": 1})
    sent = openai_behind.sent(since)[0]
    assert isinstance(sent.body_json, dict)
    assert sent.body_json["stream_options"] == {"include_usage": True}  # the router's, for the ledger
    frames = _mock_frames(Shape.OPENAI, sent.body_json, sent.path)
    usage = [f for f in frames if _is_usage_chunk(f)]
    assert len(usage) == 1
    assert received == b"".join(f for f in frames if f not in usage)
    with openai.OpenAI(base_url=f"{openai_behind.url}/v1", api_key=GATEWAY_KEY, max_retries=0, timeout=15) as client:
        chunks = list(client.chat.completions.create(model="chat", messages=ASK["messages"], stream=True))
    assert all(c.choices for c in chunks)  # a client indexing choices[0] never meets the usage chunk


def test_streamed_audio_reaches_the_client_as_sent(openai_behind: Running) -> None:
    """An audio answer's ``delta.audio`` pieces (transcript, data) are relayed; its transcript is the text."""
    since = openai_behind.count()
    body = {**ASK, "modalities": ["text", "audio"], "audio": {"voice": "alloy", "format": "pcm16"}}
    received, _ = _openai_raw(openai_behind, body)
    sent = openai_behind.sent(since)[0]
    frames = [f for f in _mock_frames(Shape.OPENAI, sent.body_json, sent.path) if not _is_usage_chunk(f)]
    assert received == b"".join(frames)
    assert MOCK_AUDIO_DATA.encode() in received
    assert b'"transcript": " routeproof mock."' in received


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
    return {"data": {"id": "chatcmpl-cut", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o",
                     "system_fingerprint": "fp_cut", "choices": [choice]}}  # fmt: skip


def test_an_openai_stream_cut_after_content_ends_in_an_error_event(openai_behind: Running) -> None:
    """Cut after two content chunks: the client gets those frames as sent, then the error event (the SDK raises)."""
    items: tuple[StreamItem, ...] = (
        _chunk({"role": "assistant", "content": ""}), _chunk({"content": "Hel"}), _chunk({"content": "lo"}),
        _chunk({}, "stop"), "data: [DONE]\n\n",
    )  # fmt: skip
    openai_behind.mock.script(Scripted(stream_events=items, cut_after_items=3, cut_mode=CutMode.CLOSE))
    received, _ = _openai_raw(openai_behind, ASK)
    relayed = b"".join(encode_stream_item(Shape.OPENAI, i) for i in items[:3])
    assert received.startswith(relayed)
    rest = received[len(relayed) :]
    assert rest.startswith(b'data: {"error":')
    assert b"stream interrupted" in rest
    assert b"[DONE]" not in rest
    openai_behind.mock.script(Scripted(stream_events=items, cut_after_items=3, cut_mode=CutMode.CLOSE))
    with openai.OpenAI(base_url=f"{openai_behind.url}/v1", api_key=GATEWAY_KEY, max_retries=0, timeout=15) as client:
        stream = client.chat.completions.create(model="chat", messages=ASK["messages"], stream=True)
        with pytest.raises(openai.APIError, match="stream interrupted"):
            for _ in stream:
                pass


def _two_openai_toml(first: str, second: str) -> str:
    providers = "".join(
        f'[driver.providers.{name}]\nkind = "openai"\nbase_url = "{url}/v1"\nmodel = "gpt-4o"\npriority = {n}\n'
        for n, (name, url) in enumerate((("first", first), ("second", second)), start=1)
    )
    return providers + FAST_BACKOFF + '[gateway]\naliases = ["chat"]\n[gateway.tenants.team-a]\nkey_env = "GW_KEY_A"\n'


@pytest.mark.asyncio
async def test_an_in_band_error_before_content_fails_over_and_only_the_next_stream_is_relayed(tmp_path: Path) -> None:
    """The first provider's error event before any content fails its attempt over; the client gets exactly
    the second provider's frames, nothing of the first's."""
    overloaded = {"data": {"error": {"message": "overloaded", "type": "server_error"}}}
    error: tuple[StreamItem, ...] = (_chunk({"role": "assistant", "content": ""}), overloaded)
    async with MockProviderServer(Shape.OPENAI, name="first") as first, MockProviderServer(Shape.OPENAI) as second:
        first.script(*(Scripted(stream_events=error) for _ in range(4)))  # every retry too (max_retries = 3)
        path = tmp_path / "agent.toml"
        path.write_text(_two_openai_toml(first.base_url, second.base_url))
        async with serve(Backend.load(path, environ=ENVIRON), None) as (url, _, _), httpx.AsyncClient() as client:
            headers = {"authorization": f"Bearer {GATEWAY_KEY}"}
            async with client.stream("POST", f"{url}/v1/chat/completions", json=ASK, headers=headers) as response:
                received = await response.aread()
                assert response.status_code == 200, received
                attempts = json.loads(response.headers[ATTEMPTS_HEADER])
        sent = second.journal[0]
    assert [a["status"] for a in attempts][-2:] == ["failed_over", "succeeded"]
    frames = [f for f in _mock_frames(Shape.OPENAI, sent.body_json, sent.path) if not _is_usage_chunk(f)]
    assert received == b"".join(frames)
    assert b"overloaded" not in received


# --- Anthropic -------------------------------------------------------------------------------------------


def _ev(name: str, **data: object) -> dict[str, Any]:
    return {"event": name, "data": {"type": name, **data}}


CITATION = {"type": "char_location", "cited_text": "The sky is blue.", "document_index": 0,
            "document_title": "facts", "start_char_index": 0, "end_char_index": 16}  # fmt: skip
START_USAGE = {
    "input_tokens": 10, "output_tokens": 1, "cache_creation_input_tokens": 4, "cache_read_input_tokens": 16,
    "cache_creation": {"ephemeral_5m_input_tokens": 4, "ephemeral_1h_input_tokens": 0},
    "server_tool_use": {"web_search_requests": 0}, "service_tier": "standard",
}  # fmt: skip
MESSAGE: dict[str, Any] = {
    "id": "msg_relay_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
    "content": [], "stop_reason": None, "stop_sequence": None, "usage": START_USAGE, "container": None,
}  # fmt: skip
SEARCH_RESULT = [{"type": "web_search_result", "url": "https://sky.example", "title": "Sky",
                  "encrypted_content": "EqABCk", "page_age": None}]  # fmt: skip
EVERY_KIND: tuple[StreamItem, ...] = (
    _ev("message_start", message=MESSAGE),
    _ev("ping"),
    ": a comment line, relayed as sent\n\n",
    _ev("content_block_start", index=0, content_block={"type": "thinking", "thinking": "", "signature": ""}),
    _ev("content_block_delta", index=0, delta={"type": "thinking_delta", "thinking": "Sky colour. "}),
    _ev("content_block_delta", index=0, delta={"type": "signature_delta", "signature": "EqQBCkYIBRgC"}),
    _ev("content_block_stop", index=0),
    _ev(
        "content_block_start",
        index=1,
        content_block={"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}},
    ),
    _ev("content_block_delta", index=1, delta={"type": "input_json_delta", "partial_json": '{"query": "sky"}'}),
    _ev("content_block_stop", index=1),
    _ev(
        "content_block_start",
        index=2,
        content_block={"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": SEARCH_RESULT},
    ),
    _ev("content_block_stop", index=2),
    _ev("content_block_start", index=3, content_block={"type": "future_block", "payload": {"x": 1}}),
    _ev("content_block_delta", index=3, delta={"type": "future_delta", "more": [1, 2]}),
    _ev("content_block_stop", index=3),
    _ev("future_event", detail="an event type newer than this code"),
    _ev("content_block_start", index=4, content_block={"type": "text", "text": "", "citations": []}),
    _ev("content_block_delta", index=4, delta={"type": "citations_delta", "citation": CITATION}),
    _ev("content_block_delta", index=4, delta={"type": "text_delta", "text": "It is blue."}),
    _ev("content_block_stop", index=4),
    _ev(
        "message_delta",
        delta={"stop_reason": "end_turn", "stop_sequence": None},
        usage={"output_tokens": 25, "server_tool_use": {"web_search_requests": 1}},
    ),
    _ev("message_stop"),
)
ANTHROPIC_ASK: dict[str, Any] = {
    "model": "chat", "max_tokens": 256, "stream": True,
    "thinking": {"type": "enabled", "budget_tokens": 1024},
    "messages": [{"role": "user", "content": "What colour is the sky?"}],
}  # fmt: skip


def _anthropic_raw(running: Running, body: dict[str, Any]) -> tuple[bytes, Any]:
    headers = {"x-api-key": GATEWAY_KEY, "anthropic-version": "2023-06-01"}
    return _raw_stream(running, "/v1/messages", body, headers)


def test_an_anthropic_stream_keeps_every_event_and_field(anthropic_behind: Running) -> None:
    """Every event type (ping, newer ones, comments) and field (usage details, signatures, citations,
    server-tool and newer blocks) reaches the client as the provider sent it, byte for byte."""
    anthropic_behind.mock.script(Scripted(stream_events=EVERY_KIND))
    received, headers = _anthropic_raw(anthropic_behind, ANTHROPIC_ASK)
    assert received == b"".join(encode_stream_item(Shape.ANTHROPIC, e) for e in EVERY_KIND)
    assert dropped_of(headers) == []


def test_the_anthropic_sdk_reads_the_relayed_stream_whole(anthropic_behind: Running) -> None:
    """The SDK's accumulated message: the provider's id and usage details, the signed thinking, the cited text."""
    anthropic_behind.mock.script(Scripted(stream_events=EVERY_KIND))
    client = anthropic.Anthropic(base_url=anthropic_behind.url, api_key=GATEWAY_KEY, max_retries=0, timeout=15)
    ask = {k: v for k, v in ANTHROPIC_ASK.items() if k != "stream"}
    with client, client.messages.stream(**ask) as events:
        message = events.get_final_message()
    assert message.id == "msg_relay_1"
    assert message.usage.cache_creation is not None
    assert message.usage.cache_creation.ephemeral_5m_input_tokens == 4
    assert message.usage.server_tool_use is not None
    assert message.usage.server_tool_use.web_search_requests == 1
    thinking, tool, result, _future, text = message.content
    assert thinking.type == "thinking"
    assert thinking.signature == "EqQBCkYIBRgC"
    assert tool.type == "server_tool_use"
    assert result.type == "web_search_tool_result"
    assert text.type == "text"
    assert text.text == "It is blue."
    assert [c.model_dump(exclude_none=True) for c in text.citations or []] == [CITATION]


def test_an_anthropic_default_stream_is_the_mocks_frames(anthropic_behind: Running) -> None:
    """The mock's own default stream (with thinking and cache usage asked) arrives as the mock encoded it."""
    since = anthropic_behind.count()
    system = [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}]
    received, _ = _anthropic_raw(anthropic_behind, {**ANTHROPIC_ASK, "system": system})
    sent = anthropic_behind.sent(since)[0]
    assert received == b"".join(_mock_frames(Shape.ANTHROPIC, sent.body_json, sent.path))
    assert b"signature_delta" in received
    assert b"cache_read_input_tokens" in received


def test_an_anthropic_stream_cut_after_content_ends_in_an_error_event(anthropic_behind: Running) -> None:
    """Cut inside the text block: the frames that came, as sent, then one ``error`` event, no message_stop."""
    anthropic_behind.mock.script(Scripted(stream_events=EVERY_KIND, cut_after_items=19, cut_mode=CutMode.CLOSE))
    received, _ = _anthropic_raw(anthropic_behind, ANTHROPIC_ASK)
    relayed = b"".join(encode_stream_item(Shape.ANTHROPIC, e) for e in EVERY_KIND[:19])
    assert received.startswith(relayed)
    rest = received[len(relayed) :]
    assert rest.startswith(b"event: error\n")
    assert b"stream interrupted" in rest
    assert b"message_stop" not in rest


@pytest.fixture(scope="module")
def gemini_behind(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    """A gateway whose only provider is Gemini's OpenAI-compatible endpoint (the gemini mock)."""
    with gateway_in_thread(tmp_path_factory.mktemp("relay-gemini"), Shape.GEMINI) as running:
        yield running


GEMINI_STREAM: tuple[StreamItem, ...] = (
    _chunk({"role": "assistant", "content": "Hel"}),
    _chunk({"content": "lo", "annotations": [{"type": "url_citation", "url_citation": {"url": "https://a.example"}}]}),
    _chunk({"audio": {"id": "audio_1", "transcript": " there"}}),
    _chunk({}, "stop"),
    {"data": {"id": "chatcmpl-cut", "object": "chat.completion.chunk", "created": 1, "model": "gemini-2.5-flash",
              "choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 20}}},
    "data: [DONE]\n\n",
)  # fmt: skip


def test_a_gemini_stream_and_answer_are_geminis_own(gemini_behind: Running) -> None:
    """Gemini speaks OpenAI's protocol, so an OpenAI-shaped caller gets its own frames (streamed
    annotations and audio included, which the neutral events do not carry) and its own plain body,
    while the ledger still counts the thinking tokens Gemini reports only in ``total_tokens``."""
    gemini_behind.mock.script(Scripted(stream_events=GEMINI_STREAM))
    received, headers = _openai_raw(gemini_behind, {**ASK, "stream_options": {"include_usage": True}})
    assert received == b"".join(encode_stream_item(Shape.GEMINI, i) for i in GEMINI_STREAM)
    assert dropped_of(headers) == []
    gemini_behind.mock.script(Scripted(body=GEMINI_ANSWER))
    body = {"model": "chat", "messages": ASK["messages"]}
    with httpx.Client(timeout=15) as client:
        plain = client.post(
            f"{gemini_behind.url}/v1/chat/completions", json=body, headers={"authorization": f"Bearer {GATEWAY_KEY}"}
        )
    assert plain.status_code == 200, plain.text
    assert plain.json() == GEMINI_ANSWER  # its annotations, audio and usage as Gemini wrote them


GEMINI_ANSWER: dict[str, Any] = {
    "id": "chatcmpl-gemini-1", "object": "chat.completion", "created": 1, "model": "gemini-2.5-flash",
    "choices": [{"index": 0, "finish_reason": "stop", "message": {
        "role": "assistant", "content": "Hello",
        "annotations": [{"type": "url_citation", "url_citation": {"url": "https://a.example"}}],
        "audio": {"id": "audio_1", "transcript": "Hello", "data": "AAAA", "expires_at": 1}}}],
    "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 20},
}  # fmt: skip


NEWER_DELTA: tuple[StreamItem, ...] = (
    _ev("message_start", message=MESSAGE),
    _ev("content_block_start", index=0, content_block={"type": "text", "text": ""}),
    _ev("content_block_delta", index=0, delta={"type": "text_delta", "text": "It is "}),
    _ev("content_block_delta", index=0, delta={"type": "future_text_delta", "detail": {"x": 1}}),
    _ev("content_block_delta", index=0, delta={"type": "text_delta", "text": "blue."}),
    _ev("content_block_stop", index=0),
    _ev("message_delta", delta={"stop_reason": "end_turn", "stop_sequence": None}, usage={"output_tokens": 5}),
    _ev("message_stop"),
)


def test_a_delta_type_newer_than_this_code_does_not_break_the_stream(anthropic_behind: Running) -> None:
    """A delta type Anthropic adds later, inside a text block: an Anthropic client gets it as sent and
    an OpenAI client the whole text (it ended both streams as malformed)."""
    anthropic_behind.mock.script(Scripted(stream_events=NEWER_DELTA))
    received, _ = _anthropic_raw(anthropic_behind, ANTHROPIC_ASK)
    assert received == b"".join(encode_stream_item(Shape.ANTHROPIC, e) for e in NEWER_DELTA)
    anthropic_behind.mock.script(Scripted(stream_events=NEWER_DELTA))
    with openai.OpenAI(base_url=f"{anthropic_behind.url}/v1", api_key=GATEWAY_KEY, max_retries=0, timeout=15) as client:
        chunks = list(client.chat.completions.create(**ASK))
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "It is blue."
    assert [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason] == ["stop"]
