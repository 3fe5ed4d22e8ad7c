"""Cache affinity (core/affinity.py, opt-in): calls sharing a cacheable prefix go to one deployment
while the pin lives, even when they run at once; the pin expires with the cache's TTL."""

from __future__ import annotations

import asyncio
from collections import defaultdict

import pytest

from routeproof.core.affinity import (
    Pin,
    PrefixSource,
    cache_prefixes,
    pin_first,
    pin_live,
    pin_ttl_ms,
    pinned_deployment,
)
from routeproof.core.balance import Member, Strategy
from routeproof.core.blocks import CacheControl, CacheTTL, ThinkingBlock
from routeproof.core.types import ChainEntry, ChatRequest, Message, ProviderName, Role, TextBlock, ToolDefinition
from routeproof.testing import Reply, ScriptedProvider
from routeproof.traffic import TrafficConfig
from tests.traffic.support import ALIAS, policy, resolved, router


def test_the_pinned_deployment_opens_its_group() -> None:
    """The pinned entry moves to the front of its group; other groups keep their places."""
    members = {"a": Member(priority=0), "b": Member(priority=0), "z": Member(priority=1)}
    chain = tuple(ChainEntry(provider=ProviderName(n), model="m", fallback_position=i) for i, n in enumerate("abz"))
    assert [e.provider.value for e in pin_first(chain, members, "b")] == ["b", "a", "z"]
    assert [e.fallback_position for e in pin_first(chain, members, "b")] == [0, 1, 2]  # renumbered
    assert [e.provider.value for e in pin_first(chain, members, None)] == ["a", "b", "z"]


def test_a_pin_lives_for_its_ttl() -> None:
    """A 5-minute pin holds at 299 999 ms and is gone at 300 000 ms."""
    assert pin_live(0, 300_000, 299_999)
    assert not pin_live(0, 300_000, 300_000)


@pytest.mark.asyncio
@pytest.mark.looptime(end=600)
async def test_concurrent_calls_of_one_prefix_share_a_deployment() -> None:
    """Five prefixes, 20 calls each, 5 in flight, weighted over three deployments: every prefix's
    calls reach one deployment (LiteLLM's background pin lets concurrent calls scatter)."""
    deployments = [ScriptedProvider(name=n, default=Reply(delay_s=0.05)) for n in ("a", "b", "c")]
    members = {n: Member(priority=0) for n in ("a", "b", "c")}
    traffic = TrafficConfig(strategy=Strategy.WEIGHTED, members=members, affinity_ttl_ms=300_000)
    async with router(deployments, traffic) as r:
        tenant = policy(["a", "b", "c"])
        gate = asyncio.Semaphore(5)
        loop = asyncio.get_running_loop()

        async def one(prefix: int, turn: int) -> None:
            req = ChatRequest(
                messages=(Message.user(f"shared context {prefix}"), Message.user(f"question {turn}")),
                system=f"tenant {prefix}",
                max_tokens=16,
                alias=ALIAS,
            )
            async with gate:
                await r.call_provider(req, resolved(tenant), loop.time() + 20, tenant)

        await asyncio.gather(*(one(p, t) for t in range(20) for p in range(5)))
    reached: dict[str, set[str]] = defaultdict(set)
    for provider in deployments:
        for req, _ in provider.calls:
            reached[req.system or ""].add(provider.name)
    assert len(reached) == 5
    assert all(len(names) == 1 for names in reached.values()), reached


MARK = CacheControl()


def marked(text: str) -> TextBlock:
    """A text block carrying a cache marker."""
    return TextBlock(text=text, cache_control=MARK)


def chat(*messages: Message, key: str | None = None, system: tuple[TextBlock, ...] = ()) -> ChatRequest:
    """A request for ALIAS with ``messages``, an optional caller key and system blocks."""
    return ChatRequest(messages=messages, max_tokens=16, alias=ALIAS, system_blocks=system, cache_affinity_key=key)


def test_a_caller_key_is_the_prefix_whatever_the_messages() -> None:
    """Two requests with one cache_affinity_key share their one prefix, however their messages
    differ; another key is another prefix."""
    one = cache_prefixes(chat(Message.user("a"), key="tenant-7"))
    two = cache_prefixes(chat(Message.user("b"), Message.user("c"), key="tenant-7"))
    assert one == two
    assert [p.source for p in one] == [PrefixSource.CALLER_KEY]
    assert cache_prefixes(chat(Message.user("a"), key="tenant-8")) != one


