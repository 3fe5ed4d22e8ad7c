"""Service tiers priced from what the provider's answer says it used (issue 26).

OpenAI answers with a top-level ``service_tier`` ("default", "flex", "priority", ...). A model may list
per-tier prices in the pricing table (``[openai."gpt-4o".service_tier.priority]``); an answer served
on such a tier is billed there, any other tier at the standard price, and the reservation made before
the answer bounds the dearest tier. genai-prices (H0-COST's oracle) is the reference for every tier of
every priced model. Anthropic publishes no per-token Priority Tier price: none is modelled.
"""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from routeproof.core.errors import ConfigError
from routeproof.core.formats.normalize import normalize_anthropic, normalize_openai
from routeproof.core.formats.sse import StreamDecoder, WireProtocol
from routeproof.core.pricing import PICO_USD_PER_USD, cost_pico_usd, load_pricing, worst_case_cost_pico_usd
from routeproof.core.types import ChatRequest, Message, MessageStop, ProviderKind, Usage
from tests.money.test_prices import AT, GENAI_PROVIDER, TABLE, usages

genai_prices = pytest.importorskip("genai_prices", reason="genai-prices, the oracle: the falsify extra")

TIERED = sorted((kind, model) for (kind, model), price in TABLE.prices.items() if price.service_tiers)


def _oracle_usd(kind: ProviderKind, model: str, usage: Usage) -> Fraction:
    theirs = genai_prices.types.Usage(
        input_tokens=usage.prompt_tokens + usage.cached_input_tokens + usage.cache_creation_tokens,
        output_tokens=usage.completion_tokens,
        cache_read_tokens=usage.cached_input_tokens,
        cache_write_tokens=usage.cache_creation_tokens,
    )
    context = None if usage.service_tier is None else {"service_tier": usage.service_tier}
    priced = genai_prices.calc_price(
        theirs, model, provider_id=GENAI_PROVIDER[kind.value], genai_request_timestamp=AT, price_context=context
    )
    return Fraction(priced.total_price)


def test_the_table_prices_openais_priority_tier() -> None:
    """gpt-4o and gpt-4o-mini carry their published priority prices (genai-prices has no flex row for them)."""
    assert TIERED == [(ProviderKind.OPENAI, "gpt-4o"), (ProviderKind.OPENAI, "gpt-4o-mini")]
    priority = TABLE.price_for(ProviderKind.OPENAI, "gpt-4o").for_tier("priority")
    assert (priority.input_micro_usd_per_mtok, priority.output_micro_usd_per_mtok) == (4_250_000, 17_000_000)


@pytest.mark.parametrize(("kind", "model"), TIERED, ids=[m for _, m in TIERED])
@pytest.mark.parametrize("tier", [None, "default", "priority", "flex", "scale"])
@settings(max_examples=30, deadline=None)
@given(usage=usages())
def test_each_tier_costs_what_the_independent_calculator_says(
    kind: ProviderKind, model: str, tier: str | None, usage: Usage
) -> None:
    """Per tier the answer names, routeproof's pico-USD cost equals genai-prices' USD exactly."""
    plain = Usage(
        prompt_tokens=usage.prompt_tokens,
        completion_tokens=usage.completion_tokens,
        cached_input_tokens=usage.cached_input_tokens,
        service_tier=tier,
    )
    ours = Fraction(cost_pico_usd(TABLE.price_for(kind, model), plain), PICO_USD_PER_USD)
    assert ours == _oracle_usd(kind, model, plain)


def test_an_answer_served_on_priority_is_billed_at_priority() -> None:
    """The same usage costs 1.7 x on gpt-4o's priority tier: the answer's service_tier decides."""
    price = TABLE.price_for(ProviderKind.OPENAI, "gpt-4o")
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "gpt-4o",
        "service_tier": "priority",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "4"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1_000, "completion_tokens": 100, "total_tokens": 1_100},
    }
    usage = normalize_openai(body).usage
    assert usage.service_tier == "priority"
    assert cost_pico_usd(price, usage) == 1_000 * 4_250_000 + 100 * 17_000_000
    standard = normalize_openai({**body, "service_tier": "default"}).usage
    assert cost_pico_usd(price, standard) == 1_000 * 2_500_000 + 100 * 10_000_000


def test_a_streamed_answer_carries_its_service_tier() -> None:
    """OpenAI's chunks repeat service_tier; the usage chunk's usage is priced on it."""
    decoder = StreamDecoder(WireProtocol.OPENAI)
    base = '{"id":"c","object":"chat.completion.chunk","model":"gpt-4o","service_tier":"priority",'
    text = (
        f'data: {base}"choices":[{{"index":0,"delta":{{"content":"4"}},"finish_reason":null}}]}}\n\n'
        f'data: {base}"choices":[{{"index":0,"delta":{{}},"finish_reason":"stop"}}]}}\n\n'
        f'data: {base}"choices":[],"usage":{{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12}}}}\n\n'
        "data: [DONE]\n\n"
    )
    events = decoder.feed_text(text)
    stop = events[-1]
    assert isinstance(stop, MessageStop)
    assert stop.usage.service_tier == "priority"


def test_anthropic_usage_keeps_the_tier_it_names() -> None:
    """Anthropic says usage.service_tier; with no tier price listed it is billed at the standard price."""
    body = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-20250514",
        "content": [{"type": "text", "text": "4"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 10, "output_tokens": 2, "service_tier": "priority"},
    }
    usage = normalize_anthropic(body).usage
    assert usage.service_tier == "priority"
    price = TABLE.price_for(ProviderKind.ANTHROPIC, "claude-sonnet-4-20250514")
    assert cost_pico_usd(price, usage) == 10 * 3_000_000 + 2 * 15_000_000


@given(st.integers(1, 4096))
def test_the_reservation_bounds_the_dearest_tier(max_tokens: int) -> None:
    """Before the answer says its tier, the worst case is reserved at the dearest one."""
    price = TABLE.price_for(ProviderKind.OPENAI, "gpt-4o")
    req = ChatRequest(messages=(Message.user("2+2?"),), max_tokens=max_tokens)
    reserved = worst_case_cost_pico_usd(price, req)
    assert reserved == max(worst_case_cost_pico_usd(p, req) for p in (price.for_tier("priority"), price))
    assert reserved > worst_case_cost_pico_usd(
        load_pricing('[openai."gpt-4o"]\ninput_per_mtok = 2.5\noutput_per_mtok = 10\n').price_for(
            ProviderKind.OPENAI, "gpt-4o"
        ),
        req,
    )


def test_a_bad_tier_table_is_refused_naming_it() -> None:
    """A tier table with an unknown key or without its output price fails at load, naming the tier."""
    with pytest.raises(ConfigError, match=r"service_tier\.priority.*missing price"):
        load_pricing(
            '[openai."m"]\ninput_per_mtok = 1\noutput_per_mtok = 2\n'
            '[openai."m".service_tier.priority]\ninput_per_mtok = 2\n'
        )
    with pytest.raises(ConfigError, match=r"service_tier\.flex.*unknown keys"):
        load_pricing(
            '[openai."m"]\ninput_per_mtok = 1\noutput_per_mtok = 2\n'
            '[openai."m".service_tier.flex]\ninput_per_mtok = 1\noutput_per_mtok = 1\nbogus = 1\n'
        )
