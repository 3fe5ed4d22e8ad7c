"""Model capabilities: the defaults per kind, the model id after the last '/', fitting, and every load error's text."""

from __future__ import annotations

import re

import pytest

from routeproof.core.capabilities import (
    ANTHROPIC_API_VERSION,
    MEMO_MAX,
    CapabilityTable,
    ModelCapabilities,
    fit_request,
    kind_default,
    load_capabilities,
)
from routeproof.core.formats.translate_common import WireExtras
from routeproof.core.types import ChatRequest, Message, ProviderKind
from routeproof.errors import ConfigError

_REQ = ChatRequest(messages=(Message.user("hi"),))


def _row(body: str, provider: str = "openai", match: str = "^x") -> str:
    return f'[[models]]\nprovider = "{provider}"\nmatch = "{match}"\n{body}\n'


def _fails(toml_text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=f"^{re.escape(message)}$"):
        load_capabilities(toml_text)


def test_model_capabilities_validation_messages_show_the_bad_value() -> None:
    """Each invalid ModelCapabilities field is a ValueError naming the field and showing the value."""
    with pytest.raises(
        ValueError, match=re.escape("max_tokens_field must be one of ('max_tokens', 'max_completion_tokens'), got 'n'")
    ):
        ModelCapabilities(max_tokens_field="n")
    with pytest.raises(ValueError, match=re.escape("system_role must be one of ('system', 'developer'), got 'user'")):
        ModelCapabilities(system_role="user")
    with pytest.raises(ValueError, match=re.escape("max_stop_sequences must be >= 0 or None, got -1")):
        ModelCapabilities(max_stop_sequences=-1)
    with pytest.raises(ValueError, match=re.escape("context_window_tokens must be >= 0 or None, got -2")):
        ModelCapabilities(context_window_tokens=-2)
    assert ModelCapabilities(max_stop_sequences=0, context_window_tokens=0).max_stop_sequences == 0


def test_openai_reasoning_models_take_no_sampling_parameters() -> None:
    """An o-series id on OpenAI: max_completion_tokens, developer role, no temperature, no top_p, 4 stops."""
    assert kind_default(ProviderKind.OPENAI, "o3-mini") == ModelCapabilities(
        max_tokens_field="max_completion_tokens",
        system_role="developer",
        temperature=False,
        top_p=False,
        max_stop_sequences=4,
    )


def test_anthropic_models_default_to_the_ga_api_version() -> None:
    """An Anthropic model the table does not know gets the GA anthropic-version."""
    assert kind_default(ProviderKind.ANTHROPIC, "claude-x").api_version == ANTHROPIC_API_VERSION == "2023-06-01"


def test_rows_match_the_model_id_after_its_last_slash() -> None:
    """A row's match is searched in the id after the last '/', whatever comes before it."""
    table = load_capabilities(_row("context_window_tokens = 7", provider="openrouter", match="^o3"))
    assert table.lookup(ProviderKind.OPENROUTER, "openai/o3-mini").context_window_tokens == 7
    assert table.lookup(ProviderKind.OPENROUTER, "a/b/o3").context_window_tokens == 7
    assert table.lookup(ProviderKind.OPENROUTER, "o3/gpt").context_window_tokens is None


def test_fit_drops_top_p_only_when_it_was_set() -> None:
    """A model without top_p drops it only if the wire extras carry one."""
    caps = ModelCapabilities(top_p=False)
    assert fit_request(_REQ, caps, WireExtras()).dropped == ()
    fitted = fit_request(_REQ, caps, WireExtras(top_p=0.5))
    assert fitted.dropped == ("top_p",)
    assert fitted.extras.top_p is None


def test_an_untouched_request_is_passed_through_uncopied() -> None:
    """When nothing in the request is dropped, the very same request object is returned."""
    assert fit_request(_REQ, ModelCapabilities()).request is _REQ


