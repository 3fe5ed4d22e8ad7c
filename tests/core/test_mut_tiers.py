"""The tier helpers for a name not yet bound to a configured provider (its kind unknown)."""

from __future__ import annotations

from routeproof.core.identity import ProviderId
from routeproof.core.tiers import _STANDARD_KINDS, _kind_allowed, _tier_of
from routeproof.core.types import ChainEntry, PrivacyTier, ProviderKind, ProviderName

_UNBOUND = ChainEntry(provider=ProviderName("vllm-a"), model="m", fallback_position=0)


def test_an_unbound_name_is_allowed_only_where_every_kind_is() -> None:
    """An unbound name passes the kind rule only when every supported kind is allowed (Standard)."""
    assert _kind_allowed(_UNBOUND, _STANDARD_KINDS) is True
    assert _kind_allowed(_UNBOUND, frozenset({ProviderKind.LOCAL})) is False


def test_an_unbound_name_is_at_the_standard_tier_unless_configured() -> None:
    """An unbound name with no configured endpoint tier is Standard; a configured tier wins."""
    assert _tier_of(_UNBOUND, {}) is PrivacyTier.STANDARD
    configured: dict[ProviderId, PrivacyTier] = {ProviderName("vllm-a"): PrivacyTier.PRIVATE}
    assert _tier_of(_UNBOUND, configured) is PrivacyTier.PRIVATE
