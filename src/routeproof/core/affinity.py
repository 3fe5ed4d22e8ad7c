"""Cache affinity (opt-in): calls that share a cacheable prefix go to the deployment their prefix
is pinned to while its prompt cache lives, so the provider's prompt cache is hit.

The pin is taken when the *first* call of a prefix is ordered, before anything is sent, so calls
of the same prefix that run at once all route to it (LiteLLM writes its pin after a success, in the
background, and concurrent calls route before it exists: litellm #6784, #16522). A pinned
deployment that is cooling or at its limit is still demoted or skipped afterwards, as any other.

What the cacheable prefix is (:func:`cache_prefixes`, the longest first):

* a **caller-given key** (``ChatRequest.cache_affinity_key``; at the gateway, OpenAI's own
  ``prompt_cache_key``, the field the OpenAI SDKs already send to steer OpenAI's prompt cache): the
  key alone, whatever the messages;
* else, with **cache markers** (``cache_control`` on a tool, a system block or a message block, the
  Anthropic SDKs' way to say what is cached): one prefix per marker, everything up to and including
  the marked block in the provider's cache order (tools, system, messages). A request matches the
  pin of its longest prefix that has one (:func:`pinned_deployment`), so a conversation that moves
  its last marker forward each turn keeps the deployment where its earlier turns (and its marked
  system prompt) are cached;
* else the system prompt, the tools and every message but the last (automatic prefix caching).

How long a pin lives (:func:`pin_ttl_ms`): a marker's own ``ttl`` (``"1h"``: the caller asked the
provider to keep that prefix an hour) for the prefix it closes; else the deployment's configured
cache lifetime; else the router's. A provider keeps a cache alive while it is used (Anthropic refreshes
an entry each time it is read; OpenAI clears a prefix after minutes of inactivity), so each answer from
the pinned deployment restarts its pin's lifetime (``Traffic.confirm_pin``); a hard-coded lifetime
that ignores both is what breaks 1-hour caches (litellm #28427).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace

import icontract

from routeproof.core.balance import Member, groups_of
from routeproof.core.blocks import CacheControl, CacheTTL
from routeproof.core.types import ChainEntry, ChatRequest

__all__ = [
    "MARKER_TTL_MS",
    "CachePrefix",
    "Pin",
    "PrefixSource",
    "cache_prefixes",
    "pin_first",
    "pin_live",
    "pin_ttl_ms",
    "pinned_deployment",
]


def _pin_first(chain: tuple[ChainEntry, ...], members: dict[str, Member], pinned: str | None) -> tuple[ChainEntry, ...]:
    if pinned is None:
        return chain
    out: list[ChainEntry] = []
    for group in groups_of(chain, members):
        hit = [e for e in group if e.provider.value == pinned]
        out.extend(hit + [e for e in group if e.provider.value != pinned] if hit else group)
    return tuple(replace(e, fallback_position=i) for i, e in enumerate(out))


def _pinned_leads(
    chain: tuple[ChainEntry, ...], members: dict[str, Member], pinned: str | None, result: tuple[ChainEntry, ...]
) -> bool:
    """The pinned deployment (if in the chain) opens its group, at the group's first position."""
    start = 0
    for group in groups_of(chain, members):
        if pinned is not None and any(e.provider.value == pinned for e in group):
            return result[start].provider.value == pinned
        start += len(group)
    return True


@icontract.ensure(
    lambda chain, result: sorted(e.provider.value for e in chain) == sorted(e.provider.value for e in result),
    "a permutation of the chain",
)
@icontract.ensure(_pinned_leads)
def pin_first(chain: tuple[ChainEntry, ...], members: dict[str, Member], pinned: str | None) -> tuple[ChainEntry, ...]:
    """The chain with the pinned deployment first in its group (groups keep their places)."""
    return _pin_first(chain, members, pinned)


def _pin_live(pinned_at_ms: int, ttl_ms: int, now_ms: int) -> bool:
    return now_ms < pinned_at_ms + ttl_ms


@icontract.require(lambda ttl_ms: ttl_ms > 0)
@icontract.ensure(lambda pinned_at_ms, ttl_ms, now_ms, result: result == (now_ms - pinned_at_ms < ttl_ms))
def pin_live(pinned_at_ms: int, ttl_ms: int, now_ms: int) -> bool:
    """Whether a pin taken at ``pinned_at_ms`` still holds (the provider's cache TTL, e.g. 5 min, 1 h)."""
    return _pin_live(pinned_at_ms, ttl_ms, now_ms)


MARKER_TTL_MS: dict[CacheTTL, int] = {CacheTTL.FIVE_MINUTES: 300_000, CacheTTL.ONE_HOUR: 3_600_000}
"""A cache marker's ``ttl`` in milliseconds."""


class PrefixSource(enum.Enum):
    """Where a request's cacheable prefix came from."""

    CALLER_KEY = "caller_key"  # ChatRequest.cache_affinity_key (OpenAI's prompt_cache_key at the gateway)
    CACHE_MARKER = "cache_marker"  # everything up to a cache_control marker
    ALL_BUT_LAST = "all_but_last"  # no key, no marker: system, tools and every message but the last


@dataclass(frozen=True, slots=True, kw_only=True)
class CachePrefix:
    """One cacheable prefix of a request: its source and its parts (frozen values; the shell hashes
    their ``repr``), the alias first; ``ttl_ms``: the lifetime its closing marker asked for, if any."""

    source: PrefixSource
    parts: tuple[object, ...]
    ttl_ms: int | None = None


