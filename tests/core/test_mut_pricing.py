"""Exact money, value by value: parsing USD, the pricing TOML's errors and defaults, cost, format and worst case."""

from __future__ import annotations

import re
from contextlib import AbstractContextManager
from dataclasses import replace
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from routeproof.core.pricing import (
    FREE,
    Price,
    PricingTable,
    cost_pico_usd,
    format_usd,
    load_pricing,
    parse_usd,
    price_well_formed,
    worst_case_cost_pico_usd,
    worst_case_prompt_tokens,
)
from routeproof.core.types import (
    ChatRequest,
    Message,
    ProviderKind,
    Role,
    ToolDefinition,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
)
from routeproof.errors import ConfigError


def _price(i: int, o: int, r: int, w: int) -> Price:
    return Price(
        input_micro_usd_per_mtok=i,
        output_micro_usd_per_mtok=o,
        cache_read_micro_usd_per_mtok=r,
        cache_write_micro_usd_per_mtok=w,
    )


def _raises(message: str) -> AbstractContextManager[Any]:
    return pytest.raises(ConfigError, match=f"^{re.escape(message)}")


@pytest.mark.parametrize(
    ("value", "pico"),
    [("0.01", 10**10), (Decimal("1.5"), 15 * 10**11), (2, 2 * 10**12), ("1e-12", 1), ("-0", 0), (0, 0)],
)
def test_parse_usd_is_exact(value: object, pico: int) -> None:
    """Decimal text, Decimal and int amounts become exact pico-USD."""
    assert parse_usd(value) == pico


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (True, "amount: expected a number, got True"),
        (1.5, "amount: expected a number, got 1.5"),
        ("abc", "amount: not a number: 'abc'"),
        ("NaN", "amount: not finite: 'NaN'"),
        ("Infinity", "amount: not finite: 'Infinity'"),
        ("-1", "amount: negative: '-1'"),
        ("1e-13", "amount: '1e-13' is not an exact multiple of 1E-12 USD"),
    ],
)
def test_parse_usd_refuses_with_the_value_shown(value: object, message: str) -> None:
    """Each kind of bad amount is a ConfigError saying what was wrong and showing the value."""
    with _raises(message):
        parse_usd(value)


def test_parse_usd_names_what_it_parses() -> None:
    """The what= label starts the error message."""
    with _raises("budget: negative: '-2'"):
        parse_usd("-2", what="budget")


def _table(body: str) -> str:
    return f'[openai."m"]\n{body}\n'


_WHERE = "pricing: model 'm' of provider 'openai'"


@pytest.mark.parametrize(
    ("toml_text", "message"),
    [
        ("[nope]\n", "pricing: unknown provider 'nope'; expected one of "),
        ("openai = 5\n", "pricing: [openai] must be a table of models, got 5"),
        ("[openai]\nm = 5\n", f"{_WHERE}: must be a table of prices, got 5"),
        (
            _table("input_per_mtok = 1\noutput_per_mtok = 1\nfoo = 1"),
            f"{_WHERE}: unknown keys ['foo']; expected ['input_per_mtok', 'output_per_mtok', "
            "'cache_read_per_mtok', 'cache_write_per_mtok', 'cache_write_1h_per_mtok', 'image_input_per_mtok', "
            "'document_input_per_mtok']",
        ),
        (_table("input_per_mtok = 1"), f"{_WHERE}: missing price(s) ['output_per_mtok']"),
        (_table("output_per_mtok = 1"), f"{_WHERE}: missing price(s) ['input_per_mtok']"),
        (
            _table("input_per_mtok = 0.0000001\noutput_per_mtok = 1"),
            f"{_WHERE}: input_per_mtok: Decimal('1E-7') is not an exact multiple of 0.000001 USD",
        ),
        (_table('input_per_mtok = "3"\noutput_per_mtok = 1'), f"{_WHERE}: input_per_mtok: expected a number, got '3'"),
        (_table("input_per_mtok = 1\noutput_per_mtok = -1"), f"{_WHERE}: output_per_mtok: negative: -1"),
        ("[openai\n", "pricing TOML does not parse: "),
    ],
)
def test_pricing_errors_name_the_model_and_the_problem(toml_text: str, message: str) -> None:
    """Each invalid pricing table is a ConfigError naming the provider/model and the bad key or value."""
    with _raises(message):
        load_pricing(toml_text)