def test_the_prefix_ends_at_the_cache_marker_and_the_longest_comes_first() -> None:
    """A marked system block and a marked message give two prefixes, the message's (longer) first;
    what follows the last marker is no part of either."""
    system = (marked("a long system prompt"),)
    head = Message(role=Role.USER, content=(marked("shared document"),))
    first = cache_prefixes(chat(head, Message.user("question 1"), system=system))
    second = cache_prefixes(chat(head, Message.user("question 2"), Message.user("more"), system=system))
    assert first == second
    assert [p.source for p in first] == [PrefixSource.CACHE_MARKER, PrefixSource.CACHE_MARKER]
    assert first[0].parts[1] == "messages"
    assert first[1].parts[1] == "system"
    unmarked = cache_prefixes(chat(Message.user("shared document"), Message.user("question 1"), system=system))
    assert unmarked[0] == first[1]  # the system prompt's prefix is shared with a request that marks only it


def test_each_marker_prefix_holds_exactly_what_precedes_its_marked_block() -> None:
    """A marked first tool, a marked first system block and a marked middle block of a message give
    three prefixes, each cut just after its marked block in cache order (tools, system, messages);
    a block without a cache_control field (thinking) is no marker."""
    tools = (ToolDefinition(name="t1", cache_control=MARK), ToolDefinition(name="t2"), ToolDefinition(name="t3"))
    system = (marked("s1"), TextBlock(text="s2"), TextBlock(text="s3"))
    thinking = ThinkingBlock(thinking="hm", signature="sig")
    first = Message(role=Role.ASSISTANT, content=(thinking, TextBlock(text="a"), marked("b"), TextBlock(text="c")))
    req = ChatRequest(
        messages=(Message.user("q0"), first, Message.user("next")),
        max_tokens=16,
        alias=ALIAS,
        tools=tools,
        system_blocks=system,
    )
    cut = Message(role=Role.ASSISTANT, content=(thinking, TextBlock(text="a"), marked("b")))
    assert [p.parts for p in cache_prefixes(req)] == [
        (ALIAS, "messages", tools, system, req.system, (Message.user("q0"), cut)),
        (ALIAS, "system", tools, system[:1]),
        (ALIAS, "tools", tools[:1]),
    ]


def test_without_a_key_or_a_marker_the_prefix_is_all_but_the_last_message() -> None:
    """No key, no marker: system, tools and every message but the last (automatic prefix caching)."""
    one = cache_prefixes(chat(Message.user("context"), Message.user("q1")))
    two = cache_prefixes(chat(Message.user("context"), Message.user("q2")))
    assert one == two
    assert [p.source for p in one] == [PrefixSource.ALL_BUT_LAST]
    assert cache_prefixes(chat(Message.user("other"), Message.user("q1"))) != one
    three = cache_prefixes(chat(Message.user("context"), Message.user("more"), Message.user("q1")))
    assert three[0].parts == (ALIAS, None, (), (Message.user("context"), Message.user("more")))


def test_the_longest_prefix_with_a_live_pin_decides() -> None:
    """Pins are read longest prefix first; an expired or missing pin is passed over; each pin lives
    its own TTL."""

    def pin(deployment: str, at_ms: int, ttl_ms: int = 1000) -> Pin:
        return Pin(deployment=deployment, pinned_at_ms=at_ms, ttl_ms=ttl_ms)

    assert pinned_deployment((None, pin("b", 0), pin("c", 0)), 10) == "b"
    assert pinned_deployment((pin("a", 0), pin("b", 5)), 1000) == "b"  # a's pin expired at 1000
    assert pinned_deployment((None, pin("a", 0)), 1000) is None
    assert pinned_deployment((pin("a", 0), pin("b", 0, ttl_ms=3_600_000)), 300_000) == "b"


def test_a_pin_lives_its_deployments_own_ttl() -> None:
    """A deployment with its own cache lifetime (1 hour) keeps it; the others take the configured one."""
    assert pin_ttl_ms(300_000, {"b": 3_600_000}, "b") == 3_600_000
    assert pin_ttl_ms(300_000, {"b": 3_600_000}, "a") == 300_000


