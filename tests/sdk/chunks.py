"""Chat Completions stream chunks as mock stream items (shared by the SDK tests that script streams)."""

from __future__ import annotations

from typing import Any


def chat_chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    """One ``chat.completion.chunk`` whose only choice carries ``delta`` (and ``finish``)."""
    choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
    return {
        "data": {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o", "choices": [choice]}
    }
