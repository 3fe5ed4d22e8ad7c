"""The frozen value types of routeproof's public API, importable from one place.

Everything here is a frozen dataclass, a tuple or an Enum, so that the pure core can reason about
it (CrossHair handles these best) and so that nothing a caller hands the router can be changed by it.
Time is integer milliseconds, money lives in :mod:`routeproof.core.ledger`. The types live in
modules by role; this module re-exports them all (every old import path keeps working):

- :mod:`routeproof.core.identity`: who a provider is (``ProviderKind``, ``ProviderName``, ``PrivacyTier``);
- :mod:`routeproof.core.messages`: what a caller asks (``ChatRequest``, ``Message``, content blocks, tools);
- :mod:`routeproof.core.responses`: what happened (attempt records, skips, failures, the response);
- :mod:`routeproof.core.policy`: where a call may go (``TenantPolicy``, ``FallbackProvider``, ``ResolvedModel``);
- :mod:`routeproof.core.stream_events`: the provider-neutral streaming events;
- :mod:`routeproof.core.frozen`: the construction checks and ``FrozenMap``.
"""

from __future__ import annotations

from routeproof.core.frozen import FrozenMap, frozen_mapping
from routeproof.core.identity import PrivacyTier, ProviderId, ProviderKind, ProviderName
from routeproof.core.messages import (
    TEMPERATURE_RANGE,
    ChatRequest,
    ContentBlock,
    Message,
    Role,
    TextBlock,
    ToolCall,
    ToolDefinition,
    ToolResultBlock,
    ToolUseBlock,
)
from routeproof.core.policy import FallbackProvider, ResolvedModel, TenantPolicy
from routeproof.core.responses import (
    AttemptFailure,
    AttemptFailureKind,
    AttemptRecord,
    AttemptStatus,
    CacheState,
    CacheStatus,
    ChainEntry,
    Choice,
    FinishReason,
    ProviderResponse,
    RetryReason,
    SkipRecord,
    Usage,
)
from routeproof.core.stream_events import (
    BlockStop,
    MessageStop,
    OpaqueBlock,
    StreamError,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolUseDelta,
    ToolUseStart,
)

__all__ = [
    "TEMPERATURE_RANGE",
    "AttemptFailure",
    "AttemptFailureKind",
    "AttemptRecord",
    "AttemptStatus",
    "BlockStop",
    "CacheState",
    "CacheStatus",
    "ChainEntry",
    "ChatRequest",
    "Choice",
    "ContentBlock",
    "FallbackProvider",
    "FinishReason",
    "FrozenMap",
    "Message",
    "MessageStop",
    "OpaqueBlock",
    "PrivacyTier",
    "ProviderId",
    "ProviderKind",
    "ProviderName",
    "ProviderResponse",
    "ResolvedModel",
    "RetryReason",
    "Role",
    "SkipRecord",
    "StreamError",
    "StreamEvent",
    "TenantPolicy",
    "TextBlock",
    "TextDelta",
    "ThinkingDelta",
    "ToolCall",
    "ToolDefinition",
    "ToolResultBlock",
    "ToolUseBlock",
    "ToolUseDelta",
    "ToolUseStart",
    "Usage",
    "frozen_mapping",
]