def test_valid_row_values_load() -> None:
    """Every capability field loads with a valid value, 0 included for the counts."""
    table = load_capabilities(
        _row(
            'system_role = "developer"\nmax_tokens_field = "max_tokens"\ntemperature = false\ntop_p = true\n'
            'max_stop_sequences = 0\ncontext_window_tokens = 0\napi_version = "2024-01-01"'
        )
    )
    caps = table.lookup(ProviderKind.OPENAI, "x1")
    assert (caps.system_role, caps.max_tokens_field, caps.temperature, caps.top_p) == (
        "developer",
        "max_tokens",
        False,
        True,
    )
    assert (caps.max_stop_sequences, caps.context_window_tokens, caps.api_version) == (0, 0, "2024-01-01")


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('system_role = "user"', "models[0]: system_role must be one of ('system', 'developer'), got 'user'"),
        ("temperature = 1", "models[0]: temperature must be true or false, got 1"),
        ('top_p = "no"', "models[0]: top_p must be true or false, got 'no'"),
        ("max_stop_sequences = -1", "models[0]: max_stop_sequences must be a non-negative integer, got -1"),
        ("context_window_tokens = true", "models[0]: context_window_tokens must be a non-negative integer, got True"),
        ('context_window_tokens = "8k"', "models[0]: context_window_tokens must be a non-negative integer, got '8k'"),
        ("context_window_tokens = -1", "models[0]: context_window_tokens must be a non-negative integer, got -1"),
        ("api_version = 5", "models[0]: api_version must be a string, got 5"),
    ],
)
def test_a_bad_row_value_names_the_row_field_and_value(body: str, message: str) -> None:
    """Each invalid capability value in a row is a ConfigError naming the row, the field and the value."""
    _fails(_row(body), message)


def test_row_errors_name_the_row_index() -> None:
    """The second row's error says models[1]."""
    _fails(_row("") + _row("api_version = 1"), "models[1]: api_version must be a string, got 1")


def test_row_shape_errors_show_the_offending_value() -> None:
    """A non-table row, an unknown provider and a non-string match each show what was given."""
    _fails("models = [5]", "models[0] must be a table, got 5")
    _fails(
        _row("", provider="nope"),
        "models[0]: provider must be one of " + str(sorted(p.value for p in ProviderKind)) + ", got 'nope'",
    )
    _fails('[[models]]\nprovider = "openai"\nmatch = 3\n', "models[0]: match must be a regex string, got 3")


def test_source_and_checked_are_kept_as_text_or_empty() -> None:
    """A row keeps its source and checked strings; absent they are empty."""
    table = load_capabilities(_row('source = "https://example"\nchecked = "2026-11-30"') + _row(""))
    assert [(r.source, r.checked) for r in table.rows] == [("https://example", "2026-11-30"), ("", "")]


def test_an_empty_document_is_an_empty_table() -> None:
    """A TOML text with no models is a table without rows."""
    assert load_capabilities("").rows == ()


def test_models_that_is_not_an_array_is_rejected() -> None:
    """models = 5 is a ConfigError showing the value."""
    _fails("models = 5", "model capabilities: models must be an array of tables, got 5")


def test_fit_drops_a_top_p_set_on_the_request_itself() -> None:
    """A model without top_p drops the request's own top_p (not only the wire extras') and names it once."""
    fitted = fit_request(ChatRequest(messages=(Message.user("hi"),), top_p=0.5), ModelCapabilities(top_p=False))
    assert fitted.request.top_p is None
    assert fitted.extras.top_p is None
    assert fitted.dropped == ("top_p",)


def test_a_lookup_is_worked_out_once_per_table_and_the_memo_is_bounded() -> None:
    """The same (kind, model) gives the same value from the memo; the memo is not part of the table's
    value (equality, repr); past MEMO_MAX models a lookup is still answered, just not remembered."""
    table = load_capabilities(_row("context_window_tokens = 7", match="^m"))
    first = table.lookup(ProviderKind.OPENAI, "m-1")
    assert table.lookup(ProviderKind.OPENAI, "m-1") is first
    assert first.context_window_tokens == 7
    assert table.lookup(ProviderKind.ANTHROPIC, "m-1").context_window_tokens is None  # another kind, another key
    assert table == load_capabilities(_row("context_window_tokens = 7", match="^m"))
    assert "_memo" not in repr(table)
    for n in range(MEMO_MAX + 3):
        assert table.lookup(ProviderKind.OPENAI, f"m{n}").context_window_tokens == 7
    assert len(table._memo) == MEMO_MAX
    assert CapabilityTable(rows=table.rows).extended(CapabilityTable())._memo == {}
