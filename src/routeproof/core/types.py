"""The frozen value types of routeproof's public API.

Everything here is a frozen dataclass, a tuple or an Enum, so that the pure core can reason about
it (CrossHair handles these best) and so that nothing a caller hands the router can be changed by it.
Time is integer milliseconds, money lives in :mod:`routeproof.core.ledger`.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TypeVar

__all__ = [
    "AttemptFailure",
    "AttemptRecord",
    "AttemptStatus",
    "BlockStop",
    "CacheState",
    "CacheStatus",
    "ChainEntry",
    "ChatRequest",
    "Choice",
    "ContentBlock",
    "FailureKind",
    "FallbackProvider",
    "FinishReason",
    "FrozenMap",
    "Message",
    "MessageStop",
    "PrivacyTier",
    "ProviderKind",
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
    "ToolCall",
    "ToolDefinition",
    "ToolResultBlock",
    "ToolUseBlock",
    "ToolUseDelta",
    "ToolUseStart",
    "Usage",
    "frozen_mapping",
]


_K = TypeVar("_K")
_V = TypeVar("_V")
_E = TypeVar("_E", bound=enum.Enum)


# --- construction checks: plain code (not assert, not icontract), so ``python -O`` keeps them ------


def _require_str(value: object, where: str, *, empty: bool = True) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{where} must be a str, got {value!r} ({type(value).__name__})")
    if not empty and not value:
        raise ValueError(f"{where} must not be empty")
    return value


def _as_enum(cls: type[_E], value: object, where: str) -> _E:
    """``value`` as a member of ``cls``: a member as is, a string by value or (case-insensitive) name."""
    if isinstance(value, cls):
        return value
    if isinstance(value, str):
        for member in cls:
            if value == member.value or value.upper() == member.name:
                return member
    allowed = sorted(m.name.lower() if not isinstance(m.value, str) else m.value for m in cls)
    raise ValueError(f"{where} must be a {cls.__name__} or one of {allowed}, got {value!r}")


def _as_tuple(value: object, item: type | tuple[type, ...], where: str) -> tuple[object, ...]:
    """A tuple (or list, copied) whose items are all ``item``; a str is refused, not split."""
    if isinstance(value, str | bytes) or not isinstance(value, tuple | list):
        raise TypeError(f"{where} must be a tuple, got {value!r} ({type(value).__name__})")
    for index, element in enumerate(value):
        if not isinstance(element, item):
            names = item.__name__ if isinstance(item, type) else " | ".join(t.__name__ for t in item)
            raise TypeError(f"{where}[{index}] must be a {names}, got {element!r}")
    return tuple(value)


def _set(obj: object, name: str, value: object) -> None:
    object.__setattr__(obj, name, value)


class FrozenMap(Mapping[_K, _V]):
    """An immutable, hashable, picklable mapping (a read-only copy made at construction)."""

    __slots__ = ("_data",)

    def __init__(self, items: Mapping[_K, _V] | None = None) -> None:
        self._data: dict[_K, _V] = dict(items or {})

    def __getitem__(self, key: _K) -> _V:
        return self._data[key]

    def __iter__(self) -> Iterator[_K]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __hash__(self) -> int:
        return hash(frozenset(self._data.items()))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Mapping) and dict(self._data) == dict(other)

    def __repr__(self) -> str:
        return f"FrozenMap({self._data!r})"

    def __reduce__(self) -> tuple[type[FrozenMap[_K, _V]], tuple[dict[_K, _V]]]:
        return (type(self), (dict(self._data),))


def frozen_mapping(items: Mapping[str, str]) -> Mapping[str, str]:
    """A read-only copy of ``items``: later changes to the caller's dict cannot reach it."""
    return FrozenMap(items)


class ProviderKind(enum.Enum):
    """The provider families routeproof can call."""

    ANTHROPIC = "anthropic"
    OPENAI = "openai"
    OPENROUTER = "openrouter"
    OLLAMA = "ollama"
    VLLM = "vllm"
    BEDROCK = "bedrock"
    LOCAL = "local"
    VERTEX = "vertex"  # declared, refused until implemented (see is_supported)

    def as_metric_label(self) -> str:
        """The fixed lowercase metric label: never a repr, stable across renames of the member."""
        return _METRIC_LABELS[self]

    @property
    def is_supported(self) -> bool:
        """Whether routeproof ships a client for this kind (Vertex does not, yet)."""
        return self is not ProviderKind.VERTEX


