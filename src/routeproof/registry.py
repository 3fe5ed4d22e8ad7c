"""The Router's provider registry: providers keyed by instance, and the per-provider parameters
(timeouts, declared tiers) keyed the same way.

Providers are configured and addressed by name; a kind is a property of an instance
(:mod:`routeproof.core.identity`). A provider named after its kind, or alone of its kind, is keyed
by the ``ProviderKind`` itself; any other by a ``ProviderName`` bound to its kind. A chain may
address an instance by that identity or by its name (:func:`names`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TypeVar

from routeproof.core.constants import PROVIDER_DEFAULT_TIMEOUT_MS
from routeproof.core.identity import instance_ids, parse_provider
from routeproof.core.types import ProviderId, ProviderKind
from routeproof.errors import ConfigError
from routeproof.providers.protocol import Provider

__all__ = ["keyed_by_instance", "kind_of", "names", "provider_timeouts", "registry"]

_V = TypeVar("_V")


def registry(providers: Iterable[Provider] | Mapping[str, Provider]) -> dict[ProviderId, Provider]:
    """The providers keyed by instance identity (core/identity.py's ``instance_ids``: the kind for a
    provider named after its kind or alone of its kind, else its name). A provider without a
    ``name`` (a test double) is named after its kind."""
    items = list(providers.values() if isinstance(providers, Mapping) else providers)
    named: list[tuple[str, Provider]] = []
    for provider in items:
        if not provider.kind.is_supported:
            raise ConfigError(f"provider kind {provider.kind.value!r} is declared but not implemented yet")
        name = getattr(provider, "name", None)
        named.append((provider.kind.value if name is None else name, provider))
    try:
        ids = instance_ids((name, provider.kind) for name, provider in named)
    except ValueError as exc:
        raise ConfigError(str(exc)) from exc
    return {ids[name]: provider for name, provider in named}


def names(providers: Mapping[ProviderId, Provider]) -> dict[str, ProviderId]:
    """Every way a chain may address a configured instance: its identity and its name."""
    names: dict[str, ProviderId] = {ident: ident for ident in providers}
    for ident, provider in providers.items():
        names.setdefault(getattr(provider, "name", None) or ident, ident)
    return names


def kind_of(ident: ProviderId) -> ProviderKind:
    """The kind of a configured instance (its identity is bound: ``registry`` made it)."""
    kind = ident.kind
    if kind is None:
        raise ConfigError(f"provider {ident.value!r} is not configured")
    return kind


def keyed_by_instance(values: Mapping[str, _V], ids: Mapping[str, ProviderId], where: str) -> dict[ProviderId, _V]:
    """A per-provider parameter keyed by instance: its keys may be kinds, identities or names."""
    keyed: dict[ProviderId, _V] = {}
    for key, value in values.items():
        if not isinstance(key, str):
            raise ConfigError(f"{where} keys must be provider names or ProviderKind, got {key!r}")
        keyed[ids.get(key) or parse_provider(key)] = value
    return keyed


def provider_timeouts(timeouts: Mapping[str, int], ids: Mapping[str, ProviderId]) -> dict[ProviderId, int]:
    """Validated per-provider attempt timeouts (agent.toml's ``timeout_ms``), in ms, by instance."""
    checked = keyed_by_instance(timeouts, ids, "provider_timeouts_ms")
    for ident, timeout_ms in checked.items():
        if (
            isinstance(timeout_ms, bool)
            or not isinstance(timeout_ms, int)
            or not 0 < timeout_ms <= PROVIDER_DEFAULT_TIMEOUT_MS
        ):
            raise ConfigError(
                f"timeout_ms of {ident.value!r} must be an int in 1..{PROVIDER_DEFAULT_TIMEOUT_MS}, got {timeout_ms!r}"
            )
    return checked
