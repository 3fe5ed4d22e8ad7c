"""Print which Responses API fields and events are carried verbatim, translated or refused, per target.

    python tools/responses_fields.py            # a Markdown table, from RESPONSES_FIELDS and the field table

Targets: OpenAI-Responses (a provider with ``responses_api = true``: the caller's body verbatim),
Chat-compatible (the Chat Completions rewriting, sent as a Chat body), Anthropic and Bedrock (the
rewriting, then translated by the field table's OpenAI-Chat rows).
"""

from __future__ import annotations

import sys

from routeproof.core.formats.field_table import treatment_of
from routeproof.core.formats.responses_api import RESPONSES_FIELDS, Handling
from routeproof.core.messages import WireFormat

CHAT_FIELD = {
    "input": "messages",
    "instructions": "messages",
    "max_output_tokens": "max_completion_tokens",
    "text": "response_format",
    "reasoning": "reasoning_effort",
    "tools": "tools",
    "tool_choice": "tool_choice",
    "top_logprobs": "top_logprobs",
}
"""The Chat Completions field a TRANSLATED Responses field becomes (the others keep their name)."""
TARGETS = (("Anthropic", WireFormat.ANTHROPIC_MESSAGES), ("Bedrock", WireFormat.BEDROCK_CONVERSE))
TRANSLATED_EVENTS = (
    "response.created, response.in_progress, response.output_item.added/.done, response.content_part.added/.done, "
    "response.output_text.delta/.done (token logprobs when asked: Chat-compatible only), "
    "response.reasoning_text.delta/.done (the thinking of an Anthropic or Bedrock answer, in a reasoning item; "
    "its signature named thinking.signature), response.function_call_arguments.delta/.done, response.completed, "
    "response.incomplete, response.failed (each with sequence_number; ids are the gateway's resp_rp...)"
)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def rows() -> list[str]:
    """The Markdown table of every RESPONSES_FIELDS row."""
    out = [
        "| field | OpenAI-Responses | Chat-compatible | Anthropic | Bedrock |",
        "| --- | --- | --- | --- | --- |",
    ]
    for field, (handling, note) in sorted(RESPONSES_FIELDS.items()):
        if handling is Handling.ROUTER:
            cells = ["set by the router: " + note] * 4
        elif handling is Handling.STATEFUL:
            refused = "refused (400 naming it; a skip when the chain has a Responses provider): " + note
            cells = ["verbatim", refused, refused, refused]
        elif handling is Handling.ACCEPTED:
            cells = ["verbatim", "accepted: " + note, "accepted: " + note, "accepted: " + note]
        else:
            chat = CHAT_FIELD.get(field, field)
            cells = ["verbatim", f"translated: {note}"]
            for _, target in TARGETS:
                row = treatment_of(WireFormat.OPENAI_CHAT, chat, target)
                cells.append(f"translated to `{chat}`, then {row.treatment.value}: {row.note}")
        out.append(f"| `{field}` | " + " | ".join(_cell(c) for c in cells) + " |")
    out += [
        "",
        "| events | OpenAI-Responses | Chat-compatible, Anthropic, Bedrock |",
        "| --- | --- | --- |",
        f"| streamed | every event OpenAI sends, relayed byte for byte (its ids, sequence numbers, reasoning, "
        f"annotations, hosted-tool events); a cut after content: one response.failed continuing them "
        f"| {_cell(TRANSLATED_EVENTS)}; not emitted: refusal parts (the refusal is the text), annotation events |",
        "| field newer than this code | verbatim | refused (400 naming it, or a skip) |",
    ]
    return out


def main() -> int:
    """Print the table."""
    sys.stdout.write("\n".join(rows()) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
