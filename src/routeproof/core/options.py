"""Per-request controls beyond sampling: structured output and reasoning.

Frozen values checked when built; schemas are JSON text (compact, canonical where the parser made
them) so the values stay hashable and CrossHair-friendly.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from routeproof.core.frozen import as_enum, require_str, set_field

__all__ = [
    "EFFORT_BUDGET_TOKENS",
    "Reasoning",
    "ReasoningEffort",
    "ResponseFormat",
    "ResponseFormatKind",
    "ThinkingMode",
    "budget_for_effort",
    "effort_for_budget",
]


class ResponseFormatKind(enum.Enum):
    """What shape the answer must have: free text, any JSON object, or JSON matching a schema."""

    TEXT = "text"
    JSON_OBJECT = "json_object"
    JSON_SCHEMA = "json_schema"


@dataclass(frozen=True, slots=True, kw_only=True)
class ResponseFormat:
    """Structured output. For JSON_SCHEMA: ``name``, ``schema_json`` (JSON text), ``strict``, ``description``."""

    kind: ResponseFormatKind
    name: str = ""
    schema_json: str = ""
    strict: bool | None = None
    description: str = ""

    def __post_init__(self) -> None:
        set_field(self, "kind", as_enum(ResponseFormatKind, self.kind, "ResponseFormat.kind"))
        require_str(self.name, "ResponseFormat.name")
        require_str(self.schema_json, "ResponseFormat.schema_json")
        require_str(self.description, "ResponseFormat.description")
        if self.strict is not None and not isinstance(self.strict, bool):
            raise TypeError(f"ResponseFormat.strict must be a bool or None, got {self.strict!r}")
        if self.kind is ResponseFormatKind.JSON_SCHEMA:
            if not self.schema_json:
                raise ValueError("ResponseFormat.schema_json is required for json_schema")
        elif self.name or self.schema_json or self.strict is not None or self.description:
            raise ValueError(f"ResponseFormat of kind {self.kind.value!r} takes no name, schema, strict or description")


class ReasoningEffort(enum.Enum):
    """OpenAI's ``reasoning_effort`` (and Anthropic's ``output_config.effort``)."""

    NONE = "none"
    MINIMAL = "minimal"
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"
    XHIGH = "xhigh"
    MAX = "max"


class ThinkingMode(enum.Enum):
    """Anthropic's ``thinking.type``: a fixed budget, adaptive, or off."""

    ENABLED = "enabled"
    ADAPTIVE = "adaptive"
    DISABLED = "disabled"


@dataclass(frozen=True, slots=True, kw_only=True)
class Reasoning:
    """Reasoning controls: an OpenAI-style ``effort`` and/or an Anthropic-style ``thinking`` mode.

    ``budget_tokens`` is set exactly for ``ThinkingMode.ENABLED`` (>= 1024, Anthropic's minimum).
    """

    effort: ReasoningEffort | None = None
    thinking: ThinkingMode | None = None
    budget_tokens: int | None = None

    def __post_init__(self) -> None:
        if self.effort is not None:
            set_field(self, "effort", as_enum(ReasoningEffort, self.effort, "Reasoning.effort"))
        if self.thinking is not None:
            set_field(self, "thinking", as_enum(ThinkingMode, self.thinking, "Reasoning.thinking"))
        if self.effort is None and self.thinking is None:
            raise ValueError("Reasoning needs an effort or a thinking mode")
        budget = self.budget_tokens
        if (self.thinking is ThinkingMode.ENABLED) != (budget is not None):
            raise ValueError(f"Reasoning.budget_tokens is required exactly for thinking 'enabled', got {budget!r}")
        if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int) or budget < 1024):
            raise ValueError(f"Reasoning.budget_tokens must be an int >= 1024, got {budget!r}")


EFFORT_BUDGET_TOKENS: tuple[tuple[ReasoningEffort, int], ...] = (
    (ReasoningEffort.MINIMAL, 1024),
    (ReasoningEffort.LOW, 2048),
    (ReasoningEffort.MEDIUM, 8192),
    (ReasoningEffort.HIGH, 16384),
    (ReasoningEffort.XHIGH, 32768),
    (ReasoningEffort.MAX, 65536),
)
"""OpenAI ``reasoning_effort`` -> Anthropic ``thinking.budget_tokens`` (``none`` is thinking off).

A budget read back maps to the largest effort whose budget it reaches (below 1024: minimal)."""


def budget_for_effort(effort: ReasoningEffort) -> int | None:
    """The thinking budget for ``effort`` by :data:`EFFORT_BUDGET_TOKENS`; None for ``none`` (no thinking)."""
    for level, budget in EFFORT_BUDGET_TOKENS:
        if level is effort:
            return budget
    return None


def effort_for_budget(budget_tokens: int) -> ReasoningEffort:
    """The effort a thinking budget stands for: the largest level whose budget it reaches."""
    chosen = ReasoningEffort.MINIMAL
    for level, budget in EFFORT_BUDGET_TOKENS:
        if budget_tokens >= budget:
            chosen = level
    return chosen
