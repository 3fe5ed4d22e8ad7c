"""Write ``falsification/fixtures/usage_bodies.json``: provider response bodies for H0-COST.

Each entry is one call as a provider would answer it, in that provider's own wire format (an
Anthropic Messages body, an OpenAI/OpenRouter Chat Completions body, a Bedrock Converse body), with
the model, the provider, and the time of the call. The token counts are drawn once from a seeded
generator and then kept as data: H0-COST reads this file, it does not regenerate it, so the bodies
are fixed inputs that two independent calculators price. They are synthetic (no live provider was
called; this workplace has no network), shaped like the providers' documented responses.

Run ``python -m benchmarks.make_usage_fixtures`` only to change the fixtures on purpose.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parents[1] / "falsification" / "fixtures" / "usage_bodies.json"
RECORDED_AT = "2026-11-30T12:00:00Z"  # the day the fixtures were made: priced at that day's published prices
SEED = 5
CALLS = 1_000
MODELS = (
    ("anthropic", "claude-sonnet-4-20250514"),
    ("anthropic", "claude-opus-4-20250514"),
    ("anthropic", "claude-3-5-haiku-20241022"),
    ("openai", "gpt-4o"),
    ("openai", "gpt-4o-mini"),
    ("bedrock", "anthropic.claude-sonnet-4-20250514-v1:0"),
    ("openrouter", "meta-llama/llama-3.1-70b-instruct"),
)


def _body(provider: str, model: str, rng: random.Random, i: int) -> dict[str, Any]:
    fresh, out = rng.randrange(0, 200_000), rng.randrange(0, 8_192)
    read, write = rng.randrange(0, 100_000), rng.randrange(0, 50_000)
    if provider == "anthropic":
        usage = {"input_tokens": fresh, "output_tokens": out, "cache_read_input_tokens": read,
                 "cache_creation_input_tokens": write}  # fmt: skip
        return {"id": f"msg_{i}", "type": "message", "role": "assistant", "model": model,
                "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn", "stop_sequence": None,
                "usage": usage}  # fmt: skip
    if provider == "bedrock":
        usage = {"inputTokens": fresh, "outputTokens": out, "totalTokens": fresh + out + read + write,
                 "cacheReadInputTokens": read, "cacheWriteInputTokens": write}  # fmt: skip
        return {"output": {"message": {"role": "assistant", "content": [{"text": "ok"}]}},
                "stopReason": "end_turn", "usage": usage, "metrics": {"latencyMs": 100}}  # fmt: skip
    # OpenAI Chat Completions: prompt_tokens includes the cached part; no cache-write count
    prompt = fresh + read
    return {"id": f"chatcmpl-{i}", "object": "chat.completion", "created": 1_764_504_000, "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": out, "total_tokens": prompt + out,
                      "prompt_tokens_details": {"cached_tokens": read}}}  # fmt: skip


def main() -> None:
    """Draw the calls and write them."""
    rng = random.Random(SEED)
    calls = []
    for i in range(CALLS):
        provider, model = rng.choice(MODELS)
        calls.append({"provider": provider, "model": model, "at": RECORDED_AT, "body": _body(provider, model, rng, i)})
    OUT.parent.mkdir(parents=True, exist_ok=True)
    lines = ",\n".join(json.dumps(call, sort_keys=True, separators=(",", ":")) for call in calls)
    OUT.write_text(f"[\n{lines}\n]\n", encoding="utf-8")
    print(f"wrote {len(calls)} bodies to {OUT}")


if __name__ == "__main__":
    main()
