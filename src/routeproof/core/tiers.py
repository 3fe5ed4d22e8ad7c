"""Privacy tiers and the chain filter (seed 003, ``privacy_enforcement``; FALSIFY-MPA-001).

A request's tier says how far its data may travel: Sovereign < Private < Standard.

* ``allowed_kinds(tier)`` is the contract's ``allowed_providers``: Sovereign allows only the
  in-process ``LOCAL`` runtime (no network at all), Private adds the self-hosted ``OLLAMA`` and
  ``VLLM``, Standard allows every supported kind.
* ``endpoint_tier(kind, base_url)`` is the tier an endpoint *actually* has. A self-hosted kind is
  Private only when its base URL points at loopback, a private (RFC 1918 / ULA) or link-local IP
  literal, ``localhost`` or a host on an explicit allow-list; anything else is Standard. No DNS:
  a name that is not on the allow-list is treated as public, whatever it would resolve to.
* ``filter_chain`` keeps an entry iff its kind is allowed for the tier AND its endpoint's tier is
  ``<=`` the request's tier, in the chain's order.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import TypeAlias, cast
from urllib.parse import urlsplit

import icontract

from routeproof.core.types import ChainEntry, PrivacyTier, ProviderId, ProviderKind

EndpointTiers: TypeAlias = Mapping[ProviderId, PrivacyTier] | Mapping[ProviderKind, PrivacyTier]
"""Each configured instance's endpoint tier (a kind-keyed map is one for default-named instances)."""

__all__ = [
    "NETWORK_KINDS",
    "PrivacyTier",
    "allowed_kinds",
    "endpoint_tier",
    "filter_chain",
    "tier_admits",
]

_SELF_HOSTED: frozenset[ProviderKind] = frozenset({ProviderKind.OLLAMA, ProviderKind.VLLM})

NETWORK_KINDS: frozenset[ProviderKind] = frozenset(k for k in ProviderKind if k is not ProviderKind.LOCAL)
"""Every kind that reaches its model over a network. Only LOCAL runs in-process."""

_SOVEREIGN_KINDS: frozenset[ProviderKind] = frozenset({ProviderKind.LOCAL})
_PRIVATE_KINDS: frozenset[ProviderKind] = _SOVEREIGN_KINDS | _SELF_HOSTED
_STANDARD_KINDS: frozenset[ProviderKind] = frozenset(k for k in ProviderKind if k.is_supported)

# Explicit ranges rather than ``ip.is_private``, which also admits documentation, benchmarking and
# "this network" blocks that are not a LAN.
_PRIVATE_NETWORKS: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] = (
    ipaddress.ip_network("10.0.0.0/8"),  # RFC 1918
    ipaddress.ip_network("172.16.0.0/12"),  # RFC 1918
    ipaddress.ip_network("192.168.0.0/16"),  # RFC 1918
    ipaddress.ip_network("fc00::/7"),  # RFC 4193 unique local
)


def _allowed_kinds(tier: PrivacyTier) -> frozenset[ProviderKind]:
    if tier is PrivacyTier.SOVEREIGN:
        return _SOVEREIGN_KINDS
    if tier is PrivacyTier.PRIVATE:
        return _PRIVATE_KINDS
    return _STANDARD_KINDS


@icontract.ensure(lambda tier, result: tier is not PrivacyTier.SOVEREIGN or not (result & NETWORK_KINDS))
@icontract.ensure(
    lambda tier, result: all(result <= _allowed_kinds(higher) for higher in PrivacyTier if higher >= tier),
    "raising the tier never shrinks the set (so lowering it never grows it)",
)
def allowed_kinds(tier: PrivacyTier) -> frozenset[ProviderKind]:
    """The provider kinds a request of ``tier`` may be sent to (the contract's ``allowed_providers``)."""
    return _allowed_kinds(tier)


def _host_is_private(host: str, allow_list: frozenset[str]) -> bool:
    host = host.lower().rstrip(".")
    if host == "localhost" or host in allow_list:
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False  # a name: no DNS in the core, so only the allow-list can vouch for it
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip.is_loopback or ip.is_link_local:
        return True
    return any(ip in net for net in _PRIVATE_NETWORKS if net.version == ip.version)


def _endpoint_tier(kind: ProviderKind, base_url: str | None, private_allow_list: frozenset[str]) -> PrivacyTier:
    if kind is ProviderKind.LOCAL:
        return PrivacyTier.SOVEREIGN
    if kind not in _SELF_HOSTED or base_url is None:
        return PrivacyTier.STANDARD
    try:
        host = urlsplit(base_url.strip()).hostname
    except ValueError:  # e.g. an unbalanced "[" in an IPv6 literal
        return PrivacyTier.STANDARD
    if not host:
        return PrivacyTier.STANDARD
    allow = frozenset(h.lower().rstrip(".") for h in private_allow_list)
    return PrivacyTier.PRIVATE if _host_is_private(host, allow) else PrivacyTier.STANDARD