def test_prices_are_micro_usd_per_mtok_with_default_cache_prices() -> None:
    """Absent cache prices: read costs the input price, write 1.25x input rounded up to the micro-USD."""
    table = load_pricing(
        '[openai."a"]\ninput_per_mtok = 3\noutput_per_mtok = 15\n'
        '[openai."b"]\ninput_per_mtok = 0.000003\noutput_per_mtok = 0.000001\n'
        '[anthropic."c"]\ninput_per_mtok = 1\noutput_per_mtok = 2\n'
        "cache_read_per_mtok = 0.1\ncache_write_per_mtok = 0.5\n"
    )
    assert table.get(ProviderKind.OPENAI, "a") == _price(3_000_000, 15_000_000, 3_000_000, 3_750_000)
    assert table.get(ProviderKind.OPENAI, "b") == _price(3, 1, 3, 4)
    anthropic_c = table.get(ProviderKind.ANTHROPIC, "c")
    assert anthropic_c is not None
    assert replace(anthropic_c, cache_write_1h_micro_usd_per_mtok=None) == _price(
        1_000_000, 2_000_000, 100_000, 500_000
    )
    assert anthropic_c.cache_write_1h_rate == 2_000_000  # an Anthropic model's 1-hour write: 2 x input
    assert table.get(ProviderKind.ANTHROPIC, "a") is None


def test_price_lookup_is_free_only_for_an_unpriced_local_model() -> None:
    """An unpriced Local model is free; a priced Local model keeps its price; other unpriced models fail."""
    priced = _price(1, 2, 3, 4)
    table = PricingTable(prices={(ProviderKind.LOCAL, "paid"): priced})
    assert table.price_of_call(ProviderKind.LOCAL, "x") == FREE == _price(0, 0, 0, 0)
    assert table.price_of_call(ProviderKind.LOCAL, "paid") is priced
    with _raises("no price for model 'x' of provider 'openai' in the pricing table"):
        table.price_of_call(ProviderKind.OPENAI, "x")
    assert table.price_for(ProviderKind.LOCAL, "paid") is priced


def test_the_table_is_a_read_only_copy() -> None:
    """A PricingTable does not follow later changes to the dict it was built from, and cannot be changed."""
    source = {(ProviderKind.LOCAL, "m"): FREE}
    table = PricingTable(prices=source)
    source.clear()
    assert table.get(ProviderKind.LOCAL, "m") == FREE
    with pytest.raises(TypeError):
        table.prices[(ProviderKind.LOCAL, "n")] = FREE  # type: ignore[index]


def test_price_well_formed_needs_non_negative_plain_ints() -> None:
    """A negative rate or a bool rate in any position is not a well-formed price."""
    assert price_well_formed(_price(0, 0, 0, 0))
    for position in range(4):
        rates = [1, 1, 1, 1]
        rates[position] = -1
        assert not price_well_formed(_price(*rates))
        rates[position] = True
        assert not price_well_formed(_price(*rates))


def test_max_prompt_rate_is_the_dearest_of_input_read_and_write() -> None:
    """max_prompt_rate picks whichever of input, cache read and cache write is largest (never output)."""
    assert _price(5, 99, 1, 2).max_prompt_rate == 5
    assert _price(1, 99, 5, 2).max_prompt_rate == 5
    assert _price(1, 99, 2, 5).max_prompt_rate == 5


def test_cost_charges_each_token_kind_at_its_rate() -> None:
    """cost = prompt*input + completion*output + cache read*read + cache write*write, in pico-USD."""
    usage = Usage(prompt_tokens=1, completion_tokens=2, cached_input_tokens=3, cache_creation_tokens=4)
    assert cost_pico_usd(_price(10, 20, 30, 40), usage) == 10 + 40 + 90 + 160


