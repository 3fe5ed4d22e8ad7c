"""``responses_estimate``'s contracts over any JSON body (CrossHair cannot check this function: it
crashes inside json.dumps on a symbolic int, so this property test is where its conditions run)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from routeproof.core.formats.responses_api import responses_estimate

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
_FIELDS = st.sampled_from(["model", "input", "instructions", "stream", "max_output_tokens", "tools", "text", "user"])


@given(st.dictionaries(_FIELDS | st.text(max_size=8), _JSON, max_size=8))
def test_any_json_body_gives_a_chat_body_and_an_echo(body: dict[str, Any]) -> None:
    """icontract checks the pre- and postconditions on every call; the texts must also parse."""
    estimate = responses_estimate(body)
    chat = json.loads(estimate.chat_json)
    assert chat["messages"][-1]["role"] == "user"
    assert isinstance(json.loads(estimate.echo_json), dict)


def test_a_non_string_instruction_is_not_a_system_turn() -> None:
    """The input CrossHair chokes on (``{'instructions': 0}``), run for real."""
    chat = json.loads(responses_estimate({"instructions": 0}).chat_json)
    assert [m["role"] for m in chat["messages"]] == ["user"]
    assert json.loads(responses_estimate({"instructions": 0}).echo_json)["instructions"] == 0
