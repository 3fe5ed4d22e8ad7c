"""The ``answer`` shorthand: one logical answer expanded into each shape's body or stream and cut."""

from __future__ import annotations

import json
from email.utils import parsedate_to_datetime

import pytest

from routeproof.conformance.answers import expand_step
from routeproof.mock import step_from_json


def test_non_streamed_openai_answer_is_the_documented_body() -> None:
    """A non-streamed answer becomes a chat.completion body carrying the text."""
    step = expand_step({"answer": {"text": "from-a"}}, protocol="openai", stream=False, model="m")
    assert step["body"]["choices"][0]["message"]["content"] == "from-a"
    step_from_json(step)  # a valid mock step


@pytest.mark.parametrize("protocol", ["openai", "anthropic", "bedrock"])
def test_cut_after_first_piece_stops_after_the_head_and_one_delta(protocol: str) -> None:
    """``end: cut`` keeps the head events and ``after_pieces`` deltas, then resets the connection."""
    step = expand_step(
        {"answer": {"pieces": ["Hel", "lo"], "end": "cut", "after_pieces": 1}},
        protocol=protocol,
        stream=True,
        model="m",
    )
    assert step["cut_mode"] == "reset"
    assert step["cut_after_items"] == len(step["stream_events"])
    assert "Hel" in json.dumps(step["stream_events"])
    assert '"lo"' not in json.dumps(step["stream_events"])
    step_from_json(step)


def test_no_end_event_drops_finish_and_done() -> None:
    """``end: no_end_event`` sends every delta but no finish_reason and no [DONE], and no cut."""
    step = expand_step(
        {"answer": {"pieces": ["a", "b"], "end": "no_end_event"}}, protocol="openai", stream=True, model="m"
    )
    text = json.dumps(step["stream_events"])
    assert "[DONE]" not in text
    assert '"stop"' not in text
    assert "cut_after_items" not in step


def test_http_date_template_is_a_future_http_date() -> None:
    """``@http-date+3s`` in a header becomes an RFC 9110 HTTP-date about 3 s ahead."""
    step = expand_step(
        {"status": 429, "headers": {"Retry-After": "@http-date+3s"}}, protocol="openai", stream=False, model="m"
    )
    assert parsedate_to_datetime(step["headers"]["Retry-After"]).tzinfo is not None


def test_unknown_end_mode_is_refused() -> None:
    """An unknown ``end`` is a ValueError naming it."""
    with pytest.raises(ValueError, match="sideways"):
        expand_step({"answer": {"end": "sideways"}}, protocol="openai", stream=True, model="m")
