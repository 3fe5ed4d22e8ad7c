"""The public namespace is exactly ``routeproof.__all__``, with DESIGN.md's names in it."""

from __future__ import annotations

import pytest

import routeproof

DESIGN_NAMES = {
    "Router", "ChatRequest", "Message", "ResolvedModel", "TenantPolicy", "ProviderKind", "PrivacyTier",
    "ProviderResponse", "AttemptRecord", "AttemptStatus", "StreamEvent",
    "RouterError", "DeadlineExceeded", "AllProvidersFailed", "AuthError", "TerminalProviderError",
    "InvalidResponse", "BudgetExhausted", "NoEligibleProvider",
    "FAILOVER_BUDGET_S", "MAX_ATTEMPTS_PER_PROVIDER", "ATTEMPTS_CAP",
}  # fmt: skip


def test_all_is_the_public_namespace() -> None:
    """Every public name of the package is in __all__ and every __all__ name exists."""
    public = {name for name in dir(routeproof) if not name.startswith("_")}
    import types

    modules = {name for name in public if isinstance(getattr(routeproof, name), types.ModuleType)}
    assert set(routeproof.__all__) == public - modules - {"annotations"}  # the __future__ feature
    assert all(hasattr(routeproof, name) for name in routeproof.__all__)


def test_design_names_are_exported() -> None:
    """The names DESIGN.md promises other people's code can import."""
    assert set(routeproof.__all__) >= DESIGN_NAMES


def test_constants_have_the_contract_values() -> None:
    """The contract's numbers, defined once: 30 s budget, 3 attempts per provider, 16 records."""
    assert (routeproof.FAILOVER_BUDGET_S, routeproof.MAX_ATTEMPTS_PER_PROVIDER, routeproof.ATTEMPTS_CAP) == (
        30.0,
        3,
        16,
    )


MAX_TOP_LEVEL_NAMES = 55


def test_the_top_level_is_sized_for_callers() -> None:
    """At most 55 names at the top level (httpx exports 70, h11 23, stamina 12); the rest is in
    sub-namespaces (routeproof.providers, .stores, .testing), and configuration loads from the top."""
    assert len(routeproof.__all__) <= MAX_TOP_LEVEL_NAMES
    assert {"load_router", "load_config", "tenant_policy"} <= set(routeproof.__all__)


def test_moved_names_still_import_from_the_top_for_this_release() -> None:
    """A name that moved to a sub-namespace still imports from ``routeproof``, as the same object,
    without being public there (not in ``__all__``, not in ``dir()``); an unknown name still fails."""
    import importlib

    for name, home in routeproof._MOVED.items():
        assert getattr(routeproof, name) is getattr(importlib.import_module(home), name), name
        assert name in importlib.import_module(home).__all__, name
        assert name not in routeproof.__all__
        assert name not in dir(routeproof)
    assert {"LedgerStore", "HealthStore", "AttemptFailure", "Provider"} <= set(routeproof._MOVED)
    with pytest.raises(AttributeError, match="'NoSuchName'"):
        _ = routeproof.NoSuchName  # the point: it does not exist (typed: module __getattr__)
