"""Same-protocol passthrough bodies and cross-protocol field plans (``core/formats/passthrough.py``)."""

from __future__ import annotations

import pytest

from routeproof.core.formats.field_table import Treatment, treatment_of
from routeproof.core.formats.passthrough import (
    PassthroughPlan,
    cross_protocol_plan,
    passthrough_body,
    untranslated_fields,
)
from routeproof.core.messages import WireFormat

OAI, ANT = WireFormat.OPENAI_CHAT, WireFormat.ANTHROPIC_MESSAGES
CALLER = {
    "model": "chat",
    "messages": [{"role": "user", "content": "hi"}],
    "user": "u-1",
    "seed": 7,
    "verbosity": "low",  # a field newer than the code
    "temperature": 0.3,
    "stream": False,
}


def _plan(**kw: object) -> PassthroughPlan:
    fields: dict[str, object] = {"protocol": OAI, "model": "gpt-4o", "stream": False,
                                 "max_tokens_field": "max_completion_tokens"}  # fmt: skip
    fields.update(kw)
    return PassthroughPlan(**fields)  # type: ignore[arg-type]  # test helper over the plan's fields


def test_fields_the_router_does_not_own_pass_verbatim() -> None:
    """Every caller field but model/stream is sent as received, unknown ones included, in order."""
    sent = passthrough_body(CALLER, _plan())
    assert sent.body == {**{k: v for k, v in CALLER.items() if k != "stream"}, "model": "gpt-4o"}
    assert list(sent.body) == [k for k in CALLER if k != "stream"]
    assert sent.dropped == ()


def test_no_output_cap_is_invented_for_openai() -> None:
    """An OpenAI body without a cap goes out without one, whatever default the plan carries."""
    sent = passthrough_body(CALLER, _plan(default_max_tokens=4096))
    assert "max_tokens" not in sent.body
    assert "max_completion_tokens" not in sent.body
    assert sent.filled == ()


def test_the_cap_keeps_its_value_under_the_field_the_model_takes() -> None:
    """OpenAI's max_tokens is sent as max_completion_tokens (the model's field), same value."""
    sent = passthrough_body({**CALLER, "max_tokens": 40}, _plan())
    assert sent.body["max_completion_tokens"] == 40
    assert "max_tokens" not in sent.body


def test_anthropic_without_max_tokens_gets_the_default_and_says_so() -> None:
    """Anthropic requires max_tokens: a body without one gets the plan's default, reported as filled."""
    plan = _plan(protocol=ANT, model="claude-sonnet-4-5", max_tokens_field="max_tokens", default_max_tokens=64000)
    sent = passthrough_body({"model": "chat", "messages": []}, plan)
    assert sent.body["max_tokens"] == 64000
    assert sent.filled == ("max_tokens",)


def test_a_stream_sets_stream_and_include_usage_keeping_other_options() -> None:
    """A streamed OpenAI call asks for usage and keeps the caller's other stream_options."""
    sent = passthrough_body({**CALLER, "stream_options": {"include_obfuscation": False}}, _plan(stream=True))
    assert sent.body["stream"] is True
    assert sent.body["stream_options"] == {"include_obfuscation": False, "include_usage": True}


def test_capability_drops_leave_the_field_out_and_name_it() -> None:
    """A parameter the model rejects is left out and named; a stop tail keeps the accepted head."""
    sent = passthrough_body({**CALLER, "stop": ["a", "b", "c"]}, _plan(drops=("temperature", "stop_sequences[1:]"),
                                                                      kept_stops=("a",)))  # fmt: skip
    assert "temperature" not in sent.body
    assert sent.body["stop"] == ["a"]
    assert sent.dropped == ("temperature", "stop[1:]")


def test_untranslated_fields_are_the_keys_the_parse_does_not_carry() -> None:
    """user, seed and an unknown field are untranslated; messages and model are carried."""
    assert set(untranslated_fields(OAI, CALLER)) >= {"verbosity"}
    assert "messages" not in untranslated_fields(OAI, CALLER)


def test_cross_protocol_plan_follows_the_field_table() -> None:
    """Each field's treatment is the table's: refused fields carry the table's reason."""
    plan = cross_protocol_plan(OAI, ANT, ("verbosity", "future_param"))
    assert ("future_param", treatment_of(OAI, "future_param", ANT).note) in plan.refused  # no row: refused
    row = treatment_of(OAI, "verbosity", ANT)
    if row.treatment is Treatment.REFUSED:
        assert ("verbosity", row.note) in plan.refused
    elif row.treatment is Treatment.DROPPED:
        assert plan.dropped == ("verbosity",)
    assert cross_protocol_plan(OAI, OAI, ("verbosity",)).refused == ()


def test_a_plan_refuses_a_cap_field_of_another_protocol() -> None:
    """The cap field must be one of the protocol's own: a bad plan fails at construction naming it."""
    with pytest.raises(ValueError, match="max_tokens_field"):
        _plan(protocol=ANT, max_tokens_field="max_completion_tokens")


def test_stream_options_is_the_callers_own_field_in_an_anthropic_body() -> None:
    """Only OpenAI's stream_options is router-owned: in an Anthropic body it passes as received
    (the gateway's fuzzer found it dropped, which broke the passthrough postcondition: a 502)."""
    caller = {"model": "chat", "max_tokens": 1, "messages": [{"role": "user", "content": ""}], "stream_options": None}
    sent = passthrough_body(caller, _plan(protocol=ANT, model="claude-x", max_tokens_field="max_tokens"))
    assert sent.body["stream_options"] is None
    assert "stream_options" not in passthrough_body({**CALLER, "stream_options": {}}, _plan()).body


def test_a_drop_never_removes_a_field_the_router_owns() -> None:
    """A capability drop naming model (or stream) leaves it set: the router owns it (CrossHair's counterexample)."""
    sent = passthrough_body({}, _plan(drops=("model",)))
    assert sent.body["model"] == "gpt-4o"
    assert sent.dropped == ()


def test_an_empty_field_name_is_refused_across_protocols_and_kept_within_one() -> None:
    """A body key "" has no mapping to another protocol (refused, not a crash); the same protocol keeps it."""
    assert cross_protocol_plan(OAI, ANT, ("",)).refused[0][0] == ""
    same = cross_protocol_plan(WireFormat.BEDROCK_CONVERSE, WireFormat.BEDROCK_CONVERSE, ("",))
    assert (same.dropped, same.refused) == ((), ())
