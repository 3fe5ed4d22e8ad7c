"""Capability-aware routing: what a request needs, what a model lacks, and the skip that names it."""

from __future__ import annotations

import re

import pytest

from routeproof.core.blocks import DocumentBlock, ImageBlock, SourceKind
from routeproof.core.capabilities import (
    Capability,
    ModelCapabilities,
    lacking_capabilities,
    load_capabilities,
    needed_capabilities,
)
from routeproof.core.errors import ConfigError
from routeproof.core.options import Reasoning, ReasoningEffort, ResponseFormat, ResponseFormatKind, ThinkingMode
from routeproof.core.routing import SkipReason
from routeproof.core.types import ChatRequest, Message, ProviderKind, Role, TextBlock
from tests.core.test_routing import entries, plan

_IMAGE = ImageBlock(source=SourceKind.URL, data="https://x.test/a.png")
_PDF = DocumentBlock(source=SourceKind.BASE64, data="AAAA", media_type="application/pdf")
_SCHEMA = ResponseFormat(kind=ResponseFormatKind.JSON_SCHEMA, name="a", schema_json='{"type":"object"}')


def _request(*blocks: object, **fields: object) -> ChatRequest:
    content = (TextBlock(text="look"), *blocks)
    return ChatRequest(messages=(Message(role=Role.USER, content=content),), **fields)  # type: ignore[arg-type]


def test_a_request_needs_what_its_blocks_and_options_ask_for() -> None:
    """Images, PDFs, reasoning and a JSON schema are needs; text, a text document and thinking off are not."""
    assert needed_capabilities(_request()) == ()
    text_doc = DocumentBlock(source=SourceKind.TEXT, data="t")
    off = Reasoning(thinking=ThinkingMode.DISABLED)
    assert needed_capabilities(_request(text_doc, reasoning=off)) == ()
    rich = _request(_IMAGE, _PDF, reasoning=Reasoning(effort=ReasoningEffort.LOW), response_format=_SCHEMA)
    assert needed_capabilities(rich) == (
        Capability.IMAGES,
        Capability.DOCUMENTS,
        Capability.THINKING,
        Capability.STRUCTURED_OUTPUT,
    )


def test_a_model_lacks_what_its_row_says_and_anthropic_serves_a_schema_by_a_forced_tool() -> None:
    """A text-only row lacks images; an Anthropic model without structured output still serves a schema."""
    text_only = ModelCapabilities(images=False, documents=False, structured_output=False)
    req = _request(_IMAGE, response_format=_SCHEMA)
    assert lacking_capabilities(req, text_only, ProviderKind.OPENAI) == (
        Capability.IMAGES,
        Capability.STRUCTURED_OUTPUT,
    )
    assert lacking_capabilities(req, text_only, ProviderKind.ANTHROPIC) == (Capability.IMAGES,)
    assert lacking_capabilities(req, ModelCapabilities(), ProviderKind.OPENAI) == ()


def test_capability_flags_load_from_toml_and_bad_values_name_the_row() -> None:
    """models.toml rows set the capability flags; a non-boolean flag is a ConfigError naming the row."""
    table = load_capabilities('[[models]]\nprovider = "ollama"\nmatch = "^llama3"\nimages = false\n')
    assert table.lookup(ProviderKind.OLLAMA, "llama3:8b").images is False
    assert table.lookup(ProviderKind.OLLAMA, "llava").images is True
    with pytest.raises(ConfigError, match=re.escape("models[0]: thinking must be true or false, got 'yes'")):
        load_capabilities('[[models]]\nprovider = "ollama"\nmatch = "x"\nthinking = "yes"\n')


def test_a_provider_lacking_a_capability_is_skipped_first_naming_it() -> None:
    """The chain skips a provider whose model lacks a needed capability, its record naming it, in chain order."""
    chain = entries(ProviderKind.OLLAMA, ProviderKind.ANTHROPIC, ProviderKind.VERTEX)
    result = plan(chain, lacking={ProviderKind.OLLAMA: "images"})
    assert result.chain == (chain[1],)
    assert [(s.entry, s.reason) for s in result.skipped] == [
        (chain[0], SkipReason.CAPABILITY),
        (chain[2], SkipReason.UNSUPPORTED),
    ]
    assert result.skipped[0].as_record().reason == "capability: images"
    assert result.skipped[1].as_record().reason == "unsupported"
