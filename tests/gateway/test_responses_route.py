"""The pure choice of a Responses request's path per provider (``core/responses_route.py``), the verbatim
body, and the reading of OpenAI's Responses answers and streams (``core/formats/responses_upstream.py``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from routeproof.config import load_config
from routeproof.core.formats.responses_upstream import (
    ResponsesStreamDecoder,
    normalize_responses,
    wire_frames,
)
from routeproof.core.responses_route import (
    RESPONSES_ROUTER_OWNED,
    ResponsesPath,
    responses_passthrough_body,
    responses_path_for,
    verbatim_dropped,
)
from routeproof.core.types import FinishReason, MessageStop, StreamError, TextDelta, ToolUseDelta, ToolUseStart
from routeproof.errors import ConfigError
from routeproof.mock.responses import ResponsesBook

KEYS = st.sampled_from(("model", "stream", "stream_options", "input", "store", "a_future_field", "tools", "zz"))
VALUES = st.none() | st.booleans() | st.integers() | st.lists(st.integers(), max_size=2)
SLOW_OK = settings(max_examples=50, suppress_health_check=[HealthCheck.too_slow], deadline=None)


@SLOW_OK
@given(body=st.dictionaries(KEYS, VALUES, max_size=6), stream=st.booleans())
def test_the_verbatim_body_keeps_every_field_the_router_does_not_own(body: dict[str, object], stream: bool) -> None:
    """Every caller field but model/stream/stream_options is sent untouched; model is the resolved one."""
    sent = responses_passthrough_body(body, model="gpt-4o", stream=stream)
    assert {k: v for k, v in sent.items() if k not in RESPONSES_ROUTER_OWNED} == {
        k: v for k, v in body.items() if k not in RESPONSES_ROUTER_OWNED
    }
    assert sent["model"] == "gpt-4o"
    assert ("stream" in sent) is stream


def test_a_provider_with_the_api_always_gets_the_request_verbatim() -> None:
    """Stateful or not, a Responses-capable provider's path is VERBATIM."""
    for body in ({"input": "hi"}, {"input": "hi", "previous_response_id": "resp_1"}, {"input": "hi", "zzz": 1}):
        assert responses_path_for(json.dumps(body), responses_api=True).path is ResponsesPath.VERBATIM


def test_without_the_api_a_stateless_request_is_translated_and_a_stateful_one_skipped() -> None:
    """No Responses API: the Chat rewriting, or a skip naming the field that needs the API."""
    plain = responses_path_for(json.dumps({"model": "m", "input": "hi"}), responses_api=False)
    assert plain.path is ResponsesPath.TRANSLATED
    assert json.loads(plain.chat_json)["messages"] == [{"role": "user", "content": "hi"}]
    for field, value in (("previous_response_id", "resp_1"), ("store", True), ("background", True)):
        choice = responses_path_for(json.dumps({"input": "hi", field: value}), responses_api=False)
        assert (choice.path, choice.field) == (ResponsesPath.SKIPPED, field)
    hosted = responses_path_for(json.dumps({"input": "hi", "tools": [{"type": "web_search"}]}), responses_api=False)
    assert (hosted.path, hosted.field) == (ResponsesPath.SKIPPED, "tools[0].type")
    malformed = responses_path_for(json.dumps({"input": 5}), responses_api=False)
    assert malformed.path is ResponsesPath.SKIPPED


def _turn_events(tool: bool) -> bytes:
    request = {"model": "m", "input": "hi", "stream": True}
    if tool:
        request["tools"] = [{"type": "function", "name": "search", "parameters": {}}]
    turn = ResponsesBook().turn(request, 1)
    return b"".join(f"event: {e['event']}\ndata: {json.dumps(e['data'])}\n\n".encode() for e in turn.events())