def test_a_markers_own_ttl_is_its_prefixs_lifetime() -> None:
    """A marker with ``ttl: "1h"`` gives the prefix it closes an hour, over the deployment's and the
    router's lifetimes; a marker without one, a caller key and an unmarked request leave it to them."""
    hour = TextBlock(text="a long system prompt", cache_control=CacheControl(ttl=CacheTTL.ONE_HOUR))
    five = Message(
        role=Role.USER, content=(TextBlock(text="doc", cache_control=CacheControl(ttl=CacheTTL.FIVE_MINUTES)),)
    )
    prefixes = cache_prefixes(chat(five, Message.user("q"), system=(hour,)))
    assert [p.ttl_ms for p in prefixes] == [300_000, 3_600_000]  # the message's (longest) first
    assert [p.ttl_ms for p in cache_prefixes(chat(Message.user("q"), system=(marked("s"),)))] == [None]
    assert [p.ttl_ms for p in cache_prefixes(chat(Message.user("q"), key="k"))] == [None]
    assert [p.ttl_ms for p in cache_prefixes(chat(Message.user("a"), Message.user("q")))] == [None]
    assert pin_ttl_ms(300_000, {"b": 600_000}, "b", 3_600_000) == 3_600_000
    assert pin_ttl_ms(300_000, {"b": 600_000}, "b", None) == 600_000


@pytest.mark.asyncio
@pytest.mark.looptime(end=10_000)
async def test_a_prefix_marked_for_an_hour_keeps_its_deployment_past_five_minutes() -> None:
    """Affinity on for 5 minutes: a system prompt marked ``ttl: "1h"`` pinned to b still goes to b
    10 minutes later (Anthropic keeps that cache an hour); the same prompt marked without a ttl does
    not (litellm #28427: a 5-minute pin breaks 1-hour caches)."""
    a, b = ScriptedProvider(name="a"), ScriptedProvider(name="b")
    members = {"a": Member(priority=0), "b": Member(priority=0)}
    traffic = TrafficConfig(members=members, affinity_ttl_ms=300_000)
    hour = (TextBlock(text="hour-long prompt", cache_control=CacheControl(ttl=CacheTTL.ONE_HOUR)),)
    short = (marked("five-minute prompt"),)
    async with router([a, b], traffic, wall_clock=lambda: asyncio.get_running_loop().time()) as r:
        loop = asyncio.get_running_loop()
        on_b, on_a = policy(["b", "a"]), policy(["a", "b"])
        for system in (hour, short):
            await r.call_provider(chat(Message.user("q"), system=system), resolved(on_b), loop.time() + 20, on_b)
        await asyncio.sleep(600)
        for system in (hour, short):
            await r.call_provider(chat(Message.user("q"), system=system), resolved(on_a), loop.time() + 20, on_a)
    assert [req.system_blocks[0].text for req, _ in b.calls] == [
        "hour-long prompt",
        "five-minute prompt",
        "hour-long prompt",
    ]
    assert [req.system_blocks[0].text for req, _ in a.calls] == ["five-minute prompt"]


@pytest.mark.asyncio
@pytest.mark.looptime(end=10_000)
async def test_a_prefix_in_use_keeps_its_deployment_past_its_ttl() -> None:
    """A 5-minute pin whose prefix is used every 4 minutes is renewed by each answer, as the
    provider's cache is: at 16 minutes it still goes to b, though asked in the other order."""
    a, b = ScriptedProvider(name="a"), ScriptedProvider(name="b")
    members = {"a": Member(priority=0), "b": Member(priority=0)}
    traffic = TrafficConfig(members=members, affinity_ttl_ms=300_000)
    async with router([a, b], traffic, wall_clock=lambda: asyncio.get_running_loop().time()) as r:
        loop = asyncio.get_running_loop()
        on_b, on_a = policy(["b", "a"]), policy(["a", "b"])
        await r.call_provider(chat(Message.user("q"), key="busy"), resolved(on_b), loop.time() + 20, on_b)
        for _ in range(4):
            await asyncio.sleep(240)
            await r.call_provider(chat(Message.user("q"), key="busy"), resolved(on_a), loop.time() + 20, on_a)
    assert (len(b.calls), len(a.calls)) == (5, 0)


