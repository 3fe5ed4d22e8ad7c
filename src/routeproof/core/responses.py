"""What happened: attempt statuses and records, skips, failures, usage and the normalised response."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from routeproof.core.blocks import RedactedThinkingBlock, ThinkingBlock
from routeproof.core.identity import ProviderId
from routeproof.core.messages import ToolCall

__all__ = [
    "AttemptFailure",
    "AttemptFailureKind",
    "AttemptRecord",
    "AttemptStatus",
    "CacheState",
    "CacheStatus",
    "ChainEntry",
    "Choice",
    "FinishReason",
    "ProviderResponse",
    "RetryReason",
    "SkipRecord",
    "Usage",
]


class AttemptStatus(enum.Enum):
    """What became of one attempt (seed 000, §3): its 11 statuses, and routeproof's ``HEDGE_CANCELLED``."""

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
    HEDGE_CANCELLED = "hedge_cancelled"  # issue 32: the slower of a hedged pair, cancelled (billed as sent)


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
    # Parts of the counts above, as the providers report them (and bill them: core/pricing.py):
    reasoning_tokens: int = 0  # of completion_tokens: thinking / reasoning output (billed as output)
    cache_creation_1h_tokens: int = 0  # of cache_creation_tokens: written with the 1-hour TTL
    image_input_tokens: int = 0  # of prompt_tokens: image input
    document_input_tokens: int = 0  # of prompt_tokens: document (PDF) input
    # The service tier the provider's answer says it used (OpenAI "default"/"flex"/"priority",
    # Anthropic usage.service_tier); it picks the price (core/pricing.py Price.for_tier). None: not said.
    service_tier: str | None = None

    def __post_init__(self) -> None:
        if self.service_tier is not None and not isinstance(self.service_tier, str):
            raise ValueError(f"Usage.service_tier must be a str or None, got {self.service_tier!r}")
        for name in _USAGE_COUNTS:
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"Usage.{name} must be a non-negative int, got {value!r}")
        if self.reasoning_tokens > self.completion_tokens:
            raise ValueError(f"Usage.reasoning_tokens={self.reasoning_tokens!r} > completion_tokens")
        if self.cache_creation_1h_tokens > self.cache_creation_tokens:
            raise ValueError(
                f"Usage.cache_creation_1h_tokens={self.cache_creation_1h_tokens!r} > cache_creation_tokens"
            )
        if self.image_input_tokens + self.document_input_tokens > self.prompt_tokens:
            raise ValueError(
                f"Usage.image_input_tokens + document_input_tokens = "
                f"{self.image_input_tokens + self.document_input_tokens!r} > prompt_tokens"
            )


_USAGE_COUNTS = (
    "prompt_tokens",
    "completion_tokens",
    "cached_input_tokens",
    "cache_creation_tokens",
    "reasoning_tokens",
    "cache_creation_1h_tokens",
    "image_input_tokens",
    "document_input_tokens",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Choice:
    """One candidate answer."""

    index: int = 0
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reason: FinishReason = FinishReason.STOP
    # The model's reasoning as the provider returned it (Anthropic thinking, Bedrock reasoningContent):
    # signatures byte-exact, so a caller can send the blocks back in its next turn.
    thinking: tuple[ThinkingBlock | RedactedThinkingBlock, ...] = ()
    refusal: str | None = None  # OpenAI's refusal text (``content`` carries it too, for text-only callers)
    # OpenAI's message.annotations (URL citations of a search model), compact JSON; None: none given
    annotations_json: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class AttemptRecord:
    """What one attempt did, for the audit row (seed 000 §1.12)."""

    provider: ProviderId
    model: str
    attempt_num: int  # 1..=3 per provider
    fallback_position: int  # index in the call's chain; the primary is 0
    status: AttemptStatus
    elapsed_ms: int
    http_status: int | None = None  # None when no HTTP status was seen (timeouts, resets)
    retry_reason: RetryReason | None = None
    first_token_ms: int | None = None  # streaming only: time to first token of this attempt
    retry_throttled: bool = False  # retryable, but the provider's retry budget was spent: failed over


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
    provider: ProviderId | None = None
    model: str = ""
    skipped: tuple[SkipRecord, ...] = ()  # chain entries left out (tier, configuration, health, budget)
    dropped_parameters: tuple[str, ...] = ()  # request parameters the model does not accept, left out
    cost_pico_usd: int | None = None  # this call's exact cost (1e-12 USD); None when the model is unpriced
    budget_turn_warning: bool = False  # the worst case exceeded the per-turn warning threshold (seed 003)
    # Same-protocol passthrough only: the provider's own answer body (its JSON text as written when that
    # is a UTF-8 object, else re-encoded), so a caller of that protocol gets every field of it (reasoning
    # tokens, logprobs, thinking signatures, annotations ...).
    wire_body_json: str | None = None

    def with_call(
        self,
        *,
        attempts: tuple[AttemptRecord, ...],
        latency_ms: int,
        provider: ProviderId,
        model: str,
        skipped: tuple[SkipRecord, ...],
        cost_pico_usd: int | None,
        budget_turn_warning: bool,
    ) -> ProviderResponse:
        """This answer with what the call learned (``dataclasses.replace`` of those fields), every
        field named: replace's field loop ran once per routed call (issue 25)."""
        return ProviderResponse(
            id=self.id,
            usage=self.usage,
            choices=self.choices,
            finish_reason=self.finish_reason,
            latency_ms=latency_ms,
            cache_state=self.cache_state,
            attempts=attempts,
            provider=provider,
            model=model,
            skipped=skipped,
            dropped_parameters=self.dropped_parameters,
            cost_pico_usd=cost_pico_usd,
            budget_turn_warning=budget_turn_warning,
            wire_body_json=self.wire_body_json,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ChainEntry:
    """One position of a call's provider chain: who is called, for which model, at which index."""

    provider: ProviderId
    model: str
    fallback_position: int


@dataclass(frozen=True, slots=True, kw_only=True)
class SkipRecord:
    """A chain entry the call did not try, and why (tier, not configured, cooling, budget)."""

    provider: ProviderId
    model: str
    fallback_position: int
    reason: str


class AttemptFailureKind(enum.Enum):
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

    kind: AttemptFailureKind
    http_status: int | None = None
    retry_after_ms: int | None = None  # parsed Retry-After, None when absent or unusable
    message: str = ""
    billed_usage: Usage | None = None  # what the provider says it billed for the failed attempt