_METRIC_LABELS: Mapping[ProviderKind, str] = MappingProxyType(
    {
        ProviderKind.ANTHROPIC: "anthropic",
        ProviderKind.OPENAI: "openai",
        ProviderKind.OPENROUTER: "openrouter",
        ProviderKind.OLLAMA: "ollama",
        ProviderKind.VLLM: "vllm",
        ProviderKind.BEDROCK: "bedrock",
        ProviderKind.LOCAL: "local",
        ProviderKind.VERTEX: "vertex",
    }
)


class PrivacyTier(enum.IntEnum):
    """How far a request's data may travel; a total order Sovereign < Private < Standard."""

    SOVEREIGN = 0
    PRIVATE = 1
    STANDARD = 2


class AttemptStatus(enum.Enum):
    """What became of one attempt (seed 000, §3): 11 statuses."""

    SUCCEEDED = "succeeded"
    RETRIED_AFTER_5XX = "retried_after_5xx"
    RETRIED_AFTER_429 = "retried_after_429"
    RETRIED_AFTER_TIMEOUT = "retried_after_timeout"
    RETRIED_AFTER_CONN_RESET = "retried_after_conn_reset"
    FAILED_OVER = "failed_over"
    TERMINAL_400 = "terminal_400"
    TERMINAL_404 = "terminal_404"
    TERMINAL_AUTH = "terminal_auth"
    TIMEOUT_BEFORE_FIRST_TOKEN = "timeout_before_first_token"
    DEADLINE_EXCEEDED_MID_CALL = "deadline_exceeded_mid_call"


class RetryReason(enum.Enum):
    """Why an attempt was retried; the closed label set of ``ai_router_retries_total``."""

    FIVE_XX = "5xx"
    TOO_MANY_REQUESTS = "429"
    TIMEOUT = "timeout"
    CONN_RESET = "conn_reset"


class FinishReason(enum.Enum):
    """Why the model stopped, in routeproof's provider-neutral vocabulary."""

    STOP = "stop"
    LENGTH = "length"
    TOOL_CALLS = "tool_calls"
    CONTENT_FILTER = "content_filter"
    OTHER = "other"


class CacheStatus(enum.Enum):
    """Whether the provider's prompt cache was used."""

    NONE = "none"
    HIT = "hit"
    MISS = "miss"


@dataclass(frozen=True, slots=True, kw_only=True)
class CacheState:
    """Prompt-cache outcome of one response; ``saved_tokens`` is non-zero only on a hit."""

    status: CacheStatus = CacheStatus.NONE
    saved_tokens: int = 0

    def __post_init__(self) -> None:
        if self.saved_tokens < 0:
            raise ValueError(f"saved_tokens must be >= 0, got {self.saved_tokens!r}")
        if self.status is not CacheStatus.HIT and self.saved_tokens:
            raise ValueError(f"saved_tokens={self.saved_tokens!r} without a cache hit")


@dataclass(frozen=True, slots=True, kw_only=True)
class Usage:
    """Token counts of one response. Cache tokens are counted apart from ``prompt_tokens``."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_input_tokens: int = 0  # tokens read from the prompt cache
    cache_creation_tokens: int = 0  # tokens written to the prompt cache

    def __post_init__(self) -> None:
        for name in ("prompt_tokens", "completion_tokens", "cached_input_tokens", "cache_creation_tokens"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"Usage.{name} must be a non-negative int, got {value!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCall:
    """A tool invocation by the model. ``arguments_json`` is the JSON text of an object."""

    id: str
    name: str
    arguments_json: str = "{}"


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolDefinition:
    """A tool the model may call; ``input_schema_json`` is the JSON Schema as JSON text."""

    name: str
    description: str = ""
    input_schema_json: str = '{"type": "object"}'


class Role(enum.Enum):
    """Who speaks a message. The system prompt is not a message: it is ``ChatRequest.system``."""

    USER = "user"
    ASSISTANT = "assistant"


@dataclass(frozen=True, slots=True, kw_only=True)
class TextBlock:
    """Plain text content."""

    text: str

    def __post_init__(self) -> None:
        _require_str(self.text, "TextBlock.text")


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolUseBlock:
    """An assistant's tool call inside a message."""

    id: str
    name: str
    input_json: str = "{}"

    def __post_init__(self) -> None:
        _require_str(self.id, "ToolUseBlock.id")
        _require_str(self.name, "ToolUseBlock.name")
        _require_str(self.input_json, "ToolUseBlock.input_json")


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResultBlock:
    """A user turn's answer to one tool call."""

    tool_use_id: str
    content: str
    is_error: bool = False

    def __post_init__(self) -> None:
        _require_str(self.tool_use_id, "ToolResultBlock.tool_use_id")
        _require_str(self.content, "ToolResultBlock.content")
        if not isinstance(self.is_error, bool):
            raise TypeError(f"ToolResultBlock.is_error must be a bool, got {self.is_error!r}")


