"""A stream cut after the provider reported its usage books that usage, not the reserved worst case.

Real sockets: a loopback mock of each dialect streams its documented answer and resets the
connection right after the usage event (Anthropic's ``message_delta``, OpenAI's usage chunk) and
before the terminator (``message_stop``, ``[DONE]``). The provider bills the usage it reported, so
the ledger must hold exactly that (core/stream_rules.py ``settle_stream``, the usage carried by
``StreamError.usage`` from core/formats/sse_dialects.py ``reported_usage``).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import pytest

from routeproof.config import load_config
from routeproof.core.formats.sse import StreamDecoder, WireProtocol
from routeproof.core.pricing import cost_pico_usd, worst_case_cost_pico_usd
from routeproof.core.routing import resolve
from routeproof.core.types import ChatRequest, Message, ProviderKind, StreamError
from routeproof.deadline import deadline_in
from routeproof.factory import router_from_config, tenant_policy
from routeproof.mock import CutMode, MockProviderServer, Scripted, Shape
from routeproof.mock.shapes import RequestView, default_stream
from routeproof.providers._stream import SSE, stream_events
from tests.money.exact_money import ANTHROPIC_MODEL, OPENAI_MODEL, PRICES, PRICING_TEXT, invoice_pico_usd

pytestmark = pytest.mark.asyncio

AGENT = """
pricing = "{pricing}"
[driver.providers.{name}]
base_url = "{url}"
model = "{model}"
[driver.budget]
session_usd = 100.00
"""

CASES = {
    # (shape, provider kind, model, the mock's base-url suffix)
    "anthropic": (Shape.ANTHROPIC, ProviderKind.ANTHROPIC, ANTHROPIC_MODEL, ""),
    "openai": (Shape.OPENAI, ProviderKind.OPENAI, OPENAI_MODEL, "/v1"),
}


def _events_before_terminator(shape: Shape, model: str) -> int:
    """How many items of the documented stream come before its terminator (the usage event is the last)."""
    view = RequestView(model=model, stream=True, tool_name=None, include_usage=shape is Shape.OPENAI)
    return len(default_stream(shape, view)) - 1


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("usage_reached_us", [True, False], ids=["cut_after_usage", "cut_before_usage"])
@pytest.mark.parametrize("cut_mode", [CutMode.RESET, CutMode.CLOSE], ids=["reset", "early_eof"])
async def test_a_stream_cut_after_its_usage_books_the_reported_usage(
    name: str, usage_reached_us: bool, cut_mode: CutMode, tmp_path: Path
) -> None:
    """Cut after the usage event: the ledger holds the usage x price; cut before it: the reserved worst case."""
    shape, kind, model, suffix = CASES[name]
    (tmp_path / "pricing.toml").write_text(PRICING_TEXT, encoding="utf-8")
    async with MockProviderServer(shape) as server:
        agent = tmp_path / "agent.toml"
        text = AGENT.format(pricing=tmp_path / "pricing.toml", name=name, url=server.base_url + suffix, model=model)
        agent.write_text(text, encoding="utf-8")
        config = load_config(agent, environ={"ANTHROPIC_API_KEY": "k", "OPENAI_API_KEY": "k"})
        router = router_from_config(config)
        cut_after = _events_before_terminator(shape, model) - (0 if usage_reached_us else 2)
        server.script(Scripted(cut_after_items=cut_after, cut_mode=cut_mode))
        policy = tenant_policy(config, "chat")
        req = ChatRequest(messages=(Message.user("2+2?"),), max_tokens=64, alias="chat")
        try:
            stream = router.call_provider_streaming(
                req, resolve("chat", policy), deadline_in(10.0), policy, session_id="cut"
            )
            events = [event async for event in stream]
            store = router.ledger_store
            assert store is not None
            totals = await store.totals(now_ms=router._ports.ledger.wall_ms())
        finally:
            await router.aclose()
        bills = server.bills
    assert isinstance(events[-1], StreamError), events[-1]  # the stream was cut: the caller sees it
    assert len(bills) == 1, bills
    assert not bills[0].complete, bills
    assert not totals.open_reservations
    if usage_reached_us:
        assert bills[0].usage, bills
        expected = invoice_pico_usd(kind, bills[0])
        assert expected > 0
    else:
        expected = worst_case_cost_pico_usd(PRICES.price_for(kind, model), req)
    assert totals.monthly.spent_pico_usd == expected, (totals.monthly.spent_pico_usd, expected)


@pytest.mark.parametrize("name", sorted(CASES))
async def test_a_body_that_ends_cleanly_after_its_usage_carries_the_usage(name: str) -> None:
    """A complete HTTP body that lacks only the terminator: the decoder's own StreamError carries the usage."""
    shape, kind, model, _ = CASES[name]
    view = RequestView(model=model, stream=True, tool_name=None, include_usage=shape is Shape.OPENAI)
    items = default_stream(shape, view)[:-1]  # everything but message_stop / [DONE]
    body = "".join(
        (f"event: {item['event']}\n" if "event" in item else "")
        + f"data: {item['data'] if isinstance(item['data'], str) else json.dumps(item['data'])}\n\n"
        for item in items
    ).encode()
    transport = httpx.MockTransport(lambda request: httpx.Response(200, content=body, headers={"content-type": SSE}))
    protocol = WireProtocol.ANTHROPIC if shape is Shape.ANTHROPIC else WireProtocol.OPENAI
    async with httpx.AsyncClient(transport=transport) as client:
        events = [
            event
            async for event in stream_events(
                client,
                "http://provider.test/v1/messages",
                content=b"{}",
                headers={},
                timeout_at=asyncio.get_running_loop().time() + 5,
                decoder=StreamDecoder(protocol),
            )
        ]
    end = events[-1]
    assert isinstance(end, StreamError), end
    assert end.usage is not None, end
    assert cost_pico_usd(PRICES.price_for(kind, model), end.usage) > 0
    assert end.usage.completion_tokens > 1  # the final count, not message_start's placeholder
