"""Pricing: exact TOML loading, cost of a usage, the worst case of a request, money formatting."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import icontract
import pytest
from hypothesis import given
from hypothesis import strategies as st

from routeproof.core.ledger import (
    PICO_USD_PER_USD,
    Price,
    PricingTable,
    cost,
    cost_pico_usd,
    format_usd,
    load_pricing,
    parse_usd,
    worst_case_cost_pico_usd,
    worst_case_prompt_tokens,
)
from routeproof.core.types import (
    ChatRequest,
    Message,
    ProviderKind,
    Role,
    TextBlock,
    ToolDefinition,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
)
from routeproof.errors import ConfigError

PRICING_TOML = Path(__file__).resolve().parents[2] / "config" / "pricing.toml"

SEED_TOML = """
[anthropic."claude-sonnet-4-20250514"]
input_per_mtok = 3.00
output_per_mtok = 15.00
cache_read_per_mtok = 0.30
cache_write_per_mtok = 3.75
[openai."gpt-4o"]
input_per_mtok = 2.50
output_per_mtok = 10.00
cache_read_per_mtok = 1.25
cache_write_per_mtok = 2.50
"""

SONNET = Price(
    input_micro_usd_per_mtok=3_000_000,
    output_micro_usd_per_mtok=15_000_000,
    cache_read_micro_usd_per_mtok=300_000,
    cache_write_micro_usd_per_mtok=3_750_000,
    cache_write_1h_micro_usd_per_mtok=6_000_000,  # Anthropic's 1-hour write: 2 x input (given, or the default)
)

usages = st.builds(
    Usage,
    prompt_tokens=st.integers(0, 2_000_000),
    completion_tokens=st.integers(0, 200_000),
    cached_input_tokens=st.integers(0, 2_000_000),
    cache_creation_tokens=st.integers(0, 2_000_000),
)
prices = st.builds(
    Price,
    input_micro_usd_per_mtok=st.integers(0, 10**9),
    output_micro_usd_per_mtok=st.integers(0, 10**9),
    cache_read_micro_usd_per_mtok=st.integers(0, 10**9),
    cache_write_micro_usd_per_mtok=st.integers(0, 10**9),
)


def test_seed_prices_load_exactly() -> None:
    """The seed's 3.00/15.00/0.30 (+3.75) and 2.50/10.00/1.25 load as exact integers."""
    table = load_pricing(SEED_TOML)
    assert table.price_for(ProviderKind.ANTHROPIC, "claude-sonnet-4-20250514") == SONNET
    gpt = table.price_for(ProviderKind.OPENAI, "gpt-4o")
    assert (gpt.input_micro_usd_per_mtok, gpt.output_micro_usd_per_mtok) == (2_500_000, 10_000_000)
    assert gpt.cache_read_micro_usd_per_mtok == 1_250_000


def test_sample_config_loads() -> None:
    """config/pricing.toml loads and holds the seed's two models."""
    table = load_pricing(PRICING_TOML.read_text(encoding="utf-8"))
    assert table.price_for(ProviderKind.ANTHROPIC, "claude-sonnet-4-20250514") == SONNET
    assert table.get(ProviderKind.OPENAI, "gpt-4o") is not None
    assert len(table.prices) >= 5


def test_float_that_binary_cannot_hold_is_read_exactly() -> None:
    """0.1 + 0.2-style prices come from the text, not a binary float: 0.000003 is 3 micro-USD."""
    table = load_pricing(
        '[openai."m"]\ninput_per_mtok = 0.1\noutput_per_mtok = 0.2\n'
        "cache_read_per_mtok = 0.000003\ncache_write_per_mtok = 1e-6\n"
    )
    price = table.price_for(ProviderKind.OPENAI, "m")
    assert price.input_micro_usd_per_mtok + price.output_micro_usd_per_mtok == 300_000
    assert price.cache_read_micro_usd_per_mtok == 3
    assert price.cache_write_micro_usd_per_mtok == 1


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ("input_per_mtok = -1\noutput_per_mtok = 1\ncache_read_per_mtok = 1\ncache_write_per_mtok = 1", "negative"),
        ("input_per_mtok = 1\ncache_read_per_mtok = 1\ncache_write_per_mtok = 1", "missing"),
        ("output_per_mtok = 1\ncache_read_per_mtok = 1\ncache_write_per_mtok = 1", "input_per_mtok"),
        ("input_per_mtok = 0.0000001\noutput_per_mtok = 1\ncache_read_per_mtok = 1\ncache_write_per_mtok = 1", "exact"),
        ("input_per_mtok = inf\noutput_per_mtok = 1\ncache_read_per_mtok = 1\ncache_write_per_mtok = 1", "finite"),
        ("input_per_mtok = nan\noutput_per_mtok = 1\ncache_read_per_mtok = 1\ncache_write_per_mtok = 1", "finite"),
        ('input_per_mtok = "3"\noutput_per_mtok = 1\ncache_read_per_mtok = 1\ncache_write_per_mtok = 1', "3"),
        ("input_per_mtok = true\noutput_per_mtok = 1\ncache_read_per_mtok = 1\ncache_write_per_mtok = 1", "True"),
        (
            "input_per_mtok = 1\noutput_per_mtok = 1\ncache_read_per_mtok = 1\ncache_write_per_mtok = 1\nx = 1",
            "unknown",
        ),
    ],
)
def test_bad_price_is_config_error_naming_model(body: str, needle: str) -> None:
    """A negative, missing, too-fine, non-finite, non-numeric or unknown price names the model."""
    with pytest.raises(ConfigError, match="claude-x") as info:
        load_pricing(f'[anthropic."claude-x"]\n{body}\n')
    assert needle in str(info.value)


