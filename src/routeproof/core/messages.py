"""What a caller asks: messages, content blocks, tools and the provider-neutral request."""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from routeproof.core.blocks import (
    CacheControl,
    DocumentBlock,
    ImageBlock,
    RedactedThinkingBlock,
    ThinkingBlock,
    check_cache_control,
)
from routeproof.core.frozen import as_enum, as_tuple, require_str, set_field
from routeproof.core.options import Reasoning, ResponseFormat

__all__ = [
    "SYSTEM_JOINER",
    "TEMPERATURE_RANGE",
    "TOOL_CHOICE_KINDS",
    "ChatRequest",
    "ContentBlock",
    "Message",
    "Role",
    "TextBlock",
    "ToolCall",
    "ToolDefinition",
    "ToolResultBlock",
    "ToolUseBlock",
    "WireFormat",
    "WireOrigin",
]


class WireFormat(enum.Enum):
    """A wire protocol a request arrives in or is sent out in (Bedrock Converse is a target only)."""

    OPENAI_CHAT = "openai-chat"
    ANTHROPIC_MESSAGES = "anthropic-messages"
    OPENAI_RESPONSES = "openai-responses"
    BEDROCK_CONVERSE = "bedrock-converse"


@dataclass(frozen=True, slots=True, kw_only=True)
class WireOrigin:
    """The caller's own request as received, kept so a same-protocol upstream gets it verbatim.

    ``body_json`` is the caller's JSON body as compact text (what same-protocol passthrough starts
    from); ``headers`` are the feature headers the gateway let through, names lower-case;
    ``untranslated`` the paths its parse did not carry (``WireExtras.untranslated``), kept so a
    cross-protocol provider judges them without parsing the body again (None: not recorded).
    ``parsed`` is ``body_json`` as the gateway parsed it (read-only; None: not kept), so a
    same-protocol provider starts from it instead of decoding the body again (a 100 KB body: 84 us);
    it is no part of the origin's value (not compared, not shown).
    """

    protocol: WireFormat
    body_json: str
    headers: tuple[tuple[str, str], ...] = ()
    untranslated: tuple[str, ...] | None = None
    parsed: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        set_field(self, "protocol", as_enum(WireFormat, self.protocol, "WireOrigin.protocol"))
        require_str(self.body_json, "WireOrigin.body_json")
        set_field(self, "headers", as_tuple(self.headers, tuple, "WireOrigin.headers"))
        for index, pair in enumerate(self.headers):
            if len(pair) != 2 or not all(isinstance(part, str) for part in pair):
                raise TypeError(f"WireOrigin.headers[{index}] must be a (name, value) pair of str, got {pair!r}")
            if pair[0] != pair[0].lower():
                raise ValueError(f"WireOrigin.headers[{index}] name must be lower-case, got {pair[0]!r}")
        if self.untranslated is not None:
            set_field(self, "untranslated", as_tuple(self.untranslated, str, "WireOrigin.untranslated"))
        if type(self.parsed) is dict:  # read-only from here: every provider of the chain starts from it
            set_field(self, "parsed", MappingProxyType(self.parsed))
        elif self.parsed is not None and not isinstance(self.parsed, Mapping):
            raise TypeError(f"WireOrigin.parsed must be a mapping or None, got {type(self.parsed).__name__}")


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
    strict: bool | None = None  # OpenAI's strict schema adherence (Anthropic's ``strict`` on a tool too)
    cache_control: CacheControl | None = None

    def __post_init__(self) -> None:
        if self.strict is not None and not isinstance(self.strict, bool):
            raise TypeError(f"ToolDefinition.strict must be a bool or None, got {self.strict!r}")
        check_cache_control(self.cache_control, "ToolDefinition.cache_control")


class Role(enum.Enum):
    """Who speaks a message. The system prompt is not a message: it is ``ChatRequest.system``."""

    USER = "user"
    ASSISTANT = "assistant"


@dataclass(frozen=True, slots=True, kw_only=True)
class TextBlock:
    """Plain text content."""

    text: str
    cache_control: CacheControl | None = None

    def __post_init__(self) -> None:
        require_str(self.text, "TextBlock.text")
        if self.cache_control is not None:
            check_cache_control(self.cache_control, "TextBlock.cache_control")


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolUseBlock:
    """An assistant's tool call inside a message."""

    id: str
    name: str
    input_json: str = "{}"
    cache_control: CacheControl | None = None

    def __post_init__(self) -> None:
        require_str(self.id, "ToolUseBlock.id")
        require_str(self.name, "ToolUseBlock.name")
        require_str(self.input_json, "ToolUseBlock.input_json")
        check_cache_control(self.cache_control, "ToolUseBlock.cache_control")


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResultBlock:
    """A user turn's answer to one tool call."""

    tool_use_id: str
    content: str
    is_error: bool = False
    cache_control: CacheControl | None = None

    def __post_init__(self) -> None:
        require_str(self.tool_use_id, "ToolResultBlock.tool_use_id")
        require_str(self.content, "ToolResultBlock.content")
        if not isinstance(self.is_error, bool):
            raise TypeError(f"ToolResultBlock.is_error must be a bool, got {self.is_error!r}")
        check_cache_control(self.cache_control, "ToolResultBlock.cache_control")