@SLOW_OK
@given(cuts=st.lists(st.integers(min_value=1, max_value=4000), max_size=6), tool=st.booleans())
def test_the_decoder_reads_a_stream_split_anywhere_and_carries_every_frame(cuts: list[int], tool: bool) -> None:
    """However the bytes are split, the same neutral events come out, and their frames are the whole
    stream, in order (so the relay loses nothing)."""
    data = _turn_events(tool)
    decoder = ResponsesStreamDecoder()
    events = []
    start = 0
    for cut in sorted(set(cuts)):
        events += decoder.feed(data[start:cut])
        start = max(start, cut)
    events += decoder.feed(data[start:]) + decoder.finish()
    frames = [f for e in events for f in (wire_frames(e) or ())]
    assert len(frames) == data.count(b"\n\n")
    assert isinstance(events[-1], MessageStop)
    if tool:
        assert isinstance(events[0], ToolUseStart)
        assert events[0].id == "call_mock_1"
        assert "".join(e.partial_json for e in events if isinstance(e, ToolUseDelta)) == '{"query": "routeproof mock"}'
        assert events[-1].stop_reason is FinishReason.TOOL_CALLS
    else:
        assert isinstance(events[0], TextDelta)
        assert events[-1].usage.prompt_tokens == 12


def test_a_stream_cut_before_its_terminal_event_is_a_stream_error() -> None:
    """A body that ends before response.completed ends in one StreamError; response.created alone is no event."""
    data = _turn_events(False)
    created = data.split(b"\n\n")[0] + b"\n\n"
    decoder = ResponsesStreamDecoder()
    assert decoder.feed(created) == []
    end = decoder.finish()
    assert len(end) == 1
    assert isinstance(end[0], StreamError)
    assert end[0].message.startswith("stream incomplete")


def test_a_plain_response_normalises_text_usage_and_finish() -> None:
    """The response object's text, cached tokens (counted apart) and incomplete reason are read."""
    body = ResponsesBook().turn({"model": "m", "input": "hi"}, 1).body()
    body["usage"]["input_tokens_details"]["cached_tokens"] = 5
    resp = normalize_responses(body)
    assert resp.choices[0].content.startswith("Hello")
    assert (resp.usage.prompt_tokens, resp.usage.cached_input_tokens, resp.usage.completion_tokens) == (7, 5, 8)
    cut = {**body, "status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}}
    assert normalize_responses(cut).finish_reason is FinishReason.LENGTH


def test_responses_api_is_checked_at_load(tmp_path: Path) -> None:
    """responses_api must be a boolean, and only openai/azure providers take it; the error names the key."""
    path = tmp_path / "agent.toml"
    for kind, value, why in (("anthropic", "true", "only"), ("openai", '"yes"', "true or false")):
        path.write_text(f'[driver.providers.p]\nkind = "{kind}"\nmodel = "m"\nresponses_api = {value}\n')
        with pytest.raises(ConfigError, match=rf"driver\.providers\.p\.responses_api.*{why}"):
            load_config(path, environ={"ANTHROPIC_API_KEY": "k", "OPENAI_API_KEY": "k"})
    path.write_text('[driver.providers.p]\nkind = "openai"\nmodel = "m"\nresponses_api = true\n')
    assert load_config(path, environ={"OPENAI_API_KEY": "k"}).providers[0].responses_api is True


OWN = {"type": "reasoning", "id": "rs_rp1", "summary": []}
OPENAIS = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAA"}
ITEMS = st.lists(st.sampled_from(({"role": "user", "content": "hi"}, OWN, OPENAIS, "text", 3)), max_size=5)


@SLOW_OK
@given(items=ITEMS, stream=st.booleans())
def test_only_the_gateways_own_reasoning_items_leave_the_verbatim_input(items: list[object], stream: bool) -> None:
    """The verbatim input is the caller's minus this gateway's own reasoning items (the same object
    when it has none), and those are named; OpenAI's own items (encrypted) and anything else stay."""
    body = {"input": items, "store": False}
    sent = responses_passthrough_body(body, model="gpt-4o", stream=stream)
    kept = [i for i in items if i is not OWN]
    assert sent["input"] == kept
    assert (sent["input"] is items) == (kept == items)
    assert verbatim_dropped(body) == (("input[].reasoning",) if kept != items else ())
    assert verbatim_dropped({"input": "a string"}) == ()