def test_unknown_provider_and_bad_toml_are_config_errors() -> None:
    """An unknown provider section or unparsable TOML is a ConfigError."""
    with pytest.raises(ConfigError, match="acme"):
        load_pricing('[acme."m"]\ninput_per_mtok = 1\n')
    with pytest.raises(ConfigError, match="parse"):
        load_pricing("[[[")
    with pytest.raises(ConfigError, match="no price"):
        PricingTable(prices={}).price_for(ProviderKind.OPENAI, "gpt-4o")


def test_cost_example_includes_cache_tokens() -> None:
    """1M input + 1M output + 1M cache read + 1M cache write on Sonnet costs 3+15+0.30+3.75 USD."""
    usage = Usage(prompt_tokens=10**6, completion_tokens=10**6, cached_input_tokens=10**6, cache_creation_tokens=10**6)
    assert cost(SONNET, usage) == 22_050_000 * 10**6
    assert format_usd(cost_pico_usd(SONNET, usage)) == "$22.05"


def test_cost_one_token_is_exact() -> None:
    """One output token on Sonnet is exactly 15 micro-USD = 15e6 pico-USD."""
    assert cost_pico_usd(SONNET, Usage(completion_tokens=1)) == 15_000_000


def test_cost_rejects_malformed_price() -> None:
    """A negative rate violates cost's precondition."""
    bad = Price(
        input_micro_usd_per_mtok=-1,
        output_micro_usd_per_mtok=0,
        cache_read_micro_usd_per_mtok=0,
        cache_write_micro_usd_per_mtok=0,
    )
    with pytest.raises(icontract.ViolationError):
        cost_pico_usd(bad, Usage(prompt_tokens=1))


@given(prices, usages)
def test_cost_equals_decimal_computation(price: Price, usage: Usage) -> None:
    """cost() equals the cost_budget equation evaluated in Decimal (USD per Mtok / 1e6), exactly."""
    rates_usd = [
        Decimal(r) / 10**6
        for r in (
            price.input_micro_usd_per_mtok,
            price.output_micro_usd_per_mtok,
            price.cache_read_micro_usd_per_mtok,
            price.cache_write_micro_usd_per_mtok,
        )
    ]
    tokens = (usage.prompt_tokens, usage.completion_tokens, usage.cached_input_tokens, usage.cache_creation_tokens)
    truth_usd = sum((Decimal(t) * r for t, r in zip(tokens, rates_usd, strict=True)), Decimal(0)) / Decimal(10**6)
    assert Decimal(cost_pico_usd(price, usage)) / PICO_USD_PER_USD == truth_usd
    assert isinstance(cost_pico_usd(price, usage), int)


@given(st.integers(-(10**18), 10**18))
def test_format_usd_round_trips(pico: int) -> None:
    """format_usd is exact: parsing its digits gives the amount back."""
    text = format_usd(pico)
    sign = -1 if text.startswith("-") else 1
    assert sign * parse_usd(text.lstrip("-").lstrip("$")) == pico


def test_format_usd_examples() -> None:
    """Readable, exact renderings."""
    assert format_usd(0) == "$0.00"
    assert format_usd(10**10) == "$0.01"
    assert format_usd(3 * 10**6) == "$0.000003"
    assert format_usd(-15 * 10**11) == "-$1.50"


def test_parse_usd_refuses_float_and_too_fine() -> None:
    """parse_usd takes exact decimal text, never a float, and nothing finer than a pico-USD."""
    assert parse_usd("0.01") == 10**10
    with pytest.raises(ConfigError):
        parse_usd(0.01)
    with pytest.raises(ConfigError):
        parse_usd("0.0000000000001")