ContentBlock = (
    TextBlock | ToolUseBlock | ToolResultBlock | ImageBlock | DocumentBlock | ThinkingBlock | RedactedThinkingBlock
)
_BLOCK_TYPES = (
    TextBlock,
    ToolUseBlock,
    ToolResultBlock,
    ImageBlock,
    DocumentBlock,
    ThinkingBlock,
    RedactedThinkingBlock,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Message:
    """One turn of the conversation: a role and at least one content block."""

    role: Role
    content: tuple[ContentBlock, ...]

    def __post_init__(self) -> None:
        if type(self.role) is not Role:  # a Role already: nothing to normalise (one per turn of a conversation)
            set_field(self, "role", as_enum(Role, self.role, "Message.role"))
        content = as_tuple(self.content, _BLOCK_TYPES, "Message.content")
        if content is not self.content:
            set_field(self, "content", content)

    @classmethod
    def user(cls, text: str) -> Message:
        """A user turn with one text block."""
        return _text_turn(cls, Role.USER, text)

    @classmethod
    def assistant(cls, text: str) -> Message:
        """An assistant turn with one text block."""
        return _text_turn(cls, Role.ASSISTANT, text)


def _text_turn(cls: type[Message], role: Role, text: str) -> Message:
    """``cls(role=role, content=(TextBlock(text=text),))``. For a plain ``Message`` and a ``text`` that
    is exactly a str (the parsers' plain turns, most of a long conversation) both are made without
    running the checks they pass by construction: half the time a turn (``benchmarks/wire_pieces``). Held
    equal to the checked construction, field for field, by tests/core/test_types_validation.py."""
    if cls is not Message or type(text) is not str:
        return cls(role=role, content=(TextBlock(text=text),))
    block = _NEW(TextBlock)
    _SET(block, "text", text)
    _SET(block, "cache_control", None)
    turn = _NEW(Message)
    _SET(turn, "role", role)
    _SET(turn, "content", (block,))
    return turn


_NEW = object.__new__
_SET = object.__setattr__


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
    # The system prompt as blocks (cache markers on them); when given, ``system`` is their texts
    # joined by SYSTEM_JOINER (filled in when left None).
    system_blocks: tuple[TextBlock, ...] = ()
    response_format: ResponseFormat | None = None
    reasoning: Reasoning | None = None
    user: str | None = None  # OpenAI ``user`` / Anthropic ``metadata.user_id``
    seed: int | None = None
    n: int | None = None  # choices wanted (>= 1)
    parallel_tool_calls: bool | None = None  # Anthropic: ``tool_choice.disable_parallel_tool_use`` negated
    logprobs: bool | None = None
    top_logprobs: int | None = None  # 0..20
    frequency_penalty: float | None = None  # -2..2
    presence_penalty: float | None = None  # -2..2
    top_k: int | None = None  # >= 1 (Anthropic, Bedrock)
    service_tier: str | None = None  # passed as the caller named it; each protocol has its own values
    # The caller's own request as received (gateway only); None for a request built in Python.
    origin: WireOrigin | None = None
    # Cache affinity's caller-given key (core/affinity.py): requests with one key go to one deployment.
    # Routing only, never sent; the gateway fills it from OpenAI's ``prompt_cache_key``.
    cache_affinity_key: str | None = None

    def __post_init__(self) -> None:
        # A field already in its normal form (a tuple of the right items, the usual case) is not set
        # again, and the options nobody set are not checked one by one (issue 25: every gateway call
        # builds one request).
        messages = as_tuple(self.messages, Message, "ChatRequest.messages")
        if messages is not self.messages:
            set_field(self, "messages", messages)
        if not messages:
            raise ValueError("ChatRequest.messages must not be empty")
        for index, message in enumerate(self.messages):
            if not message.content:
                raise ValueError(f"ChatRequest.messages[{index}] has no content")
        if isinstance(self.max_tokens, bool) or not isinstance(self.max_tokens, int):
            raise TypeError(f"ChatRequest.max_tokens must be an int, got {self.max_tokens!r}")
        if self.max_tokens <= 0:
            raise ValueError(f"ChatRequest.max_tokens must be > 0, got {self.max_tokens!r}")
        if self.system is not None:
            require_str(self.system, "ChatRequest.system")
        if self.tools:
            tools = as_tuple(self.tools, ToolDefinition, "ChatRequest.tools")
            if tools is not self.tools:
                set_field(self, "tools", tools)
        elif self.tools != ():
            set_field(self, "tools", as_tuple(self.tools, ToolDefinition, "ChatRequest.tools"))
        _check_temperature(self.temperature)
        if self.stop_sequences != ():
            _check_stops(self)
        require_str(self.alias, "ChatRequest.alias")
        if self.top_p is not None or self.tool_choice is not None:
            _check_sampling_extras(self.top_p, self.tool_choice)
        if self.system_blocks != ():
            _check_system_blocks(self)
        if not _no_options(self):
            _check_options(self)
        if self.origin is not None and not isinstance(self.origin, WireOrigin):
            raise TypeError(f"ChatRequest.origin must be a WireOrigin or None, got {self.origin!r}")


SYSTEM_JOINER = "\n\n"
"""What joins ``ChatRequest.system_blocks`` into the ``system`` text."""


def _check_stops(req: ChatRequest) -> None:
    if isinstance(req.stop_sequences, str):
        raise TypeError(
            f"ChatRequest.stop_sequences must be a tuple of str, got the str {req.stop_sequences!r} "
            f"(it would be split into characters); pass ({req.stop_sequences!r},)"
        )
    stops = as_tuple(req.stop_sequences, str, "ChatRequest.stop_sequences")
    if stops is not req.stop_sequences:
        set_field(req, "stop_sequences", stops)


def _no_options(req: ChatRequest) -> bool:
    """Whether every field :func:`_check_options` checks is unset (None): then there is nothing to check."""
    return (
        req.response_format is None
        and req.reasoning is None
        and req.user is None
        and req.service_tier is None
        and req.cache_affinity_key is None
        and req.seed is None
        and req.n is None
        and req.top_logprobs is None
        and req.top_k is None
        and req.parallel_tool_calls is None
        and req.logprobs is None
        and req.frequency_penalty is None
        and req.presence_penalty is None
    )


def _check_system_blocks(req: ChatRequest) -> None:
    set_field(req, "system_blocks", as_tuple(req.system_blocks, TextBlock, "ChatRequest.system_blocks"))
    if not req.system_blocks:
        return
    joined = SYSTEM_JOINER.join(block.text for block in req.system_blocks)
    if req.system is None:
        set_field(req, "system", joined)
    elif req.system != joined:
        raise ValueError(
            f"ChatRequest.system {req.system!r} disagrees with system_blocks (joined: {joined!r}); give one of them"
        )


def _check_int(value: object, where: str, low: int, high: int | None = None) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{where} must be an int or None, got {value!r}")
    if value < low or (high is not None and value > high):
        raise ValueError(f"{where} must be in [{low}, {high if high is not None else 'inf'}], got {value!r}")


def _check_penalty(value: object, where: str) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise TypeError(f"{where} must be a finite number or None, got {value!r}")
    if not -2 <= value <= 2:
        raise ValueError(f"{where} must be in [-2, 2], got {value!r}")


def _check_options(req: ChatRequest) -> None:
    if req.response_format is not None and not isinstance(req.response_format, ResponseFormat):
        raise TypeError(f"ChatRequest.response_format must be a ResponseFormat or None, got {req.response_format!r}")
    if req.reasoning is not None and not isinstance(req.reasoning, Reasoning):
        raise TypeError(f"ChatRequest.reasoning must be a Reasoning or None, got {req.reasoning!r}")
    for name in ("user", "service_tier"):
        if getattr(req, name) is not None:
            require_str(getattr(req, name), f"ChatRequest.{name}")
    if req.cache_affinity_key is not None:
        require_str(req.cache_affinity_key, "ChatRequest.cache_affinity_key", empty=False)
    _check_int(req.seed, "ChatRequest.seed", -(2**63), 2**64 - 1)
    _check_int(req.n, "ChatRequest.n", 1, 128)
    _check_int(req.top_logprobs, "ChatRequest.top_logprobs", 0, 20)
    _check_int(req.top_k, "ChatRequest.top_k", 1)
    for name in ("parallel_tool_calls", "logprobs"):
        value = getattr(req, name)
        if value is not None and not isinstance(value, bool):
            raise TypeError(f"ChatRequest.{name} must be a bool or None, got {value!r}")
    _check_penalty(req.frequency_penalty, "ChatRequest.frequency_penalty")
    _check_penalty(req.presence_penalty, "ChatRequest.presence_penalty")


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
