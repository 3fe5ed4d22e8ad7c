"""Prices as the providers bill: reasoning, cache read, cache write at both TTLs, image and document
input, line by line — with genai-prices (H0-COST's independent calculator) as the oracle."""

from __future__ import annotations

from datetime import UTC, datetime
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from routeproof.core.errors import ConfigError
from routeproof.core.pricing import COST_ITEMS, PICO_USD_PER_USD, cost_lines, cost_pico_usd, load_pricing
from routeproof.core.types import ProviderKind, Usage

genai_prices = pytest.importorskip("genai_prices", reason="genai-prices, the oracle: the falsify extra")

ROOT = Path(__file__).resolve().parents[2]
TABLE = load_pricing((ROOT / "config" / "pricing.toml").read_text(encoding="utf-8"))
GENAI_PROVIDER = {"anthropic": "anthropic", "openai": "openai", "openrouter": "openrouter", "bedrock": "aws"}
AT = datetime(2026, 11, 30, 12, tzinfo=UTC)  # the H0-COST fixtures' time (OpenRouter re-priced on 2026-11-03)
PRICED = sorted((kind, model) for kind, model in TABLE.prices if kind.value in GENAI_PROVIDER)
"""Every model of config/pricing.toml with a published price (self-hosted ones have none)."""


@st.composite
def usages(draw: st.DrawFn) -> Usage:
    """Any usage a provider can report: every part within its whole."""
    count = st.integers(min_value=0, max_value=2_000_000)
    prompt, completion, cached, written = draw(count), draw(count), draw(count), draw(count)
    image = draw(st.integers(min_value=0, max_value=prompt))
    return Usage(
        prompt_tokens=prompt,
        completion_tokens=completion,
        cached_input_tokens=cached,
        cache_creation_tokens=written,
        reasoning_tokens=draw(st.integers(min_value=0, max_value=completion)),
        cache_creation_1h_tokens=draw(st.integers(min_value=0, max_value=written)),
        image_input_tokens=image,
        document_input_tokens=draw(st.integers(min_value=0, max_value=prompt - image)),
    )


def oracle_usd(kind: ProviderKind, model: str, usage: Usage) -> Fraction:
    """genai-prices' price of the same usage, in its own terms (input includes the cache traffic)."""
    theirs = genai_prices.types.Usage(
        input_tokens=usage.prompt_tokens + usage.cached_input_tokens + usage.cache_creation_tokens,
        output_tokens=usage.completion_tokens,
        cache_read_tokens=usage.cached_input_tokens,
        cache_write_tokens=usage.cache_creation_tokens,
        cache_write_1h_tokens=usage.cache_creation_1h_tokens,
        output_reasoning_tokens=usage.reasoning_tokens,
        input_image_tokens=usage.image_input_tokens,
    )
    priced = genai_prices.calc_price(theirs, model, provider_id=GENAI_PROVIDER[kind.value], genai_request_timestamp=AT)
    return Fraction(priced.total_price)


def test_every_published_model_is_checked() -> None:
    """The oracle covers all 9 priced models with a published price (none silently left out)."""
    assert len(PRICED) == 9


@pytest.mark.parametrize(("kind", "model"), PRICED, ids=[f"{k.value}/{m}" for k, m in PRICED])
@settings(max_examples=60, deadline=None)
@given(usage=usages())
def test_cost_equals_the_independent_calculator_exactly(kind: ProviderKind, model: str, usage: Usage) -> None:
    """For every priced model and any usage, routeproof's pico-USD cost equals genai-prices' USD exactly."""
    ours = Fraction(cost_pico_usd(TABLE.price_for(kind, model), usage), PICO_USD_PER_USD)
    assert ours == oracle_usd(kind, model, usage), (kind, model, usage)


