"""The field table: what happens to each request field of one wire protocol sent out in another.

A row says, for a top-level request key (or a dotted path such as ``tools[].function.strict``) of
``source`` sent to a ``target`` protocol, whether it goes VERBATIM, is TRANSLATED (``note`` is the
mapping), DROPPED (``note`` is the reason; reported to the caller) or REFUSED (``note`` is the reason).
Same protocol is VERBATIM; a field with no row for another protocol is REFUSED. Pure data and lookup.

How the shell uses it, per attempt on a provider of protocol ``target``:

- the parse's ``WireExtras.untranslated`` paths go through :func:`treatment_of` (indices become ``[]``):
  DROPPED ones are reported, a REFUSED one makes the provider ineligible (skip it, naming the reason);
- what the content model carries but ``target`` cannot take is named by
  ``core.formats.translate.dropped_by_target(request, target)`` (``top_k``, ``cache_control``, ``thinking_blocks`` ...),
  reported the same way; what cannot be left out raises ``TranslationError`` from the emitter;
- ``WireExtras.output_cap_given`` is False for an OpenAI body with no cap: do not invent one for OpenAI;
  Anthropic and Bedrock need one (``ChatRequest.max_tokens`` is then its default: set the model's max);
- an Anthropic model whose capability row says ``structured_output = false`` is sent the schema as a
  forced tool (``request_to_anthropic(..., structured_output=False)``); its answer goes back through
  ``core.formats.translate_response.forced_tool_answer``.

The rows cover every key of the installed ``openai`` and ``anthropic`` SDKs' request TypedDicts per
other target (``tests/core/test_field_table.py`` fails on a new key), and each top-level row is checked
against what the translation does.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

from routeproof.core.frozen import as_enum, require_str, set_field
from routeproof.core.messages import WireFormat

__all__ = ["ROWS", "FieldRow", "Treatment", "field_pattern", "pair_counts", "refusals", "treatment_of"]


class Treatment(enum.Enum):
    """What the router does with one field crossing from one protocol to another."""

    VERBATIM = "verbatim"
    TRANSLATED = "translated"
    DROPPED = "dropped"
    REFUSED = "refused"


@dataclass(frozen=True, slots=True, kw_only=True)
class FieldRow:
    """One field of ``source`` sent to ``target``: its treatment, and the mapping or the reason."""

    source: WireFormat
    field: str
    target: WireFormat
    treatment: Treatment
    note: str

    def __post_init__(self) -> None:
        set_field(self, "source", as_enum(WireFormat, self.source, "FieldRow.source"))
        set_field(self, "target", as_enum(WireFormat, self.target, "FieldRow.target"))
        set_field(self, "treatment", as_enum(Treatment, self.treatment, "FieldRow.treatment"))
        require_str(self.field, "FieldRow.field", empty=False)
        require_str(self.note, "FieldRow.note")


_V, _T, _D, _R = Treatment.VERBATIM, Treatment.TRANSLATED, Treatment.DROPPED, Treatment.REFUSED
_OAI, _ANT, _BED = WireFormat.OPENAI_CHAT, WireFormat.ANTHROPIC_MESSAGES, WireFormat.BEDROCK_CONVERSE

_NO_CACHE_HINTS = "OpenAI prompt-cache routing/retention hint; the target caches by its own markers"
_OPENAI_TO_ANTHROPIC: dict[str, tuple[Treatment, str]] = {
    "messages": (_T, "system/developer first -> system; text, image_url (data URL -> base64, http -> url) and "
                 "PDF file parts -> text/image/document blocks; tool_calls -> tool_use; tool messages -> "
                 "tool_result blocks of the next user turn"),
    "model": (_T, "the alias resolved to the provider's model id"),
    "audio": (_R, "Anthropic Messages has no audio output"),
    "frequency_penalty": (_D, "Anthropic has no frequency penalty"),
    "function_call": (_R, "the deprecated functions API; send tools and tool_choice"),
    "functions": (_R, "the deprecated functions API; send tools"),
    "logit_bias": (_D, "Anthropic has no token bias"),
    "logprobs": (_D, "Anthropic returns no log probabilities"),
    "max_completion_tokens": (_T, "max_tokens"),
    "max_tokens": (_T, "max_tokens"),
    "metadata": (_D, "OpenAI's stored-completion tags; Anthropic's metadata takes user_id only"),
    "modalities": (_D, "Anthropic answers in text only"),
    "moderation": (_R, "OpenAI's moderation of input and output cannot be run by Anthropic"),
    "n": (_T, "n=1 is Anthropic's only mode; n>1 is refused"),
    "parallel_tool_calls": (_T, "tool_choice.disable_parallel_tool_use = not parallel_tool_calls"),
    "prediction": (_D, "predicted outputs only speed up OpenAI; the answer is the same without"),
    "presence_penalty": (_D, "Anthropic has no presence penalty"),
    "prompt_cache_key": (_D, _NO_CACHE_HINTS),
    "prompt_cache_options": (_D, _NO_CACHE_HINTS),
    "prompt_cache_retention": (_D, _NO_CACHE_HINTS),
    "reasoning_effort": (_T, "thinking.budget_tokens by EFFORT_BUDGET_TOKENS (< max_tokens); none -> disabled"),
    "response_format": (_T, "json_schema -> output_config.format (json_object as {type: object}); a model without "
                        "structured output gets a forced tool instead; text -> nothing"),
    "safety_identifier": (_D, "OpenAI's abuse-tracking id; Anthropic's metadata.user_id carries user"),
    "seed": (_D, "Anthropic has no seed"),
    "service_tier": (_T, "'auto' -> 'auto'; OpenAI's other tiers are dropped, named"),
    "stop": (_T, "stop_sequences"),
    "store": (_D, "OpenAI stored completions"),
    "stream": (_T, "stream"),
    "stream_options": (_T, "include_usage: an Anthropic stream always carries usage"),
    "temperature": (_T, "temperature (a model that rejects it: fit_request drops it, named)"),
    "tool_choice": (_T, "auto -> auto, required -> any, none -> none, a function -> {type: tool, name}"),
    "tools": (_T, "function tools -> name, description, input_schema"),
    "tools[].function.strict": (_T, "tools[].strict"),
    "top_logprobs": (_D, "Anthropic returns no log probabilities"),
    "top_p": (_T, "top_p"),
    "user": (_T, "metadata.user_id"),
    "verbosity": (_D, "Anthropic has no verbosity control"),
    "web_search_options": (_R, "web search is an OpenAI search model's feature; Anthropic's is a server tool"),
    "messages[].name": (_D, "Anthropic turns have no participant name"),
    "messages[].refusal": (_D, "a past refusal's text; Anthropic turns have no refusal field"),
    "messages[].content[].input_audio": (_R, "Anthropic takes no audio input"),
}  # fmt: skip

_OPENAI_TO_BEDROCK: dict[str, tuple[Treatment, str]] = {
    **_OPENAI_TO_ANTHROPIC,
    "messages": (_T, "system -> system; text, image (base64 -> bytes; s3:// -> s3Location; an http URL is "
                 "refused), PDF file parts -> document blocks; tool_calls -> toolUse; tool messages -> toolResult"),
    "model": (_T, "the model id in the Converse URL"),
    "audio": (_R, "Bedrock Converse has no audio output"),
    "max_completion_tokens": (_T, "inferenceConfig.maxTokens"),
    "max_tokens": (_T, "inferenceConfig.maxTokens"),
    "metadata": (_D, "OpenAI's stored-completion tags; Converse requestMetadata is not sent"),
    "moderation": (_R, "OpenAI's moderation cannot be run by Bedrock Converse (use a guardrail there)"),
    "n": (_T, "n=1 is Converse's only mode; n>1 is refused"),
    "parallel_tool_calls": (_D, "Converse has no parallel-tool-use switch"),
    "reasoning_effort": (_T, "additionalModelRequestFields.thinking by EFFORT_BUDGET_TOKENS (Claude on Bedrock)"),
    "response_format": (_R, "Bedrock Converse has no structured-output field in this version"),
    "safety_identifier": (_D, "OpenAI's abuse-tracking id"),
    "service_tier": (_D, "Converse's performanceConfig is not a service tier"),
    "stop": (_T, "inferenceConfig.stopSequences"),
    "stream": (_T, "ConverseStream"),
    "stream_options": (_T, "include_usage: a Converse stream always carries usage"),
    "temperature": (_T, "inferenceConfig.temperature"),
    "tool_choice": (_T, "toolConfig.toolChoice: auto -> auto, required -> any, a function -> tool; none is dropped"),
    "tools": (_T, "toolConfig.tools[].toolSpec (name, description, inputSchema.json)"),
    "tools[].function.strict": (_D, "Converse tool specs have no strict flag"),
    "top_p": (_T, "inferenceConfig.topP"),
    "user": (_D, "Converse has no end-user id"),
    "verbosity": (_D, "Converse has no verbosity control"),
    "web_search_options": (_R, "web search is an OpenAI search model's feature"),
    "messages[].name": (_D, "Converse turns have no participant name"),
    "messages[].content[].input_audio": (_R, "Converse takes no audio input"),
    "messages[].content[].image_url.detail": (_D, "Converse images have no detail level"),
    "messages[]": (_D, "a system or developer message after the first turn: Converse takes one system prompt"),
}  # fmt: skip

_ANTHROPIC_TO_OPENAI: dict[str, tuple[Treatment, str]] = {
    "max_tokens": (_T, "max_completion_tokens (max_tokens for a model whose capability row says so)"),
    "messages": (_T, "text, image (base64 -> data URL, url -> url), document (base64 PDF -> file part, text -> "
                 "text part; a PDF by URL is refused), tool_use -> tool_calls, tool_result -> tool messages; "
                 "thinking blocks and cache markers are dropped, named"),
    "model": (_T, "the alias resolved to the provider's model id"),
    "cache_control": (_D, "OpenAI caches prompts automatically"),
    "container": (_R, "an Anthropic code-execution container"),
    "diagnostics": (_D, "Anthropic's prompt-cache diagnostics"),
    "inference_geo": (_R, "a data-residency requirement another provider cannot be held to"),
    "metadata": (_T, "metadata.user_id -> user"),
    "output_config": (_T, "effort -> reasoning_effort; format -> response_format json_schema"),
    "service_tier": (_T, "'auto' -> 'auto'; 'standard_only' is dropped, named"),
    "speed": (_D, "Anthropic's fast mode"),
    "stop_sequences": (_T, "stop"),
    "stream": (_T, "stream, with stream_options.include_usage"),
    "system": (_T, "the first system/developer message (blocks as text parts; cache markers dropped, named)"),
    "temperature": (_T, "temperature"),
    "thinking": (_T, "enabled budget -> reasoning_effort by EFFORT_BUDGET_TOKENS; disabled -> none; adaptive "
                 "is dropped, named"),
    "tool_choice": (_T, "auto -> auto, any -> required, none -> none, tool -> a function; "
                    "disable_parallel_tool_use -> parallel_tool_calls = false"),
    "tools": (_T, "custom tools -> function tools (strict kept; cache markers dropped, named)"),
    "top_k": (_D, "OpenAI has no top_k"),
    "top_p": (_T, "top_p"),
    "user_profile_id": (_D, "an Anthropic account attribution"),
    "workspace_id": (_D, "an Anthropic workspace selection"),
    "context_management": (_R, "Anthropic's server-side context editing"),
    "mcp_servers": (_R, "Anthropic's server-side MCP connector"),
    "tools[]": (_R, "an Anthropic server tool (web search, code execution, ...) has no OpenAI equivalent"),
    "messages[].content[]": (_R, "a block type the content model does not carry (search results, server tool use)"),
    "messages[].content[].citations": (_D, "citations of a past answer"),
}  # fmt: skip

_ANTHROPIC_TO_BEDROCK: dict[str, tuple[Treatment, str]] = {
    **_ANTHROPIC_TO_OPENAI,
    "max_tokens": (_T, "inferenceConfig.maxTokens"),
    "messages": (_T, "text, image (bytes; s3:// -> s3Location; an http URL is refused), document (pdf bytes or "
                 "txt), tool_use -> toolUse, tool_result -> toolResult, thinking -> reasoningContent "
                 "(signature kept), cache markers -> cachePoint blocks"),
    "model": (_T, "the model id in the Converse URL"),
    "tools[]": (_R, "an Anthropic server tool (web search, code execution, ...) has no Converse equivalent"),
    "cache_control": (_D, "Converse takes cachePoint blocks, not a request-wide marker"),
    "container": (_R, "an Anthropic code-execution container"),
    "metadata": (_D, "Converse has no end-user id"),
    "output_config": (_T, "effort -> a thinking budget; format is refused (no structured output in Converse)"),
    "service_tier": (_D, "Converse's performanceConfig is not a service tier"),
    "stop_sequences": (_T, "inferenceConfig.stopSequences"),
    "stream": (_T, "ConverseStream"),
    "system": (_T, "system blocks (cache markers -> cachePoint)"),
    "temperature": (_T, "inferenceConfig.temperature"),
    "thinking": (_T, "additionalModelRequestFields.thinking"),
    "tool_choice": (_T, "toolConfig.toolChoice (none and disable_parallel_tool_use are dropped, named)"),
    "tools": (_T, "toolConfig.tools[].toolSpec (cache markers -> cachePoint; strict dropped, named)"),
    "top_k": (_T, "additionalModelRequestFields.top_k"),
    "top_p": (_T, "inferenceConfig.topP"),
    "system[].cache_control.ttl": (_D, "a cachePoint has no ttl (Bedrock's default lifetime applies)"),
    "messages[].content[].cache_control.ttl": (_D, "a cachePoint has no ttl (Bedrock's default lifetime applies)"),
    "tools[].cache_control.ttl": (_D, "a cachePoint has no ttl (Bedrock's default lifetime applies)"),
    "tools[].strict": (_D, "Converse tool specs have no strict flag"),
    "output_config.format": (_R, "Bedrock Converse has no structured-output field in this version"),
    "messages[].content[].citations": (_T, "a document's citations -> document.citations.enabled; a past "
                                       "answer's citations on text blocks are dropped, named"),
    "messages[].content[].context": (_D, "Converse documents have no context field"),
    "tool_choice.disable_parallel_tool_use": (_D, "Converse has no parallel-tool-use switch"),
}  # fmt: skip


def _rows(source: WireFormat, target: WireFormat, table: dict[str, tuple[Treatment, str]]) -> tuple[FieldRow, ...]:
    return tuple(
        FieldRow(source=source, field=field, target=target, treatment=treatment, note=note)
        for field, (treatment, note) in table.items()
    )


ROWS: tuple[FieldRow, ...] = (
    _rows(_OAI, _ANT, _OPENAI_TO_ANTHROPIC)
    + _rows(_OAI, _BED, _OPENAI_TO_BEDROCK)
    + _rows(_ANT, _OAI, _ANTHROPIC_TO_OPENAI)
    + _rows(_ANT, _BED, _ANTHROPIC_TO_BEDROCK)
)
"""Every known (source, field, target) treatment. Another stream adds its own protocol pairs as
another ``_rows(...)`` term here (e.g. the Responses API's)."""

_INDEX_RE = re.compile(r"\[\d*:?\d*\]")
_INDEX: dict[tuple[WireFormat, str, WireFormat], FieldRow] = {}


def _index() -> dict[tuple[WireFormat, str, WireFormat], FieldRow]:
    if len(_INDEX) != len(ROWS):
        _INDEX.clear()
        _INDEX.update({(row.source, row.field, row.target): row for row in ROWS})
    return _INDEX


def field_pattern(path: str) -> str:
    """``path`` with its indices and slices as ``[]``: ``messages[3].content[1:]`` -> ``messages[].content[]``."""
    return _INDEX_RE.sub("[]", path)


def treatment_of(source: WireFormat, field: str, target: WireFormat) -> FieldRow:
    """The row for ``field`` of ``source`` sent to ``target``: same protocol is VERBATIM; no row is REFUSED."""
    source = as_enum(WireFormat, source, "treatment_of source")
    target = as_enum(WireFormat, target, "treatment_of target")
    require_str(field, "treatment_of field", empty=False)
    if source is target:
        return FieldRow(source=source, field=field, target=target, treatment=Treatment.VERBATIM, note="same protocol")
    index = _index()
    row = index.get((source, field, target)) or index.get((source, field_pattern(field), target))
    if row is not None:
        return row
    return FieldRow(
        source=source,
        field=field,
        target=target,
        treatment=Treatment.REFUSED,
        note=f"no mapping to {target.value} in this version",
    )


def pair_counts() -> dict[tuple[WireFormat, WireFormat], dict[Treatment, int]]:
    """How many rows of each treatment each (source, target) pair has, in ``ROWS`` order (the note's table)."""
    out: dict[tuple[WireFormat, WireFormat], dict[Treatment, int]] = {}
    for row in ROWS:
        counts = out.setdefault((row.source, row.target), dict.fromkeys(Treatment, 0))
        counts[row.treatment] += 1
    return out


def refusals() -> tuple[FieldRow, ...]:
    """Every REFUSED row (the field and its reason), in ``ROWS`` order."""
    return tuple(row for row in ROWS if row.treatment is Treatment.REFUSED)