texts = st.text(max_size=60)
blocks = st.one_of(
    st.builds(TextBlock, text=texts),
    st.builds(ToolUseBlock, id=st.text(max_size=10), name=st.text(max_size=10), input_json=texts),
    st.builds(ToolResultBlock, tool_use_id=st.text(max_size=10), content=texts),
)
requests = st.builds(
    ChatRequest,
    messages=st.lists(
        st.builds(Message, role=st.sampled_from(Role), content=st.lists(blocks, min_size=1, max_size=3).map(tuple)),
        min_size=1,
        max_size=4,
    ).map(tuple),
    max_tokens=st.integers(1, 100_000),
    system=st.one_of(st.none(), texts),
    tools=st.lists(
        st.builds(ToolDefinition, name=st.text(max_size=10), description=texts, input_schema_json=texts), max_size=2
    ).map(tuple),
)


@given(requests)
def test_worst_case_prompt_tokens_bounds_bytes(req: ChatRequest) -> None:
    """The bound is at least the UTF-8 bytes of every text the request carries (>= BPE tokens)."""
    all_text = [req.system or ""]
    all_text += [t.name + t.description + t.input_schema_json for t in req.tools]
    for m in req.messages:
        for b in m.content:
            if isinstance(b, TextBlock):
                all_text.append(b.text)
            elif isinstance(b, ToolUseBlock):
                all_text.append(b.id + b.name + b.input_json)
            elif isinstance(b, ToolResultBlock):
                all_text.append(b.tool_use_id + b.content)
    assert worst_case_prompt_tokens(req) >= sum(len(t.encode("utf-8")) for t in all_text)


@given(prices, requests, st.data())
def test_worst_case_cost_bounds_any_usage_within_the_bounds(
    price: Price, req: ChatRequest, data: st.DataObject
) -> None:
    """Any usage whose prompt side fits the token bound and whose completion fits max_tokens costs no more."""
    bound = worst_case_prompt_tokens(req)
    plain = data.draw(st.integers(0, bound))
    cached = data.draw(st.integers(0, bound - plain))
    created = bound - plain - cached
    usage = Usage(
        prompt_tokens=plain,
        completion_tokens=data.draw(st.integers(0, req.max_tokens)),
        cached_input_tokens=cached,
        cache_creation_tokens=created,
    )
    assert cost_pico_usd(price, usage) <= worst_case_cost_pico_usd(price, req)


def test_worst_case_counts_max_tokens() -> None:
    """Raising max_tokens by one raises the worst case by exactly one output token's price."""
    req = ChatRequest(messages=(Message.user("hello"),), max_tokens=100)
    more = ChatRequest(messages=(Message.user("hello"),), max_tokens=101)
    diff = worst_case_cost_pico_usd(SONNET, more) - worst_case_cost_pico_usd(SONNET, req)
    assert diff == SONNET.output_micro_usd_per_mtok


def test_worst_case_prompt_counts_multibyte_text() -> None:
    """Non-ASCII text counts by UTF-8 bytes: 'é' x 10 is 20 bytes, more than 10 characters."""
    short = worst_case_prompt_tokens(ChatRequest(messages=(Message.user(""),)))
    accented = worst_case_prompt_tokens(ChatRequest(messages=(Message.user("é" * 10),)))
    assert accented - short == 20


def test_price_of_call_makes_only_the_local_model_free() -> None:
    """An unpriced Local call costs nothing; any other unpriced model is a ConfigError naming it."""
    from routeproof.core.pricing import FREE, PricingTable

    table = PricingTable(prices={})
    assert table.price_of_call(ProviderKind.LOCAL, "llama") == FREE
    with pytest.raises(ConfigError, match="gpt-x"):
        table.price_of_call(ProviderKind.OPENAI, "gpt-x")


SEED_PRICING = """
[anthropic."claude-sonnet-4-20250514"]
input_per_mtok = 3.00
output_per_mtok = 15.00
cache_read_per_mtok = 0.30
[openai."gpt-4o"]
input_per_mtok = 2.50
output_per_mtok = 10.00
"""


def test_seed_pricing_toml_loads_and_absent_cache_prices_are_never_undercharged() -> None:
    """Seed 003's table (no cache_write, no cache_read for gpt-4o) loads: an absent cache read costs
    the input price, an absent cache write 1.25 x input rounded up to the micro-USD."""
    table = load_pricing(SEED_PRICING)
    sonnet = table.price_for(ProviderKind.ANTHROPIC, "claude-sonnet-4-20250514")
    assert (sonnet.cache_read_micro_usd_per_mtok, sonnet.cache_write_micro_usd_per_mtok) == (300_000, 3_750_000)
    gpt = table.price_for(ProviderKind.OPENAI, "gpt-4o")
    assert (gpt.cache_read_micro_usd_per_mtok, gpt.cache_write_micro_usd_per_mtok) == (2_500_000, 3_125_000)
    odd = load_pricing('[openai."m"]\ninput_per_mtok = 0.000001\noutput_per_mtok = 0\n').price_for(
        ProviderKind.OPENAI, "m"
    )
    assert odd.cache_write_micro_usd_per_mtok == 2  # ceil(1.25): rounded up, never down