ContentBlock = TextBlock | ToolUseBlock | ToolResultBlock


@dataclass(frozen=True, slots=True, kw_only=True)
class Message:
    """One turn of the conversation: a role and at least one content block."""

    role: Role
    content: tuple[ContentBlock, ...]

    def __post_init__(self) -> None:
        _set(self, "role", _as_enum(Role, self.role, "Message.role"))
        _set(self, "content", _as_tuple(self.content, (TextBlock, ToolUseBlock, ToolResultBlock), "Message.content"))

    @classmethod
    def user(cls, text: str) -> Message:
        """A user turn with one text block."""
        return cls(role=Role.USER, content=(TextBlock(text=text),))

    @classmethod
    def assistant(cls, text: str) -> Message:
        """An assistant turn with one text block."""
        return cls(role=Role.ASSISTANT, content=(TextBlock(text=text),))


@dataclass(frozen=True, slots=True, kw_only=True)
class ChatRequest:
    """A provider-neutral chat request (Anthropic Messages semantics)."""

    messages: tuple[Message, ...]
    max_tokens: int = 1024
    system: str | None = None
    tools: tuple[ToolDefinition, ...] = ()
    temperature: float | None = None
    stop_sequences: tuple[str, ...] = ()
    alias: str = ""  # the model alias the caller asked for (TenantPolicy.aliases key)
    # A parameter the model does not accept (core/capabilities.py) is left out and named in
    # ProviderResponse.dropped_parameters; with strict_parameters the provider is skipped instead.
    strict_parameters: bool = False
    top_p: float | None = None  # nucleus sampling, in [0, 1]; left out for a model that rejects it
    tool_choice: tuple[str, str] | None = None  # Anthropic form: ("auto"|"any"|"none", "") or ("tool", name)

    def __post_init__(self) -> None:
        _set(self, "messages", _as_tuple(self.messages, Message, "ChatRequest.messages"))
        if not self.messages:
            raise ValueError("ChatRequest.messages must not be empty")
        for index, message in enumerate(self.messages):
            if not message.content:
                raise ValueError(f"ChatRequest.messages[{index}] has no content")
        if isinstance(self.max_tokens, bool) or not isinstance(self.max_tokens, int):
            raise TypeError(f"ChatRequest.max_tokens must be an int, got {self.max_tokens!r}")
        if self.max_tokens <= 0:
            raise ValueError(f"ChatRequest.max_tokens must be > 0, got {self.max_tokens!r}")
        if self.system is not None:
            _require_str(self.system, "ChatRequest.system")
        _set(self, "tools", _as_tuple(self.tools, ToolDefinition, "ChatRequest.tools"))
        _check_temperature(self.temperature)
        if isinstance(self.stop_sequences, str):
            raise TypeError(
                f"ChatRequest.stop_sequences must be a tuple of str, got the str {self.stop_sequences!r} "
                f"(it would be split into characters); pass ({self.stop_sequences!r},)"
            )
        _set(self, "stop_sequences", _as_tuple(self.stop_sequences, str, "ChatRequest.stop_sequences"))
        _require_str(self.alias, "ChatRequest.alias")
        _check_sampling_extras(self.top_p, self.tool_choice)


TOOL_CHOICE_KINDS = ("auto", "any", "none", "tool")
"""``ChatRequest.tool_choice`` kinds (Anthropic's names; OpenAI's "required" is "any")."""


