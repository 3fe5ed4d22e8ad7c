"""What of an answer each client shape has no place for (``core/formats/answer_drops.py``), value by value."""

from __future__ import annotations

from routeproof.content import Reasoning, ReasoningEffort
from routeproof.core.blocks import DocumentBlock, RedactedThinkingBlock, SourceKind, ThinkingBlock
from routeproof.core.formats.answer_drops import (
    ANNOTATIONS,
    CITATIONS,
    OPAQUE_THINKING,
    answer_drops,
    citation_drops,
    stream_answer_drops,
    thinking_text,
)
from routeproof.core.messages import Message, Role, TextBlock, WireFormat
from routeproof.core.types import ChatRequest, Choice

SIGNED = Choice(content="hi", thinking=(ThinkingBlock(thinking="a", signature="c2ln"), ThinkingBlock(thinking="b")))
REDACTED = Choice(thinking=(RedactedThinkingBlock(data="ZW5j"),))
ASKS = ChatRequest(messages=(Message.user("hi"),), reasoning=Reasoning(effort=ReasoningEffort.LOW))
PLAIN = ChatRequest(messages=(Message.user("hi"),))


def test_the_reasoning_text_is_the_thinking_blocks_joined() -> None:
    """The thinking texts in order; a redacted block has none."""
    assert thinking_text(SIGNED) == "ab"
    assert thinking_text(REDACTED) == ""
    assert thinking_text(Choice()) == ""


def test_openai_shapes_name_signatures_and_redacted_thinking_anthropic_keeps_them() -> None:
    """Chat Completions and Responses name the opaque parts; Anthropic Messages carries them."""
    for client in (WireFormat.OPENAI_CHAT, WireFormat.OPENAI_RESPONSES):
        assert answer_drops(client, SIGNED) == (OPAQUE_THINKING,)
        assert answer_drops(client, REDACTED) == (OPAQUE_THINKING,)
        assert answer_drops(client, Choice(thinking=(ThinkingBlock(thinking="x"),))) == ()  # nothing opaque
        assert answer_drops(client, Choice(content="x")) == ()
    assert answer_drops(WireFormat.ANTHROPIC_MESSAGES, SIGNED) == ()


def test_a_stream_names_the_signature_up_front_when_a_signing_provider_is_asked_to_think() -> None:
    """Up front: only for a thinking request, to a provider that signs, for a client that cannot carry it."""
    assert stream_answer_drops(WireFormat.OPENAI_CHAT, WireFormat.ANTHROPIC_MESSAGES, ASKS) == (OPAQUE_THINKING,)
    assert stream_answer_drops(WireFormat.OPENAI_RESPONSES, WireFormat.BEDROCK_CONVERSE, ASKS) == (OPAQUE_THINKING,)
    assert stream_answer_drops(WireFormat.OPENAI_CHAT, WireFormat.ANTHROPIC_MESSAGES, PLAIN) == ()
    assert stream_answer_drops(WireFormat.OPENAI_CHAT, WireFormat.OPENAI_CHAT, ASKS) == ()
    assert stream_answer_drops(WireFormat.OPENAI_CHAT, None, ASKS) == ()
    assert stream_answer_drops(WireFormat.ANTHROPIC_MESSAGES, WireFormat.ANTHROPIC_MESSAGES, ASKS) == ()


def test_citations_are_named_unless_anthropic_answers_an_anthropic_caller() -> None:
    """A request with cited documents: only Anthropic -> Anthropic carries the citations; else named."""
    doc = DocumentBlock(source=SourceKind.TEXT, data="The sky is blue.", citations=True)
    cited = ChatRequest(messages=(Message(role=Role.USER, content=(doc, TextBlock(text="colour?"))),))
    ant, bedrock, chat = WireFormat.ANTHROPIC_MESSAGES, WireFormat.BEDROCK_CONVERSE, WireFormat.OPENAI_CHAT
    assert citation_drops(ant, ant, cited) == ()
    assert citation_drops(ant, bedrock, cited) == (CITATIONS,)
    assert citation_drops(chat, ant, cited) == (CITATIONS,)
    assert citation_drops(ant, bedrock, PLAIN) == ()
    uncited = ChatRequest(
        messages=(Message(role=Role.USER, content=(DocumentBlock(source=SourceKind.TEXT, data="x"),)),)
    )
    assert citation_drops(ant, bedrock, uncited) == ()


def test_annotations_go_to_a_responses_caller_and_are_named_for_an_anthropic_one() -> None:
    """OpenAI's url_citation annotations: no drop for Responses (translated), named for Anthropic;
    an annotation of another type has no Responses form: named."""
    url = '[{"type":"url_citation","url_citation":{"url":"https://x.test","title":"x","start_index":0,"end_index":1}}]'
    cited = Choice(content="x", annotations_json=url)
    assert answer_drops(WireFormat.OPENAI_RESPONSES, cited) == ()
    assert answer_drops(WireFormat.ANTHROPIC_MESSAGES, cited) == (ANNOTATIONS,)
    odd = Choice(content="x", annotations_json='[{"type":"file_path","file_path":{"file_id":"f"}}]')
    assert answer_drops(WireFormat.OPENAI_RESPONSES, odd) == (ANNOTATIONS,)