@given(usage=usages())
def test_the_bill_puts_every_token_on_one_line_and_sums_to_the_cost(usage: Usage) -> None:
    """cost_lines: the items in order, reasoning apart at the output rate, lines sum to the cost."""
    price = TABLE.price_for(ProviderKind.ANTHROPIC, "claude-sonnet-4-20250514")
    lines = cost_lines(price, usage)
    assert tuple(line.item for line in lines) == COST_ITEMS
    assert sum(line.cost_pico_usd for line in lines) == cost_pico_usd(price, usage)
    by_item = {line.item: line for line in lines}
    assert by_item["reasoning"].tokens == usage.reasoning_tokens
    assert by_item["reasoning"].micro_usd_per_mtok == price.output_micro_usd_per_mtok
    assert by_item["cache write 1h"].micro_usd_per_mtok == 6_000_000


def test_absent_prices_default_so_no_bill_is_undercounted() -> None:
    """Only input/output given: cache write 5m 1.25x, 1h 2x for Anthropic (the 5m rate elsewhere: no
    1-hour TTL), image and document at the input rate."""
    table = load_pricing(
        '[anthropic."m"]\ninput_per_mtok = 3.00\noutput_per_mtok = 15.00\n'
        '[openai."m"]\ninput_per_mtok = 3.00\noutput_per_mtok = 15.00\n'
    )
    price = table.price_for(ProviderKind.ANTHROPIC, "m")
    assert price.cache_write_micro_usd_per_mtok == 3_750_000
    assert price.cache_write_1h_rate == 6_000_000
    assert price.image_input_rate == price.document_input_rate == 3_000_000
    assert price.max_prompt_rate == 6_000_000
    assert table.price_for(ProviderKind.OPENAI, "m").cache_write_1h_rate == 3_750_000


def test_image_and_document_rows_are_priced_apart() -> None:
    """image_input_per_mtok / document_input_per_mtok price those parts of the prompt."""
    table = load_pricing(
        '[openai."m"]\ninput_per_mtok = 1\noutput_per_mtok = 2\nimage_input_per_mtok = 5\ndocument_input_per_mtok = 7\n'
    )
    usage = Usage(prompt_tokens=10, image_input_tokens=3, document_input_tokens=2)
    assert (
        cost_pico_usd(table.price_for(ProviderKind.OPENAI, "m"), usage) == 5 * 1_000_000 + 3 * 5_000_000 + 2 * 7_000_000
    )


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"completion_tokens": 1, "reasoning_tokens": 2}, "reasoning_tokens=2"),
        ({"cache_creation_tokens": 1, "cache_creation_1h_tokens": 2}, "cache_creation_1h_tokens=2"),
        ({"prompt_tokens": 1, "image_input_tokens": 1, "document_input_tokens": 1}, "= 2"),
    ],
)
def test_a_part_larger_than_its_whole_is_refused_naming_it(kwargs: dict[str, Any], named: str) -> None:
    """A usage whose reasoning, 1-hour write or image+document part exceeds its whole is a ValueError."""
    with pytest.raises(ValueError, match=named):
        Usage(**kwargs)


def test_an_unknown_price_key_is_refused_naming_the_keys() -> None:
    """A misspelt 1-hour key fails at load, listing the keys it may be."""
    with pytest.raises(ConfigError, match="cache_write_1h_per_mtok"):
        load_pricing('[openai."m"]\ninput_per_mtok = 1\noutput_per_mtok = 2\ncache_write_1hr_per_mtok = 2\n')


def test_anthropic_usage_reads_the_one_hour_cache_write_apart() -> None:
    """usage.cache_creation.ephemeral_1h_input_tokens becomes cache_creation_1h_tokens (a part of the writes)."""
    from routeproof.core.formats.normalize import normalize_anthropic

    body = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-20250514",
        "content": [{"type": "text", "text": "4"}],
        "stop_reason": "end_turn",
        "usage": {
            "input_tokens": 10,
            "output_tokens": 5,
            "cache_creation_input_tokens": 300,
            "cache_creation": {"ephemeral_5m_input_tokens": 100, "ephemeral_1h_input_tokens": 200},
        },
    }
    usage = normalize_anthropic(body).usage
    assert (usage.cache_creation_tokens, usage.cache_creation_1h_tokens) == (300, 200)
    price = TABLE.price_for(ProviderKind.ANTHROPIC, "claude-sonnet-4-20250514")
    assert cost_pico_usd(price, usage) == 10 * 3_000_000 + 5 * 15_000_000 + 100 * 3_750_000 + 200 * 6_000_000
