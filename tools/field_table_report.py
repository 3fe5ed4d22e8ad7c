"""Print the field table's counts per protocol pair and its refusals, from ``core/formats/field_table.py``.

``python tools/field_table_report.py`` (with ``PYTHONPATH=src``): a Markdown table of verbatim /
translated / dropped-and-reported / refused rows per (source, target) pair, the same-protocol pairs
(every field verbatim: the installed SDK's request fields counted, future ones included), then each
refusal with its reason. The numbers in the issue notes come from here, so they are reproducible.
"""

from __future__ import annotations

import sys

from routeproof.core.formats.field_table import Treatment, pair_counts, refusals
from routeproof.core.messages import WireFormat


def _sdk_field_counts() -> dict[WireFormat, int]:
    """The number of request fields of the installed openai and anthropic SDKs' create params."""
    from anthropic.types import message_create_params as anthropic_params
    from openai.types.chat import completion_create_params as openai_params

    def keys(*types: type) -> set[str]:
        found: set[str] = set()
        for typed in types:
            for base in typed.__mro__:
                found |= set(getattr(base, "__annotations__", {}))
        return found

    return {
        WireFormat.OPENAI_CHAT: len(
            keys(openai_params.CompletionCreateParamsBase, openai_params.CompletionCreateParamsStreaming)
        ),
        WireFormat.ANTHROPIC_MESSAGES: len(
            keys(anthropic_params.MessageCreateParamsBase, anthropic_params.MessageCreateParamsStreaming)
        ),
    }


def report() -> str:
    """The Markdown report."""
    lines = [
        "| source -> target | verbatim | translated | dropped (reported) | refused | rows |",
        "|---|---|---|---|---|---|",
    ]
    for (source, target), counts in pair_counts().items():
        row = [counts[t] for t in (Treatment.VERBATIM, Treatment.TRANSLATED, Treatment.DROPPED, Treatment.REFUSED)]
        lines.append(f"| {source.value} -> {target.value} | " + " | ".join(map(str, row)) + f" | {sum(row)} |")
    for protocol, count in _sdk_field_counts().items():
        lines.append(f"| {protocol.value} -> {protocol.value} | all {count} SDK fields, future ones too | | | | |")
    lines += ["", "Refusals:", ""]
    lines += [f"- {row.source.value} -> {row.target.value} `{row.field}`: {row.note}" for row in refusals()]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.stdout.write(report() + "\n")