@icontract.ensure(lambda kind, result: (result is PrivacyTier.SOVEREIGN) == (kind is ProviderKind.LOCAL))
@icontract.ensure(lambda kind, result: result is not PrivacyTier.PRIVATE or kind in _SELF_HOSTED)
def endpoint_tier(
    kind: ProviderKind, base_url: str | None, private_allow_list: frozenset[str] = frozenset()
) -> PrivacyTier:
    """The tier an endpoint actually has: LOCAL is Sovereign; Ollama/vLLM are Private only on a
    loopback, RFC 1918 / ULA or link-local IP literal, ``localhost`` or an allow-listed host
    (case-insensitive, exact match, no DNS); a missing or unparsable URL and every other kind are
    Standard."""
    return _endpoint_tier(kind, base_url, private_allow_list)


def _filter_chain(
    chain: tuple[ChainEntry, ...], tier: PrivacyTier, endpoint_tiers: EndpointTiers
) -> tuple[tuple[ChainEntry, ...], tuple[ChainEntry, ...]]:
    allowed = _allowed_kinds(tier)
    kept: list[ChainEntry] = []
    skipped: list[ChainEntry] = []
    for entry in chain:
        if _kind_allowed(entry, allowed) and _tier_of(entry, endpoint_tiers) <= tier:
            kept.append(entry)
        else:
            skipped.append(entry)
    return tuple(kept), tuple(skipped)


def _kind_allowed(entry: ChainEntry, allowed: frozenset[ProviderKind]) -> bool:
    """Whether the entry's kind may serve a tier allowing ``allowed``; a name not bound to a
    configured provider (its kind unknown) only where every supported kind is allowed."""
    kind = entry.provider.kind
    return kind in allowed if kind is not None else allowed == _STANDARD_KINDS


def _tier_of(entry: ChainEntry, endpoint_tiers: EndpointTiers) -> PrivacyTier:
    """The entry's endpoint tier: the configured instance's, else its kind's default (an unbound
    name, kind unknown: Standard, the least private)."""
    known = cast("Mapping[ProviderId, PrivacyTier]", endpoint_tiers).get(entry.provider)
    if known is not None:
        return known
    kind = entry.provider.kind
    return _endpoint_tier(kind, None, frozenset()) if kind is not None else PrivacyTier.STANDARD


def _is_subsequence(part: tuple[ChainEntry, ...], whole: tuple[ChainEntry, ...]) -> bool:
    it = iter(whole)
    return all(any(x is y for y in it) for x in part)


@icontract.ensure(
    lambda chain, tier, endpoint_tiers, result: all(
        set(_filter_chain(chain, lower, endpoint_tiers)[0]) <= set(result[0]) for lower in PrivacyTier if lower <= tier
    ),
    "lowering the tier never grows the kept set",
)
@icontract.ensure(lambda chain, result: len(result[0]) + len(result[1]) == len(chain))
@icontract.ensure(lambda chain, result: _is_subsequence(result[0], chain), "kept entries keep the chain's order")
@icontract.ensure(
    lambda tier, result: all(
        e.provider.kind in _allowed_kinds(tier) or (e.provider.kind is None and _allowed_kinds(tier) == _STANDARD_KINDS)
        for e in result[0]
    ),
    "a kept entry's kind is allowed; a name of unknown kind only where every kind is (Standard)",
)
@icontract.ensure(
    lambda tier, result: (
        tier is not PrivacyTier.SOVEREIGN or all(e.provider.kind not in NETWORK_KINDS for e in result[0])
    )
)
@icontract.ensure(
    lambda tier, endpoint_tiers, result: all(
        cast("Mapping[ProviderId, PrivacyTier]", endpoint_tiers).get(e.provider, PrivacyTier.SOVEREIGN) <= tier
        for e in result[0]
    )
)
def filter_chain(
    chain: tuple[ChainEntry, ...], tier: PrivacyTier, endpoint_tiers: EndpointTiers
) -> tuple[tuple[ChainEntry, ...], tuple[ChainEntry, ...]]:
    """Split ``chain`` into (kept, skipped), both in chain order: an entry is kept iff its kind is
    allowed for ``tier`` and its endpoint's tier is ``<= tier``. An instance missing from
    ``endpoint_tiers`` gets ``endpoint_tier(kind, None)`` (LOCAL Sovereign, all else Standard);
    a name bound to no configured provider is Standard."""
    return _filter_chain(chain, tier, endpoint_tiers)


def tier_admits(entry: ChainEntry, tier: PrivacyTier, endpoint_tiers: EndpointTiers) -> bool:
    """What :func:`filter_chain`'s postconditions say of each entry it keeps: its kind is allowed for
    ``tier`` (a name of unknown kind only where every kind is: Standard) and its instance's endpoint
    tier, when configured, is ``<= tier``. ``routing.plan_chain`` states it of every entry it keeps,
    so a routed call checks the tier rule once, in its planning contract."""
    kind, allowed = entry.provider.kind, _allowed_kinds(tier)
    configured = cast("Mapping[ProviderId, PrivacyTier]", endpoint_tiers).get(entry.provider, PrivacyTier.SOVEREIGN)
    return (kind in allowed or (kind is None and allowed == _STANDARD_KINDS)) and configured <= tier
