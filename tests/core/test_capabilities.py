"""Model capabilities as data: the lookup, the shipped rows, user overrides and fitting a request."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from routeproof.core.capabilities import (
    CapabilityTable,
    ModelCapabilities,
    fit_request,
    kind_default,
    load_capabilities,
)
from routeproof.core.formats.translate import WireExtras
from routeproof.core.types import ChatRequest, Message, ProviderKind
from routeproof.errors import ConfigError
from routeproof.providers.capabilities import shipped_capabilities

OA, AN, OR = ProviderKind.OPENAI, ProviderKind.ANTHROPIC, ProviderKind.OPENROUTER


@pytest.mark.parametrize(
    ("kind", "model", "expected"),
    [
        (OA, "gpt-5.4-mini", ("max_completion_tokens", "developer", False, 4)),
        (OA, "gpt-5", ("max_completion_tokens", "developer", False, 4)),
        (OA, "gpt-4o", ("max_completion_tokens", "system", True, 4)),
        (OA, "o3", ("max_completion_tokens", "developer", False, 0)),
        (OA, "o4-mini-2025-04-16", ("max_completion_tokens", "developer", False, 0)),
        (OA, "o3-mini", ("max_completion_tokens", "developer", False, 4)),
        (OA, "some-future-model", ("max_completion_tokens", "system", True, 4)),
        (OR, "openai/gpt-5", ("max_tokens", "system", True, None)),
        (ProviderKind.VLLM, "gpt-5", ("max_tokens", "system", True, None)),
        (AN, "claude-opus-4-7", ("max_tokens", "system", False, None)),
        (AN, "claude-opus-4-8-20261101", ("max_tokens", "system", False, None)),
        (AN, "claude-sonnet-5-5", ("max_tokens", "system", False, None)),
        (AN, "claude-sonnet-4-5", ("max_tokens", "system", True, None)),
    ],
)
def test_shipped_rows(kind: ProviderKind, model: str, expected: tuple[str, str, bool, int | None]) -> None:
    """Each shipped row gives the documented max-tokens field, role, temperature rule and stop limit."""
    fresh = CapabilityTable(rows=shipped_capabilities().rows)  # its own memo: the lookup is worked out here
    caps = fresh.lookup(kind, model)
    assert (caps.max_tokens_field, caps.system_role, caps.temperature, caps.max_stop_sequences) == expected
    if kind is AN:
        assert caps.api_version == "2023-06-01"


def test_every_shipped_row_names_its_source_and_date() -> None:
    """No capability row without a public source and the date it was read."""
    for row in shipped_capabilities().rows:
        assert row.source
        assert len(row.checked) == len("2026-11-30")


def test_a_user_row_overrides_only_the_fields_it_names() -> None:
    """A later row wins field by field: the user can re-allow temperature without restating the rest."""
    user = load_capabilities('[[models]]\nprovider = "openai"\nmatch = "^gpt-5\\\\.4-mini$"\ntemperature = true\n')
    caps = shipped_capabilities().extended(user).lookup(OA, "gpt-5.4-mini")
    assert caps.temperature is True
    assert caps.system_role == "developer"
    assert shipped_capabilities().extended(user).lookup(OA, "gpt-5").temperature is False


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ('[[models]]\nprovider = "nope"\nmatch = "x"\n', "provider"),
        ('[[models]]\nprovider = "openai"\nmatch = "("\n', "not a valid regex"),
        ('[[models]]\nprovider = "openai"\nmatch = "x"\nmax_tokens_field = "n"\n', "max_tokens_field"),
        ('[[models]]\nprovider = "openai"\nmatch = "x"\ntemprature = false\n', "temprature"),
        ('[[models]]\nprovider = "openai"\nmatch = "x"\nmax_stop_sequences = -1\n', "max_stop_sequences"),
        ("[other]\n", "other"),
        ("not toml [", "does not parse"),
    ],
)
def test_a_bad_table_is_a_config_error_naming_what_is_wrong(text: str, named: str) -> None:
    """Unknown provider or key, bad regex, bad value, bad TOML: ConfigError naming it."""
    with pytest.raises(ConfigError, match=named):
        load_capabilities(text)


def test_fit_leaves_out_what_the_model_rejects_and_names_it() -> None:
    """temperature and top_p dropped whole; stop sequences cut to the limit, the tail named."""
    req = ChatRequest(messages=(Message.user("hi"),), temperature=0.2, stop_sequences=tuple("abcdef"))
    caps = ModelCapabilities(temperature=False, top_p=False, max_stop_sequences=4)
    fitted = fit_request(req, caps, WireExtras(top_p=0.9))
    assert fitted.request.temperature is None
    assert fitted.request.stop_sequences == tuple("abcd")
    assert fitted.extras.top_p is None
    assert fitted.dropped == ("temperature", "stop_sequences[4:]", "top_p")
    no_stop = fit_request(req, ModelCapabilities(max_stop_sequences=0))
    assert no_stop.request.stop_sequences == ()
    assert no_stop.dropped == ("stop_sequences",)


@given(
    st.none() | st.floats(0, 2),
    st.lists(st.text(max_size=3), max_size=6),
    st.booleans(),
    st.none() | st.integers(0, 5),
)
def test_fit_keeps_everything_the_model_accepts(
    temperature: float | None, stops: list[str], accepts_temperature: bool, limit: int | None
) -> None:
    """A fitted request differs from the original only in the parameters it names as dropped."""
    req = ChatRequest(messages=(Message.user("hi"),), temperature=temperature, stop_sequences=tuple(stops))
    fitted = fit_request(req, ModelCapabilities(temperature=accepts_temperature, max_stop_sequences=limit))
    assert ("temperature" in fitted.dropped) == (temperature is not None and not accepts_temperature)
    assert any(d.startswith("stop_sequences") for d in fitted.dropped) == (limit is not None and len(stops) > limit)


def test_kind_defaults_for_ids_the_table_does_not_know() -> None:
    """OpenAI itself: max_completion_tokens; OpenAI-compatible servers and Local: everything accepted."""
    assert kind_default(OA, "x").max_tokens_field == "max_completion_tokens"
    assert kind_default(OR, "x") == ModelCapabilities()
    assert CapabilityTable().lookup(OA, "o1").system_role == "developer"
