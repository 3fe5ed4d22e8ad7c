"""The traffic port reads the wall clock only when it needs it (issue 25): header_block only for a
deployment its provider's headers hold back, reserve only for a deployment with declared limits."""

from __future__ import annotations

import asyncio

from routeproof.core.types import ChatRequest, Message, ProviderKind
from routeproof.traffic import TrafficConfig
from routeproof.traffic_store.port import Traffic

A = ProviderKind.OPENAI


class Clock:
    """A wall clock in ms that counts its readings."""

    def __init__(self, now_ms: int) -> None:
        self.now_ms = now_ms
        self.reads = 0

    def __call__(self) -> int:
        self.reads += 1
        return self.now_ms


def test_header_block_reads_the_clock_only_for_a_held_back_deployment_and_honours_it() -> None:
    """No block: None without a reading. A block (0 requests left, reset in 10 s): held back before
    its end, forgotten at it -- the reading decides, so a lazy clock never skips a block."""
    traffic = Traffic(TrafficConfig())
    clock = Clock(1_000)
    assert traffic.header_block(A, clock) is None
    assert clock.reads == 0
    headers = {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "10s"}
    traffic.observe_headers(A, headers, 1_000)
    assert traffic.header_block(A, clock) is not None
    assert clock.reads == 1
    clock.now_ms = 11_000
    assert traffic.header_block(A, clock) is None
    assert traffic.header_block(A, clock) is None  # forgotten: no block, no reading
    assert clock.reads == 2


def test_reserve_reads_the_clock_only_for_a_limited_deployment() -> None:
    """An unlimited deployment gets no ticket and no reading."""
    traffic = Traffic(TrafficConfig())
    clock = Clock(1_000)
    req = ChatRequest(messages=(Message.user("hi"),), max_tokens=8, alias="a")
    assert asyncio.run(traffic.reserve(A, req, clock)) is None
    assert clock.reads == 0


def test_a_header_sink_collects_only_inside_its_block_and_restores_the_outer_one() -> None:
    """HeaderSink is its own block (issue 25): inside it, capture keeps the rate-limit headers (names
    lowered, others dropped); a nested block collects on its own and gives the outer one back; outside
    any block capture does nothing."""
    from routeproof.traffic_store.answer_headers import HeaderSink, capture, collecting

    capture({"x-ratelimit-remaining-requests": "1"})  # no block: dropped, no error
    with collecting() as outer:
        capture({"X-RateLimit-Remaining-Requests": "3", "content-type": "application/json"})
        with HeaderSink() as inner:
            capture({"x-ratelimit-remaining-tokens": "9"})
        capture({"x-ratelimit-remaining-requests": "2"})  # the last answer wins
    capture({"x-ratelimit-remaining-requests": "0"})
    assert inner.headers == {"x-ratelimit-remaining-tokens": "9"}
    assert outer.headers == {"x-ratelimit-remaining-requests": "2"}