def _marker_ttl_ms(marker: CacheControl | None) -> int | None:
    return None if marker is None or marker.ttl is None else MARKER_TTL_MS[marker.ttl]


def _marker_prefixes(req: ChatRequest) -> list[tuple[tuple[object, ...], int | None]]:
    """One prefix per cache marker, shortest first (tools, then system, then messages), each with
    its marker's own lifetime."""
    out: list[tuple[tuple[object, ...], int | None]] = []
    for i, tool in enumerate(req.tools):
        if tool.cache_control is not None:
            out.append((("tools", req.tools[: i + 1]), _marker_ttl_ms(tool.cache_control)))
    for i, block in enumerate(req.system_blocks):
        if block.cache_control is not None:
            out.append((("system", req.tools, req.system_blocks[: i + 1]), _marker_ttl_ms(block.cache_control)))
    for m, message in enumerate(req.messages):
        for b, content in enumerate(message.content):
            marker = getattr(content, "cache_control", None)
            if marker is not None:
                cut = replace(message, content=message.content[: b + 1])
                parts = ("messages", req.tools, req.system_blocks, req.system, (*req.messages[:m], cut))
                out.append((parts, _marker_ttl_ms(marker)))
    return out


def _cache_prefixes(req: ChatRequest) -> tuple[CachePrefix, ...]:
    if req.cache_affinity_key is not None:
        return (CachePrefix(source=PrefixSource.CALLER_KEY, parts=(req.alias, req.cache_affinity_key)),)
    marked = _marker_prefixes(req)
    if marked:
        return tuple(
            CachePrefix(source=PrefixSource.CACHE_MARKER, parts=(req.alias, *p), ttl_ms=ttl)
            for p, ttl in reversed(marked)
        )
    parts = (req.alias, req.system, req.tools, req.messages[:-1])
    return (CachePrefix(source=PrefixSource.ALL_BUT_LAST, parts=parts),)


@icontract.ensure(lambda result: len(result) >= 1)
@icontract.ensure(lambda req, result: all(p.parts[0] == req.alias for p in result), "every prefix is the alias's")
@icontract.ensure(
    lambda req, result: (
        req.cache_affinity_key is None
        or (
            len(result) == 1
            and result[0].source is PrefixSource.CALLER_KEY
            and result[0].parts[1:] == (req.cache_affinity_key,)
        )
    ),
    "a caller-given key is the prefix, alone",
)
@icontract.ensure(lambda result: len({p.source for p in result}) == 1, "one source per request")
@icontract.ensure(
    lambda result: all(p.ttl_ms is None for p in result if p.source is not PrefixSource.CACHE_MARKER),
    "only a marker sets a lifetime",
)
def cache_prefixes(req: ChatRequest) -> tuple[CachePrefix, ...]:
    """The request's cacheable prefixes, the longest first (see the module docstring)."""
    return _cache_prefixes(req)


@dataclass(frozen=True, slots=True, kw_only=True)
class Pin:
    """A prefix pinned to ``deployment`` at ``pinned_at_ms`` for ``ttl_ms`` (that deployment's cache lifetime)."""

    deployment: str
    pinned_at_ms: int
    ttl_ms: int


def _pin_ttl_ms(default_ttl_ms: int, by_deployment: dict[str, int], deployment: str, marker_ttl_ms: int | None) -> int:
    if marker_ttl_ms is not None:
        return marker_ttl_ms
    return by_deployment.get(deployment, default_ttl_ms)


@icontract.require(
    lambda default_ttl_ms, by_deployment: default_ttl_ms > 0 and all(t > 0 for t in by_deployment.values())
)
@icontract.require(lambda marker_ttl_ms: marker_ttl_ms is None or marker_ttl_ms > 0)
@icontract.ensure(
    lambda default_ttl_ms, by_deployment, deployment, marker_ttl_ms, result: (
        result == marker_ttl_ms
        if marker_ttl_ms is not None
        else result == by_deployment[deployment]
        if deployment in by_deployment
        else result == default_ttl_ms
    ),
    "the marker's own lifetime, else the deployment's own cache lifetime, else the configured one",
)
def pin_ttl_ms(
    default_ttl_ms: int, by_deployment: dict[str, int], deployment: str, marker_ttl_ms: int | None = None
) -> int:
    """How long a pin to ``deployment`` lives: the lifetime the prefix's closing marker asked for
    (``ttl: "1h"``), else its provider's cache lifetime (5 minutes, 1 hour)."""
    return _pin_ttl_ms(default_ttl_ms, by_deployment, deployment, marker_ttl_ms)


def _pinned_deployment(pins: tuple[Pin | None, ...], now_ms: int) -> str | None:
    for pin in pins:
        if pin is not None and _pin_live(pin.pinned_at_ms, pin.ttl_ms, now_ms):
            return pin.deployment
    return None


@icontract.require(lambda pins: all(p is None or p.ttl_ms > 0 for p in pins))
@icontract.ensure(
    lambda pins, now_ms, result: (
        result is None
        if all(p is None or not (now_ms - p.pinned_at_ms < p.ttl_ms) for p in pins)
        else result == next(p.deployment for p in pins if p is not None and now_ms - p.pinned_at_ms < p.ttl_ms)
    ),
    "the first live pin, in the prefixes' order (the longest first), else none",
)
def pinned_deployment(pins: tuple[Pin | None, ...], now_ms: int) -> str | None:
    """The deployment a request goes to: the live pin of its longest prefix that has one (each pin
    lives its own deployment's TTL), else None (the request is pinned where it is ordered)."""
    return _pinned_deployment(pins, now_ms)
