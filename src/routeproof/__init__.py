"""routeproof: a verification-first LLM router; the reference implementation of provider-routing-v1.

What a caller of the router needs is here (at most 55 names, ``tests/structure``): the Router, its
three option values (``LimitOptions``, ``BudgetOptions``, ``HealthOptions``), requests and messages,
responses and attempt records, stream events, errors, the contract's constants, deadlines and
configuration loading. The rest is in sub-namespaces, each with its own ``__all__``:
:mod:`routeproof.providers` (provider clients, and what a provider writer needs),
:mod:`routeproof.stores` (ledger and health stores, the budget limits and health config they keep,
the state they hold, prices),
:mod:`routeproof.testing` (the test kit).
"""

from __future__ import annotations

import importlib as _importlib
import typing as _typing

from routeproof._version import __version__ as __version__
from routeproof.config import load_config
from routeproof.core.constants import ATTEMPTS_CAP, FAILOVER_BUDGET_S, MAX_ATTEMPTS_PER_PROVIDER
from routeproof.core.kernel import BackoffPolicy
from routeproof.core.routing import CoolingPolicy, resolve
from routeproof.core.types import (
    AttemptRecord,
    AttemptStatus,
    BlockStop,
    ChatRequest,
    Choice,
    FallbackProvider,
    FinishReason,
    Message,
    MessageStop,
    PrivacyTier,
    ProviderKind,
    ProviderName,
    ProviderResponse,
    ResolvedModel,
    RetryReason,
    Role,
    SkipRecord,
    StreamError,
    StreamEvent,
    TenantPolicy,
    TextBlock,
    TextDelta,
    ToolCall,
    ToolDefinition,
    ToolResultBlock,
    ToolUseBlock,
    ToolUseDelta,
    ToolUseStart,
    Usage,
)
from routeproof.deadline import deadline_in
from routeproof.errors import (
    AllProvidersFailed,
    AuthError,
    BudgetExhausted,
    ConfigError,
    DeadlineExceeded,
    InvalidResponse,
    NoEligibleProvider,
    RouterError,
    TerminalProviderError,
    UnknownAlias,
)
from routeproof.factory import load_router, tenant_policy
from routeproof.observe import RouterMetrics
from routeproof.router import Router
from routeproof.router_options import BudgetOptions, HealthOptions, LimitOptions
from routeproof.streaming import ProviderStream

__all__ = [
    "ATTEMPTS_CAP",
    "FAILOVER_BUDGET_S",
    "MAX_ATTEMPTS_PER_PROVIDER",
    "AllProvidersFailed",
    "AttemptRecord",
    "AttemptStatus",
    "AuthError",
    "BackoffPolicy",
    "BlockStop",
    "BudgetExhausted",
    "BudgetOptions",
    "ChatRequest",
    "Choice",
    "ConfigError",
    "CoolingPolicy",
    "DeadlineExceeded",
    "FallbackProvider",
    "FinishReason",
    "HealthOptions",
    "InvalidResponse",
    "LimitOptions",
    "Message",
    "MessageStop",
    "NoEligibleProvider",
    "PrivacyTier",
    "ProviderKind",
    "ProviderName",
    "ProviderResponse",
    "ProviderStream",
    "ResolvedModel",
    "RetryReason",
    "Role",
    "Router",
    "RouterError",
    "RouterMetrics",
    "SkipRecord",
    "StreamError",
    "StreamEvent",
    "TenantPolicy",
    "TerminalProviderError",
    "TextBlock",
    "TextDelta",
    "ToolCall",
    "ToolDefinition",
    "ToolResultBlock",
    "ToolUseBlock",
    "ToolUseDelta",
    "ToolUseStart",
    "UnknownAlias",
    "Usage",
    "deadline_in",
    "load_config",
    "load_router",
    "resolve",
    "tenant_policy",
]

# Names that left the top level for a sub-namespace in 0.2.0-dev: still importable from here for
# this release (not in __all__, not in dir(), no warning, so existing code keeps working); removed later.
_MOVED: dict[str, str] = {
    "Account": "routeproof.stores",
    "AttemptFailure": "routeproof.providers",
    "AttemptFailureKind": "routeproof.providers",
    "BudgetLimits": "routeproof.stores",
    "BudgetRefusal": "routeproof.stores",
    "BudgetScope": "routeproof.stores",
    "CacheState": "routeproof.providers",
    "CacheStatus": "routeproof.providers",
    "ContentBlock": "routeproof.providers",
    "FrozenMap": "routeproof.providers",
    "HealthConfig": "routeproof.stores",
    "HealthEffect": "routeproof.stores",
    "HealthState": "routeproof.stores",
    "HealthStore": "routeproof.stores",
    "LatencyConfig": "routeproof.stores",
    "LatencyState": "routeproof.stores",
    "LedgerState": "routeproof.stores",
    "LedgerStore": "routeproof.stores",
    "LedgerTotals": "routeproof.stores",
    "LocalCongestion": "routeproof.providers",
    "MemoryHealthStore": "routeproof.stores",
    "Price": "routeproof.stores",
    "PricingTable": "routeproof.stores",
    "Provider": "routeproof.providers",
    "ProviderCallFailed": "routeproof.providers",
    "ProviderHTTPError": "routeproof.providers",
    "ProviderHealth": "routeproof.stores",
    "Reservation": "routeproof.stores",
    "Settled": "routeproof.stores",
    "TranslationError": "routeproof.providers",
}

if _typing.TYPE_CHECKING:  # the moved names, typed for mypy (``as``: an explicit re-export for the checker only)
    from routeproof.providers import AttemptFailure as AttemptFailure
    from routeproof.providers import AttemptFailureKind as AttemptFailureKind
    from routeproof.providers import CacheState as CacheState
    from routeproof.providers import CacheStatus as CacheStatus
    from routeproof.providers import ContentBlock as ContentBlock
    from routeproof.providers import FrozenMap as FrozenMap
    from routeproof.providers import LocalCongestion as LocalCongestion
    from routeproof.providers import Provider as Provider
    from routeproof.providers import ProviderCallFailed as ProviderCallFailed
    from routeproof.providers import ProviderHTTPError as ProviderHTTPError
    from routeproof.providers import TranslationError as TranslationError
    from routeproof.stores import Account as Account
    from routeproof.stores import BudgetLimits as BudgetLimits
    from routeproof.stores import BudgetRefusal as BudgetRefusal
    from routeproof.stores import BudgetScope as BudgetScope
    from routeproof.stores import HealthConfig as HealthConfig
    from routeproof.stores import HealthEffect as HealthEffect
    from routeproof.stores import HealthState as HealthState
    from routeproof.stores import HealthStore as HealthStore
    from routeproof.stores import LatencyConfig as LatencyConfig
    from routeproof.stores import LatencyState as LatencyState
    from routeproof.stores import LedgerState as LedgerState
    from routeproof.stores import LedgerStore as LedgerStore
    from routeproof.stores import LedgerTotals as LedgerTotals
    from routeproof.stores import MemoryHealthStore as MemoryHealthStore
    from routeproof.stores import Price as Price
    from routeproof.stores import PricingTable as PricingTable
    from routeproof.stores import ProviderHealth as ProviderHealth
    from routeproof.stores import Reservation as Reservation
    from routeproof.stores import Settled as Settled


def __getattr__(name: str) -> object:
    """A moved name, from its new home (see ``_MOVED``); anything else is an AttributeError."""
    home = _MOVED.get(name)
    if home is None:
        raise AttributeError(f"module 'routeproof' has no attribute {name!r}")
    return getattr(_importlib.import_module(home), name)
