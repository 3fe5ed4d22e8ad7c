"""What each model accepts, as data: the max-tokens field, the system role, sampling, stop, context.

A :class:`CapabilityTable` is built from TOML (the shipped ``routeproof/models.toml``, then the
user's own rows, which need no release). A lookup starts from the provider kind's default
(:func:`kind_default`: what an id the table does not know gets) and applies, in order, every row of
that kind whose ``match`` regex is found in the model id (after its last ``/``): later rows override
earlier ones field by field, so a user row only has to name what it changes.

:func:`fit_request` then leaves out what the model does not accept and says what it left out; the
emitters (``translate_emit``) read the max-tokens field and the system role from the capabilities.

TOML shape::

    [[models]]
    provider = "openai"             # a ProviderKind value
    match = "^gpt-5"                # a Python regex, searched in the model id
    max_tokens_field = "max_completion_tokens"   # or "max_tokens"
    system_role = "developer"       # or "system"
    temperature = false             # accepts temperature?
    top_p = false                   # accepts top_p?
    max_stop_sequences = 4          # 0: no stop sequences at all; absent: no limit
    context_window_tokens = 400000
    max_output_tokens = 128000      # the model's documented maximum output (no cap sent: what the ledger reserves)
    api_version = "2023-06-01"      # Anthropic's anthropic-version header
    images = true                   # takes image blocks (default true)
    documents = true                # takes PDF document blocks (default true)
    thinking = true                 # takes reasoning controls: reasoning_effort / thinking (default true)
    structured_output = true        # takes a JSON schema for the answer (default true; Anthropic: else a forced tool)
    cache_markers = true            # honours cache_control markers (default true; else they are dropped, named)
    source = "https://..."          # where the row comes from (kept, not used)
    checked = "2026-11-30"          # when the source was read (kept, not used)
"""

from __future__ import annotations

import enum
import re
import tomllib
from dataclasses import dataclass, field, fields, replace
from typing import Any

import icontract

from routeproof.core.blocks import DocumentBlock, ImageBlock, SourceKind
from routeproof.core.errors import ConfigError
from routeproof.core.formats.translate_common import WireExtras, is_o_series
from routeproof.core.options import ResponseFormatKind, ThinkingMode
from routeproof.core.types import ChatRequest, ProviderKind

__all__ = [
    "ANTHROPIC_API_VERSION",
    "Capability",
    "CapabilityRow",
    "CapabilityTable",
    "FittedRequest",
    "ModelCapabilities",
    "fit_request",
    "fit_sound",
    "kind_default",
    "lacking_capabilities",
    "load_capabilities",
    "needed_capabilities",
]

ANTHROPIC_API_VERSION = "2023-06-01"
"""The ``anthropic-version`` header sent when the table names none (the only GA version)."""

