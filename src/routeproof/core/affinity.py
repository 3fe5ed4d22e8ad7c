"""Cache affinity (opt-in): calls that share a cacheable prefix go to the deployment their prefix
is pinned to while its prompt cache lives, so the provider's prompt cache is hit.

The pin is taken when the *first* call of a prefix is ordered, before anything is sent, so calls
of the same prefix that run at once all route to it (LiteLLM writes its pin after a success, in the
background, and concurrent calls route before it exists: litellm #6784, #16522). A pinned
deployment that is cooling or at its limit is still demoted or skipped afterwards, as any other.
"""

from __future__ import annotations

from dataclasses import replace

import icontract

from routeproof.core.balance import Member, groups_of
from routeproof.core.types import ChainEntry

__all__ = ["pin_first", "pin_live"]


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