@pytest.mark.parametrize(
    ("pico", "text"),
    [
        (0, "$0.00"),
        (10**10, "$0.01"),
        (3 * 10**6, "$0.000003"),
        (1, "$0.000000000001"),
        (-15 * 10**11, "-$1.50"),
        (125 * 10**11, "$12.50"),
        (7 * 10**12, "$7.00"),
    ],
)
def test_format_usd_is_exact(pico: int, text: str) -> None:
    """format_usd shows every significant digit, at least two decimals, and a leading '-' for a debit."""
    assert format_usd(pico) == text


def test_worst_case_prompt_tokens_counts_every_part() -> None:
    """System, tools, each message, each block and JSON at its longest re-serialisation add up exactly."""
    req = ChatRequest(
        messages=(
            Message.user("héllo"),
            Message(role=Role.ASSISTANT, content=(ToolUseBlock(id="t1", name="f", input_json='{"x":1}'),)),
            Message(role=Role.USER, content=(ToolResultBlock(tool_use_id="t1", content="a,b"),)),
        ),
        system="sys",
        tools=(ToolDefinition(name="f", description="dd", input_schema_json='{"a":"é"}'),),
    )
    request, system, tool_prompt = 64, 16 + 3, 1024
    tool = 32 + 1 + 2 + (1 + 1 + 1 + 1 + 2 + 1 + 12 + 1 + 1)
    text_message = 16 + 16 + 6
    tool_use = 16 + 16 + 2 + 1 + (1 + 1 + 1 + 1 + 2 + 1 + 1)
    tool_result = 16 + 16 + 2 + (1 + 2 + 1)
    assert (
        worst_case_prompt_tokens(req) == request + system + tool_prompt + tool + text_message + tool_use + tool_result
    )


def test_an_empty_system_prompt_still_costs_its_message_overhead() -> None:
    """system='' counts a message overhead; no system counts nothing."""
    bare = ChatRequest(messages=(Message.user("abc"),))
    assert worst_case_prompt_tokens(bare) == 64 + 16 + 16 + 3
    assert worst_case_prompt_tokens(ChatRequest(messages=(Message.user("abc"),), system="")) == 64 + 16 + 16 + 16 + 3


def test_worst_case_cost_is_the_prompt_bound_at_the_dearest_rate_plus_max_tokens_at_output() -> None:
    """worst case = worst_case_prompt_tokens * max prompt rate + max_tokens * output rate."""
    req = ChatRequest(messages=(Message.user("abc"),), max_tokens=10)
    assert worst_case_cost_pico_usd(_price(3, 15, 1, 4), req) == 99 * 4 + 10 * 15


def test_json_is_bounded_per_character_by_its_longest_re_serialisation() -> None:
    """In JSON text, DEL and ASCII count 1, ',' and ':' count 2, and any non-ASCII character (from U+0080) 12."""
    base = worst_case_prompt_tokens(ChatRequest(messages=(Message.user("abc"),)))
    for schema, extra in (('"\x7f"', 3), ('"\x80"', 14), ('"X"', 3), ('",:"', 6)):
        req = ChatRequest(messages=(Message.user("abc"),), tools=(ToolDefinition(name="", input_schema_json=schema),))
        assert worst_case_prompt_tokens(req) == base + 1024 + 32 + extra, schema


@given(st.text(st.sampled_from(["a", ",", ":", "\x7f", "\x80", "é", "\u4e00", "\U0001f600", "\ud800", '"'])))
def test_the_counts_are_their_per_character_definitions(text: str) -> None:
    """The JSON bound is 12 per non-ASCII character, 2 per ',' or ':', 1 per other; a text's UTF-8 size is
    its encoded length (a lone surrogate, which UTF-8 cannot encode, is refused as the encoder refuses it)."""
    from routeproof.core.pricing import _json_bytes_bound, _utf8

    assert _json_bytes_bound(text) == sum(12 if ord(ch) > 0x7F else 2 if ch in ",:" else 1 for ch in text)
    try:
        expected = len(text.encode("utf-8"))
    except UnicodeEncodeError:
        with pytest.raises(UnicodeEncodeError):
            _utf8(text)
    else:
        assert _utf8(text) == expected
