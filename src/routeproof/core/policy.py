"""Where a tenant's calls may go: the resolved model, the fallback chain, the tenant policy."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from routeproof.core.frozen import FrozenMap, as_enum, as_tuple, frozen_mapping, require_str, set_field
from routeproof.core.identity import PrivacyTier, ProviderId, as_provider

__all__ = ["FallbackProvider", "ResolvedModel", "TenantPolicy"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ResolvedModel:
    """The provider and model an alias resolved to. Build it with ``core.alias.resolve``."""

    provider: ProviderId
    model: str
    alias: str
    fallback_position: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class FallbackProvider:
    """One entry of a tenant's fallback chain: a provider and its alias -> model map.

    ``kind`` names the provider instance: a :class:`ProviderKind` (or a str spelling one) for a
    provider named after its kind, else the instance's name (``vllm-a``)."""

    kind: ProviderId
    model_alias_map: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        set_field(self, "kind", as_provider(self.kind, "FallbackProvider.kind"))
        if not isinstance(self.model_alias_map, Mapping):
            raise TypeError(f"FallbackProvider.model_alias_map must be a mapping, got {self.model_alias_map!r}")
        for alias, model in self.model_alias_map.items():
            require_str(alias, "FallbackProvider.model_alias_map key")
            require_str(model, f"FallbackProvider.model_alias_map[{alias!r}]", empty=False)
        object.__setattr__(self, "model_alias_map", frozen_mapping(self.model_alias_map))

    def model_for(self, alias: str) -> str | None:
        """The model this provider serves for ``alias``, or None when it lacks the alias."""
        return self.model_alias_map.get(alias)


@dataclass(frozen=True, slots=True, kw_only=True)
class TenantPolicy:
    """A tenant's routing policy: where aliases point first, where to fall back, how private."""

    tenant_id: str = "default"
    privacy_tier: PrivacyTier = PrivacyTier.STANDARD
    primary: Mapping[str, tuple[ProviderId, str]] = field(default_factory=dict)
    fallback_chain: tuple[FallbackProvider, ...] = ()
    context_window_failover: bool = False  # opt-in; never under the Sovereign tier

    def __post_init__(self) -> None:
        require_str(self.tenant_id, "TenantPolicy.tenant_id")
        set_field(self, "privacy_tier", as_enum(PrivacyTier, self.privacy_tier, "TenantPolicy.privacy_tier"))
        if not isinstance(self.primary, Mapping):
            raise TypeError(f"TenantPolicy.primary must be a mapping alias -> (provider, model), got {self.primary!r}")
        primary: dict[str, tuple[ProviderId, str]] = {}
        for alias, target in self.primary.items():
            where = f"TenantPolicy.primary[{alias!r}]"
            require_str(alias, "TenantPolicy.primary key")
            if not isinstance(target, tuple | list) or len(target) != 2:
                raise TypeError(f"{where} must be a (provider, model) pair, got {target!r}")
            kind = as_provider(target[0], f"{where}[0]")
            primary[alias] = (kind, require_str(target[1], f"{where}[1]", empty=False))
        object.__setattr__(self, "primary", FrozenMap(primary))
        set_field(
            self, "fallback_chain", as_tuple(self.fallback_chain, FallbackProvider, "TenantPolicy.fallback_chain")
        )
        if not isinstance(self.context_window_failover, bool):
            raise TypeError(
                f"TenantPolicy.context_window_failover must be a bool, got {self.context_window_failover!r}"
            )
