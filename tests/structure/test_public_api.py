"""The public namespace is exactly ``routeproof.__all__``, with DESIGN.md's names in it."""

from __future__ import annotations

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
