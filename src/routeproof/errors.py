"""The RouterError hierarchy, re-exported from ``routeproof.core.errors`` where it is defined.

The errors live at the bottom of core (as h11's ``_util`` errors do) so pure modules can raise them
without importing the shell; this module keeps every old ``from routeproof.errors import ...`` working.
"""

from __future__ import annotations

from routeproof.core.errors import (
    AllProvidersFailed,
    AuthError,
    BudgetExhausted,
    ConfigError,
    DeadlineExceeded,
    InvalidResponse,
    LocalCongestion,
    NoEligibleProvider,
    ProviderCallFailed,
    ProviderHTTPError,
    RouterError,
    TerminalProviderError,
    TranslationError,
    UnknownAlias,
)

__all__ = [
    "AllProvidersFailed",
    "AuthError",
    "BudgetExhausted",
    "ConfigError",
    "DeadlineExceeded",
    "InvalidResponse",
    "LocalCongestion",
    "NoEligibleProvider",
    "ProviderCallFailed",
    "ProviderHTTPError",
    "RouterError",
    "TerminalProviderError",
    "TranslationError",
    "UnknownAlias",
]
