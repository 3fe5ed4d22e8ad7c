"""routeproof: a verification-first reference implementation of provider-routing-v1."""

from __future__ import annotations

from routeproof.core.constants import ATTEMPTS_CAP, FAILOVER_BUDGET_S, MAX_ATTEMPTS_PER_PROVIDER
from routeproof.core.routing import CoolingPolicy, resolve
from routeproof.core.types import (
    AttemptRecord,
    AttemptStatus,
    ChatRequest,
    Message,
    PrivacyTier,
    ProviderKind,
    ProviderResponse,
    ResolvedModel,
    StreamEvent,
    TenantPolicy,
)
from routeproof.deadline import deadline_in
from routeproof.errors import (
    AllProvidersFailed,
    AuthError,
    BudgetExhausted,
    DeadlineExceeded,
    InvalidResponse,
    NoEligibleProvider,
    RouterError,
    TerminalProviderError,
    UnknownAlias,
)
from routeproof.router import Router
from routeproof.streaming import ProviderStream

__all__ = [
    "ATTEMPTS_CAP",
    "FAILOVER_BUDGET_S",
    "MAX_ATTEMPTS_PER_PROVIDER",
    "AllProvidersFailed",
    "AttemptRecord",
    "AttemptStatus",
    "AuthError",
    "BudgetExhausted",
    "ChatRequest",
    "CoolingPolicy",
    "DeadlineExceeded",
    "InvalidResponse",
    "Message",
    "NoEligibleProvider",
    "PrivacyTier",
    "ProviderKind",
    "ProviderResponse",
    "ProviderStream",
    "ResolvedModel",
    "Router",
    "RouterError",
    "StreamEvent",
    "TenantPolicy",
    "TerminalProviderError",
    "UnknownAlias",
    "deadline_in",
    "resolve",
]