_MAX_TOKENS_FIELDS = ("max_tokens", "max_completion_tokens")
_SYSTEM_ROLES = ("system", "developer")


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelCapabilities:
    """What one model accepts. ``max_stop_sequences`` None: no limit; 0: ``stop`` is not accepted."""

    max_tokens_field: str = "max_tokens"
    system_role: str = "system"
    temperature: bool = True
    top_p: bool = True
    max_stop_sequences: int | None = None
    context_window_tokens: int | None = None
    max_output_tokens: int | None = None  # documented maximum output tokens; None: not documented here
    api_version: str | None = None
    images: bool = True
    documents: bool = True
    thinking: bool = True
    structured_output: bool = True
    cache_markers: bool = True

    def __post_init__(self) -> None:
        if self.max_tokens_field not in _MAX_TOKENS_FIELDS:
            raise ValueError(f"max_tokens_field must be one of {_MAX_TOKENS_FIELDS}, got {self.max_tokens_field!r}")
        if self.system_role not in _SYSTEM_ROLES:
            raise ValueError(f"system_role must be one of {_SYSTEM_ROLES}, got {self.system_role!r}")
        for name in ("max_stop_sequences", "context_window_tokens", "max_output_tokens"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ValueError(f"{name} must be >= 0 or None, got {value!r}")


_CAPABILITY_FIELDS = frozenset(f.name for f in fields(ModelCapabilities))
_BOOL_FIELDS = ("temperature", "top_p", "images", "documents", "thinking", "structured_output", "cache_markers")


class Capability(enum.Enum):
    """What a request can need of a model beyond text and tools (a ``ModelCapabilities`` flag each)."""

    IMAGES = "images"
    DOCUMENTS = "documents"
    THINKING = "thinking"
    STRUCTURED_OUTPUT = "structured_output"


def _needed_impl(req: ChatRequest) -> tuple[Capability, ...]:
    images = documents = False
    for message in req.messages:  # one pass, no generators: it runs on every routed call
        for block in message.content:
            images = images or isinstance(block, ImageBlock)
            documents = documents or (isinstance(block, DocumentBlock) and block.source is not SourceKind.TEXT)
    fmt = req.response_format
    needed: list[Capability] = []
    if images:
        needed.append(Capability.IMAGES)
    if documents:
        needed.append(Capability.DOCUMENTS)
    if req.reasoning is not None and req.reasoning.thinking is not ThinkingMode.DISABLED:
        needed.append(Capability.THINKING)
    if fmt is not None and fmt.kind is ResponseFormatKind.JSON_SCHEMA:
        needed.append(Capability.STRUCTURED_OUTPUT)
    return tuple(needed)


@icontract.ensure(lambda result: len(set(result)) == len(result))
def needed_capabilities(req: ChatRequest) -> tuple[Capability, ...]:
    """What ``req`` needs of a model: images, PDF documents, reasoning controls, a JSON schema (in that order).

    A text document needs nothing (every model reads text); thinking turned off needs nothing.
    """
    return _needed_impl(req)


def _lacking_impl(req: ChatRequest, caps: ModelCapabilities, provider: ProviderKind) -> tuple[Capability, ...]:
    lacking = [cap for cap in _needed_impl(req) if not getattr(caps, cap.value)]
    if provider is ProviderKind.ANTHROPIC and Capability.STRUCTURED_OUTPUT in lacking:
        lacking.remove(Capability.STRUCTURED_OUTPUT)  # served by a forced tool (request_to_anthropic)
    return tuple(lacking)


@icontract.ensure(lambda req, result: set(result) <= set(needed_capabilities(req)))
def lacking_capabilities(req: ChatRequest, caps: ModelCapabilities, provider: ProviderKind) -> tuple[Capability, ...]:
    """What ``req`` needs that a ``provider`` model with ``caps`` lacks: the router skips it before sending.

    An Anthropic model without structured output still serves a JSON schema (as a forced tool).
    """
    return _lacking_impl(req, caps, provider)


_ROW_KEYS = _CAPABILITY_FIELDS | {"provider", "match", "source", "checked"}


@dataclass(frozen=True, slots=True, kw_only=True)
class CapabilityRow:
    """One row: the capabilities it sets for the models of ``provider`` whose id ``match`` finds."""

    provider: ProviderKind
    match: re.Pattern[str]
    overrides: tuple[tuple[str, Any], ...]
    source: str = ""
    checked: str = ""


MEMO_MAX = 512
"""At most this many (kind, model) lookups are remembered per table (configured models: a handful)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CapabilityTable:
    """The rows, in the order they apply (shipped first, then the user's).

    A table never changes, so neither does a lookup's answer: each (kind, model) is worked out once
    and remembered (``_memo``, not part of the value: it is left out of equality, hashing and repr).
    A routed call looks up its model twice (the context window, then the fitting), and a lookup
    replays every matching row, so it was about a tenth of the router's own CPU (issue 25).
    """

    rows: tuple[CapabilityRow, ...] = ()
    _memo: dict[tuple[ProviderKind, str], ModelCapabilities] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def extended(self, other: CapabilityTable) -> CapabilityTable:
        """This table with ``other``'s rows applied after its own (``other`` wins where both match)."""
        return CapabilityTable(rows=self.rows + other.rows)

    def lookup(self, provider: ProviderKind, model: str) -> ModelCapabilities:
        """The capabilities of ``model`` served by ``provider``."""
        key = (provider, model)
        caps = self._memo.get(key)
        if caps is None:
            caps = _lookup(self, provider, model)
            if len(self._memo) < MEMO_MAX:  # models come from the configuration; bounded all the same
                self._memo[key] = caps
        return caps


def _kind_default(provider: ProviderKind, model: str) -> ModelCapabilities:
    if provider is ProviderKind.OPENAI:
        # OpenAI itself: max_tokens is deprecated for every model; its reasoning models take the
        # developer role and no sampling parameters. OpenAI-compatible servers keep max_tokens.
        if is_o_series(model):
            return ModelCapabilities(
                max_tokens_field="max_completion_tokens",
                system_role="developer",
                temperature=False,
                top_p=False,
                max_stop_sequences=4,
            )
        return ModelCapabilities(max_tokens_field="max_completion_tokens", max_stop_sequences=4)
    if provider is ProviderKind.ANTHROPIC:
        return ModelCapabilities(api_version=ANTHROPIC_API_VERSION)
    return ModelCapabilities()


@icontract.ensure(lambda result: result.max_tokens_field in _MAX_TOKENS_FIELDS)
@icontract.ensure(
    lambda provider, result: provider is not ProviderKind.OPENAI or result.max_tokens_field == "max_completion_tokens"
)
@icontract.ensure(
    lambda provider, result: (
        provider not in (ProviderKind.OPENROUTER, ProviderKind.OLLAMA, ProviderKind.VLLM, ProviderKind.LOCAL)
        or result == ModelCapabilities()
    )
)
def kind_default(provider: ProviderKind, model: str) -> ModelCapabilities:
    """What a model id the table does not know gets: ``max_completion_tokens`` on OpenAI itself
    (the developer role and no sampling for o-series ids), everything accepted elsewhere."""
    return _kind_default(provider, model)


def _model_id(model: str) -> str:
    return model.rsplit("/", 1)[-1]


def _lookup(table: CapabilityTable, provider: ProviderKind, model: str) -> ModelCapabilities:
    caps = _kind_default(provider, model)
    bare = _model_id(model)
    for row in table.rows:
        if row.provider is provider and row.match.search(bare) is not None:
            caps = replace(caps, **dict(row.overrides))
    return caps


# --- fitting a request to a model ------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class FittedRequest:
    """The request as it may be sent, the wire extras likewise, and the parameters left out."""

    request: ChatRequest
    extras: WireExtras
    dropped: tuple[str, ...]


def _fit(req: ChatRequest, caps: ModelCapabilities, extras: WireExtras) -> FittedRequest:
    dropped: list[str] = []
    changes: dict[str, Any] = {}
    if req.temperature is not None and not caps.temperature:
        changes["temperature"] = None
        dropped.append("temperature")
    limit = caps.max_stop_sequences
    if req.stop_sequences and limit is not None and len(req.stop_sequences) > limit:
        changes["stop_sequences"] = req.stop_sequences[:limit]
        dropped.append("stop_sequences" if limit == 0 else f"stop_sequences[{limit}:]")
    if (extras.top_p is not None or req.top_p is not None) and not caps.top_p:
        extras = replace(extras, top_p=None)
        if req.top_p is not None:
            changes["top_p"] = None
        dropped.append("top_p")
    return FittedRequest(request=replace(req, **changes) if changes else req, extras=extras, dropped=tuple(dropped))


def fit_sound(req: ChatRequest, caps: ModelCapabilities, result: FittedRequest) -> bool:
    """:func:`fit_request`'s postcondition, one predicate (each condition costs icontract about ten
    Python calls, and this runs per attempt; issue 25): no temperature or top_p the model rejects is
    left (top_p in the wire extras neither); no more stop sequences than it takes; the request is
    unchanged exactly when nothing but an extras-only top_p was dropped; the messages are the same
    object (never copied)."""
    request = result.request
    only_extras_top_p = not any(d != "top_p" for d in result.dropped) and (
        req.top_p is None or "top_p" not in result.dropped
    )
    return (
        (caps.temperature or request.temperature is None)
        and (caps.top_p or (result.extras.top_p is None and request.top_p is None))
        and (caps.max_stop_sequences is None or len(request.stop_sequences) <= caps.max_stop_sequences)
        and (request == req) == only_extras_top_p
        and request.messages is req.messages
    )


@icontract.ensure(
    fit_sound, "only rejected parameters dropped (temperature, top_p, a stop-sequence tail), named; messages kept"
)
def fit_request(req: ChatRequest, caps: ModelCapabilities, extras: WireExtras | None = None) -> FittedRequest:
    """``req`` without the parameters ``caps`` says the model rejects, and their names.

    Kept stop sequences are the first ``max_stop_sequences`` (a dropped tail is named
    ``stop_sequences[N:]``); a rejected ``temperature`` or ``top_p`` is left out whole.
    """
    return _fit(req, caps, extras if extras is not None else _NO_EXTRAS)


_NO_EXTRAS = WireExtras()
"""The extras of a request that came with none (a frozen value: one for every such call)."""


# --- loading ---------------------------------------------------------------------------------------


def _check_value(name: str, value: object, where: str) -> object:
    if name == "max_tokens_field" and value not in _MAX_TOKENS_FIELDS:
        raise ConfigError(f"{where}: max_tokens_field must be one of {_MAX_TOKENS_FIELDS}, got {value!r}")
    if name == "system_role" and value not in _SYSTEM_ROLES:
        raise ConfigError(f"{where}: system_role must be one of {_SYSTEM_ROLES}, got {value!r}")
    if name in _BOOL_FIELDS and not isinstance(value, bool):
        raise ConfigError(f"{where}: {name} must be true or false, got {value!r}")
    if name in ("max_stop_sequences", "context_window_tokens", "max_output_tokens") and (
        isinstance(value, bool) or not isinstance(value, int) or value < 0
    ):
        raise ConfigError(f"{where}: {name} must be a non-negative integer, got {value!r}")
    if name == "api_version" and not isinstance(value, str):
        raise ConfigError(f"{where}: api_version must be a string, got {value!r}")
    return value


def _row(raw: object, index: int) -> CapabilityRow:
    where = f"models[{index}]"
    if not isinstance(raw, dict):
        raise ConfigError(f"{where} must be a table, got {raw!r}")
    unknown = sorted(set(raw) - _ROW_KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown keys {unknown!r}; expected some of {sorted(_ROW_KEYS)}")
    by_value = {kind.value: kind for kind in ProviderKind}
    provider = by_value.get(str(raw.get("provider")))
    if provider is None:
        raise ConfigError(f"{where}: provider must be one of {sorted(by_value)}, got {raw.get('provider')!r}")
    pattern = raw.get("match")
    if not isinstance(pattern, str):
        raise ConfigError(f"{where}: match must be a regex string, got {pattern!r}")
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        raise ConfigError(f"{where}: match {pattern!r} is not a valid regex: {exc}") from exc
    overrides = tuple(
        (name, _check_value(name, raw[name], where)) for name in sorted(_CAPABILITY_FIELDS) if name in raw
    )
    return CapabilityRow(
        provider=provider,
        match=compiled,
        overrides=overrides,
        source=str(raw.get("source", "")),
        checked=str(raw.get("checked", "")),
    )


def _load(toml_text: str) -> CapabilityTable:
    try:
        doc = tomllib.loads(toml_text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"model capabilities TOML does not parse: {exc}") from exc
    unknown = sorted(set(doc) - {"models"})
    if unknown:
        raise ConfigError(f"model capabilities: unknown top-level keys {unknown!r}; expected [[models]]")
    rows = doc.get("models", [])
    if not isinstance(rows, list):
        raise ConfigError(f"model capabilities: models must be an array of tables, got {rows!r}")
    return CapabilityTable(rows=tuple(_row(raw, i) for i, raw in enumerate(rows)))


@icontract.ensure(lambda toml_text, result: len(result.rows) <= toml_text.count("[[models]]"))
def load_capabilities(toml_text: str) -> CapabilityTable:
    """Parse capability rows (see the module docstring).

    :raises ConfigError: naming the row for an unknown key or provider, a bad regex or a bad value.
    """
    return _load(toml_text)
