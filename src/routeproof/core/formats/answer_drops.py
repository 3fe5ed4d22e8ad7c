"""What of an answer the caller's shape has no place for: named, never lost silently.

The request side has the field table (``field_table.py``); this is its answer side. A routed answer
is re-encoded in the caller's shape (the gateway's ``openai_wire``, ``anthropic_wire`` and
``responses_wire``) unless it came from a provider of that very protocol (relayed whole). What
each shape carries of a model's reasoning (Anthropic thinking blocks, Bedrock ``reasoningContent``):

==========================  ===========================================  ===========================
caller's shape              the reasoning text                           signatures, redacted data
==========================  ===========================================  ===========================
Anthropic Messages          ``thinking`` blocks (``thinking_delta``)     byte-exact
OpenAI Chat Completions     ``message.reasoning_content``                dropped, named
                            (streamed: ``delta.reasoning_content``)      ``thinking.signature``
OpenAI Responses            a ``reasoning`` output item, its             dropped, named
                            ``reasoning_text`` content (streamed:        ``thinking.signature``
                            ``response.reasoning_text.delta``)
==========================  ===========================================  ===========================

``reasoning_content`` is the field OpenAI-compatible servers (vLLM, DeepSeek, OpenRouter, LiteLLM)
use for reasoning text; the Chat Completions shape has no place for a signature, and a Responses
``reasoning`` item's ``encrypted_content`` is OpenAI's own encryption, which an Anthropic signature
is not. So the opaque parts are named as dropped (``x-routeproof-dropped``): exactly, from the
answer, for a plain call (:func:`answer_drops`); for a stream, whose header goes before the first
event, up front when the request asks for thinking from a provider that signs it
(:func:`stream_answer_drops`).

Citations (a request's documents with ``citations`` enabled, an Anthropic feature) are carried only
from Anthropic to an Anthropic caller: its own answer whole, or its stream's ``citations_delta``
events. From any other provider (Bedrock's ``citationsContent`` / ``citation`` deltas: its text is
kept, the citations are not modelled) or to any other shape they are named ``citations``, up front
from the request (:func:`citation_drops`).

OpenAI's ``message.annotations`` (a search model's URL citations) go to a Responses caller as
``output_text`` annotations (``core/formats/responses_answer.py``); the Anthropic shape has no
equivalent (its web-search citation needs an ``encrypted_index`` only Anthropic issues): named
``annotations`` (:func:`answer_drops`).
"""

from __future__ import annotations

import icontract

from routeproof.core.blocks import DocumentBlock, RedactedThinkingBlock, ThinkingBlock
from routeproof.core.capabilities import Capability, needed_capabilities
from routeproof.core.formats.responses_answer import responses_annotations
from routeproof.core.messages import WireFormat
from routeproof.core.types import ChatRequest, Choice

__all__ = [
    "ANNOTATIONS",
    "CITATIONS",
    "OPAQUE_THINKING",
    "SIGNING_PROTOCOLS",
    "answer_drops",
    "citation_drops",
    "stream_answer_drops",
    "thinking_text",
]

ANNOTATIONS = "annotations"
"""The name under which OpenAI's annotations are reported dropped for a caller whose shape has none."""
CITATIONS = "citations"
"""The name under which an answer's citations are reported dropped when they cannot reach the caller."""

OPAQUE_THINKING = "thinking.signature"
"""The name under which the opaque parts of thinking blocks (signatures, redacted thinking) are
reported dropped when the caller's shape has no place for them."""

SIGNING_PROTOCOLS = frozenset({WireFormat.ANTHROPIC_MESSAGES, WireFormat.BEDROCK_CONVERSE})
"""Provider protocols whose thinking blocks carry signatures (Anthropic, Bedrock ``reasoningContent``)."""

_KEEPS_SIGNATURES = frozenset({WireFormat.ANTHROPIC_MESSAGES, WireFormat.BEDROCK_CONVERSE})


def _thinking_text(choice: Choice) -> str:
    return "".join(block.thinking for block in choice.thinking if isinstance(block, ThinkingBlock))


