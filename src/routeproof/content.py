"""The content model beyond plain text, and the wire-protocol names: ``from routeproof.content import ...``.

Kept out of ``routeproof.__all__`` (the top level stays small): the blocks, options and protocol
values a request can carry, and the field table saying what each protocol's fields become in another.
"""

from __future__ import annotations

from routeproof.core.blocks import (
    CacheControl,
    CacheTTL,
    DocumentBlock,
    ImageBlock,
    RedactedThinkingBlock,
    SourceKind,
    ThinkingBlock,
)
from routeproof.core.formats.field_table import FieldRow, Treatment, treatment_of
from routeproof.core.messages import WireFormat, WireOrigin
from routeproof.core.options import (
    EFFORT_BUDGET_TOKENS,
    Reasoning,
    ReasoningEffort,
    ResponseFormat,
    ResponseFormatKind,
    ThinkingMode,
)
from routeproof.core.stream_events import OpaqueBlock, ThinkingDelta

__all__ = [
    "EFFORT_BUDGET_TOKENS",
    "CacheControl",
    "CacheTTL",
    "DocumentBlock",
    "FieldRow",
    "ImageBlock",
    "OpaqueBlock",
    "Reasoning",
    "ReasoningEffort",
    "RedactedThinkingBlock",
    "ResponseFormat",
    "ResponseFormatKind",
    "SourceKind",
    "ThinkingBlock",
    "ThinkingDelta",
    "ThinkingMode",
    "Treatment",
    "WireFormat",
    "WireOrigin",
    "treatment_of",
]