def _check_sampling_extras(top_p: object, tool_choice: object) -> None:
    if top_p is not None:
        if isinstance(top_p, bool) or not isinstance(top_p, int | float) or not math.isfinite(top_p):
            raise TypeError(f"ChatRequest.top_p must be a finite number or None, got {top_p!r}")
        if not 0 <= top_p <= 1:
            raise ValueError(f"ChatRequest.top_p must be in [0, 1], got {top_p!r}")
    if tool_choice is not None and not (
        isinstance(tool_choice, tuple)
        and len(tool_choice) == 2
        and tool_choice[0] in TOOL_CHOICE_KINDS
        and isinstance(tool_choice[1], str)
        and (tool_choice[0] == "tool") == bool(tool_choice[1])
    ):
        raise ValueError(
            f"ChatRequest.tool_choice must be (kind, tool name) with kind in {TOOL_CHOICE_KINDS} and a name "
            f"exactly for 'tool', got {tool_choice!r}"
        )


TEMPERATURE_RANGE = (0.0, 2.0)
"""The widest sampling temperature any provider accepts (OpenAI's 0..2; Anthropic's is 0..1)."""


def _check_temperature(value: object) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"ChatRequest.temperature must be a number or None, got {value!r}")
    if not math.isfinite(value):
        raise ValueError(f"ChatRequest.temperature must be finite, got {value!r}")
    low, high = TEMPERATURE_RANGE
    if not low <= value <= high:
        raise ValueError(f"ChatRequest.temperature must be in [{low}, {high}], got {value!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class Choice:
    """One candidate answer."""

    index: int = 0
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reason: FinishReason = FinishReason.STOP


@dataclass(frozen=True, slots=True, kw_only=True)
class AttemptRecord:
    """What one attempt did, for the audit row (seed 000 §1.12)."""

    provider: ProviderKind
    model: str
    attempt_num: int  # 1..=3 per provider
    fallback_position: int  # index in the call's chain; the primary is 0
    status: AttemptStatus
    elapsed_ms: int
    http_status: int | None = None  # None when no HTTP status was seen (timeouts, resets)
    retry_reason: RetryReason | None = None
    first_token_ms: int | None = None  # streaming only: time to first token of this attempt


@dataclass(frozen=True, slots=True, kw_only=True)
class ProviderResponse:
    """One normalised answer, with the full attempt history."""

    id: str
    usage: Usage
    choices: tuple[Choice, ...]
    finish_reason: FinishReason
    latency_ms: int = 0
    cache_state: CacheState = field(default_factory=CacheState)
    attempts: tuple[AttemptRecord, ...] = ()
    provider: ProviderKind | None = None
    model: str = ""
    skipped: tuple[SkipRecord, ...] = ()  # chain entries left out (tier, configuration, health, budget)
    dropped_parameters: tuple[str, ...] = ()  # request parameters the model does not accept, left out
    cost_pico_usd: int | None = None  # this call's exact cost (1e-12 USD); None when the model is unpriced
    budget_turn_warning: bool = False  # the worst case exceeded the per-turn warning threshold (seed 003)


@dataclass(frozen=True, slots=True, kw_only=True)
class ResolvedModel:
    """The provider and model an alias resolved to. Build it with ``core.alias.resolve``."""

    provider: ProviderKind
    model: str
    alias: str
    fallback_position: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class FallbackProvider:
    """One entry of a tenant's fallback chain: a provider kind and its alias -> model map."""

    kind: ProviderKind
    model_alias_map: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _set(self, "kind", _as_enum(ProviderKind, self.kind, "FallbackProvider.kind"))
        if not isinstance(self.model_alias_map, Mapping):
            raise TypeError(f"FallbackProvider.model_alias_map must be a mapping, got {self.model_alias_map!r}")
        for alias, model in self.model_alias_map.items():
            _require_str(alias, "FallbackProvider.model_alias_map key")
            _require_str(model, f"FallbackProvider.model_alias_map[{alias!r}]", empty=False)
        object.__setattr__(self, "model_alias_map", frozen_mapping(self.model_alias_map))

    def model_for(self, alias: str) -> str | None:
        """The model this provider serves for ``alias``, or None when it lacks the alias."""
        return self.model_alias_map.get(alias)


@dataclass(frozen=True, slots=True, kw_only=True)
class TenantPolicy:
    """A tenant's routing policy: where aliases point first, where to fall back, how private."""

    tenant_id: str = "default"
    privacy_tier: PrivacyTier = PrivacyTier.STANDARD
    primary: Mapping[str, tuple[ProviderKind, str]] = field(default_factory=dict)
    fallback_chain: tuple[FallbackProvider, ...] = ()
    context_window_failover: bool = False  # opt-in; never under the Sovereign tier

    def __post_init__(self) -> None:
        _require_str(self.tenant_id, "TenantPolicy.tenant_id")
        _set(self, "privacy_tier", _as_enum(PrivacyTier, self.privacy_tier, "TenantPolicy.privacy_tier"))
        if not isinstance(self.primary, Mapping):
            raise TypeError(f"TenantPolicy.primary must be a mapping alias -> (kind, model), got {self.primary!r}")
        primary: dict[str, tuple[ProviderKind, str]] = {}
        for alias, target in self.primary.items():
            where = f"TenantPolicy.primary[{alias!r}]"
            _require_str(alias, "TenantPolicy.primary key")
            if not isinstance(target, tuple | list) or len(target) != 2:
                raise TypeError(f"{where} must be a (ProviderKind, model) pair, got {target!r}")
            kind = _as_enum(ProviderKind, target[0], f"{where}[0]")
            primary[alias] = (kind, _require_str(target[1], f"{where}[1]", empty=False))
        object.__setattr__(self, "primary", FrozenMap(primary))
        _set(self, "fallback_chain", _as_tuple(self.fallback_chain, FallbackProvider, "TenantPolicy.fallback_chain"))
        if not isinstance(self.context_window_failover, bool):
            raise TypeError(
                f"TenantPolicy.context_window_failover must be a bool, got {self.context_window_failover!r}"
            )


@dataclass(frozen=True, slots=True, kw_only=True)
class ChainEntry:
    """One position of a call's provider chain: who is called, for which model, at which index."""

    provider: ProviderKind
    model: str
    fallback_position: int


@dataclass(frozen=True, slots=True, kw_only=True)
class SkipRecord:
    """A chain entry the call did not try, and why (tier, not configured, cooling, budget)."""

    provider: ProviderKind
    model: str
    fallback_position: int
    reason: str


class FailureKind(enum.Enum):
    """How an attempt failed, as seen at the provider boundary (the kernel's classify input)."""

    HTTP_STATUS = "http_status"  # the provider answered with a non-2xx status
    CONN_RESET = "conn_reset"  # connection reset or closed mid-request / mid-body
    CONN_REFUSED = "conn_refused"  # nobody listening
    CONNECT_TIMEOUT = "connect_timeout"
    READ_TIMEOUT = "read_timeout"
    ATTEMPT_TIMEOUT = "attempt_timeout"  # the per-attempt timeout the kernel gave elapsed
    DEADLINE = "deadline"  # the caller's deadline elapsed mid-call
    INVALID_RESPONSE = "invalid_response"  # 2xx whose body is not the documented shape
    CONTEXT_OVERFLOW = "context_overflow"  # 400 "context length exceeded"
    STREAM_ERROR = "stream_error"  # an in-band error event or malformed SSE before the first token


@dataclass(frozen=True, slots=True, kw_only=True)
class AttemptFailure:
    """Why one attempt did not produce a response; made in exactly one place per provider."""

    kind: FailureKind
    http_status: int | None = None
    retry_after_ms: int | None = None  # parsed Retry-After, None when absent or unusable
    message: str = ""
    billed_usage: Usage | None = None  # what the provider says it billed for the failed attempt


# --- streaming events (provider-neutral) ---------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class TextDelta:
    """A piece of answer text."""

    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolUseStart:
    """The model starts a tool call."""

    id: str
    name: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolUseDelta:
    """A piece of a tool call's JSON arguments."""

    id: str
    partial_json: str


@dataclass(frozen=True, slots=True, kw_only=True)
class BlockStop:
    """A content block ended."""


@dataclass(frozen=True, slots=True, kw_only=True)
class MessageStop:
    """The message ended cleanly; carries the stop reason and the usage."""

    stop_reason: FinishReason
    usage: Usage


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamError:
    """The stream failed; no MessageStop follows."""

    message: str


StreamEvent = TextDelta | ToolUseStart | ToolUseDelta | BlockStop | MessageStop | StreamError