@icontract.ensure(lambda choice, result: len(result) == sum(len(getattr(b, "thinking", "")) for b in choice.thinking))
@icontract.ensure(
    lambda choice, result: all(b.thinking in result for b in choice.thinking if isinstance(b, ThinkingBlock))
)
def thinking_text(choice: Choice) -> str:
    """The reasoning text of ``choice``: its thinking blocks' texts joined (redacted blocks have none)."""
    return _thinking_text(choice)


def _answer_drops(client: WireFormat, choice: Choice) -> tuple[str, ...]:
    if client in _KEEPS_SIGNATURES:
        return (ANNOTATIONS,) if choice.annotations_json is not None else ()
    opaque = any(
        isinstance(b, RedactedThinkingBlock) or (isinstance(b, ThinkingBlock) and b.signature) for b in choice.thinking
    )
    # a Responses caller gets the URL citations; an annotation of another type has no form there
    unformed = client is WireFormat.OPENAI_RESPONSES and responses_annotations(choice.annotations_json)[1] > 0
    return ((OPAQUE_THINKING,) if opaque else ()) + ((ANNOTATIONS,) if unformed else ())


@icontract.ensure(lambda client, result: client not in _KEEPS_SIGNATURES or OPAQUE_THINKING not in result)
@icontract.ensure(lambda result: set(result) <= {OPAQUE_THINKING, ANNOTATIONS})
@icontract.ensure(lambda choice, result: bool(choice.thinking) or OPAQUE_THINKING not in result)
@icontract.ensure(lambda choice, result: choice.annotations_json is not None or ANNOTATIONS not in result)
def answer_drops(client: WireFormat, choice: Choice) -> tuple[str, ...]:
    """What of ``choice`` the ``client`` shape has no place for (named in ``x-routeproof-dropped``)."""
    return _answer_drops(client, choice)


def _stream_answer_drops(client: WireFormat, provider: WireFormat | None, req: ChatRequest) -> tuple[str, ...]:
    if client in _KEEPS_SIGNATURES or provider not in SIGNING_PROTOCOLS:
        return ()
    return (OPAQUE_THINKING,) if Capability.THINKING in needed_capabilities(req) else ()


@icontract.ensure(lambda client, result: client not in _KEEPS_SIGNATURES or result == ())
@icontract.ensure(lambda provider, result: provider in SIGNING_PROTOCOLS or result == ())
@icontract.ensure(lambda result: set(result) <= {OPAQUE_THINKING})
def stream_answer_drops(client: WireFormat, provider: WireFormat | None, req: ChatRequest) -> tuple[str, ...]:
    """What a stream from a ``provider`` of that protocol answering ``req`` may carry that the
    ``client`` shape has no place for, named before the first event: thinking signatures, when
    ``req`` asks for thinking from a provider that signs it."""
    return _stream_answer_drops(client, provider, req)


def _asks_citations(req: ChatRequest) -> bool:
    return any(isinstance(b, DocumentBlock) and b.citations is True for m in req.messages for b in m.content)


def _citation_drops(client: WireFormat, provider: WireFormat | None, req: ChatRequest) -> tuple[str, ...]:
    carried = client is WireFormat.ANTHROPIC_MESSAGES and provider is WireFormat.ANTHROPIC_MESSAGES
    return () if carried or not _asks_citations(req) else (CITATIONS,)


@icontract.ensure(lambda result: set(result) <= {CITATIONS})
@icontract.ensure(
    lambda client, provider, result: (
        result == () or not (client is WireFormat.ANTHROPIC_MESSAGES and provider is WireFormat.ANTHROPIC_MESSAGES)
    )
)
def citation_drops(client: WireFormat, provider: WireFormat | None, req: ChatRequest) -> tuple[str, ...]:
    """``citations`` when ``req`` asks for document citations and the answer cannot bring them to the
    ``client`` shape (only Anthropic to an Anthropic caller carries them), else ()."""
    return _citation_drops(client, provider, req)