@pytest.mark.asyncio
@pytest.mark.looptime(end=10_000)
async def test_a_one_hour_deployment_keeps_its_prefixes_past_five_minutes() -> None:
    """Affinity on for 5 minutes, deployment b's cache lives an hour: a prefix pinned to b is still
    there 10 minutes later, while one pinned to a has expired and is drawn afresh."""
    a, b = ScriptedProvider(name="a"), ScriptedProvider(name="b")
    members = {"a": Member(priority=0), "b": Member(priority=0)}
    traffic = TrafficConfig(members=members, affinity_ttl_ms=300_000, affinity_ttl_ms_by_deployment={"b": 3_600_000})
    async with router([a, b], traffic, wall_clock=lambda: asyncio.get_running_loop().time()) as r:
        loop = asyncio.get_running_loop()
        on_b = policy(["b", "a"])  # ordered: b first, so this prefix is pinned to b
        on_a = policy(["a", "b"])
        await r.call_provider(
            chat(Message.user("b's"), Message.user("q"), key="to-b"), resolved(on_b), loop.time() + 20, on_b
        )
        await r.call_provider(
            chat(Message.user("a's"), Message.user("q"), key="to-a"), resolved(on_a), loop.time() + 20, on_a
        )
        await asyncio.sleep(600)
        # asked in the other order now: b's prefix still follows its pin to b; a's pin has expired
        await r.call_provider(
            chat(Message.user("b's"), Message.user("q"), key="to-b"), resolved(on_a), loop.time() + 20, on_a
        )
        await r.call_provider(
            chat(Message.user("a's"), Message.user("q"), key="to-a"), resolved(on_b), loop.time() + 20, on_b
        )
    assert [req.cache_affinity_key for req, _ in b.calls] == ["to-b", "to-b", "to-a"]
    assert [req.cache_affinity_key for req, _ in a.calls] == ["to-a"]


@pytest.mark.asyncio
@pytest.mark.looptime(end=600)
async def test_a_conversation_that_moves_its_cache_marker_stays_on_its_deployment() -> None:
    """Eight conversations of six turns, weighted over three deployments: each turn marks the system
    prompt and its newest message (Anthropic's incremental caching), so every turn has a new longest
    prefix; each conversation's turns still reach one deployment, where its earlier turns are cached."""
    deployments = [ScriptedProvider(name=n, default=Reply(delay_s=0.01)) for n in ("a", "b", "c")]
    members = {n: Member(priority=0) for n in ("a", "b", "c")}
    traffic = TrafficConfig(strategy=Strategy.WEIGHTED, members=members, affinity_ttl_ms=300_000)
    async with router(deployments, traffic) as r:
        tenant = policy(["a", "b", "c"])
        loop = asyncio.get_running_loop()
        for turn in range(6):
            for conversation in range(8):
                history = tuple(Message.user(f"c{conversation} turn {t}") for t in range(turn))
                newest = Message(role=Role.USER, content=(marked(f"c{conversation} turn {turn}"),))
                req = chat(*history, newest, system=(marked(f"conversation {conversation}"),))
                await r.call_provider(req, resolved(tenant), loop.time() + 20, tenant)
    reached: dict[str, set[str]] = defaultdict(set)
    for provider in deployments:
        for req, _ in provider.calls:
            reached[req.system or ""].add(provider.name)
    assert len(reached) == 8
    assert all(len(names) == 1 for names in reached.values()), reached


@pytest.mark.asyncio
@pytest.mark.looptime(end=600)
async def test_requests_with_one_caller_key_share_a_deployment() -> None:
    """Five keys, ten requests each with messages all different: each key's requests reach one deployment."""
    deployments = [ScriptedProvider(name=n, default=Reply(delay_s=0.01)) for n in ("a", "b", "c")]
    members = {n: Member(priority=0) for n in ("a", "b", "c")}
    traffic = TrafficConfig(strategy=Strategy.WEIGHTED, members=members, affinity_ttl_ms=300_000)
    async with router(deployments, traffic) as r:
        tenant = policy(["a", "b", "c"])
        loop = asyncio.get_running_loop()
        for n in range(10):
            for key in range(5):
                req = chat(Message.user(f"question {n} of {key}"), key=f"tenant-{key}")
                await r.call_provider(req, resolved(tenant), loop.time() + 20, tenant)
    reached: dict[str, set[str]] = defaultdict(set)
    for provider in deployments:
        for req, _ in provider.calls:
            assert req.cache_affinity_key is not None
            reached[req.cache_affinity_key].add(provider.name)
    assert len(reached) == 5
    assert all(len(names) == 1 for names in reached.values()), reached
