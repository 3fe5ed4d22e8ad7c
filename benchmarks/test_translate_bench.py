"""Translate + normalise a 50-message conversation with tools (seed 003 kill criterion: p99 < 10 ms).

Not part of ``tox -e py`` (which runs ``tests/``). The measured p99 is printed and stored in the
benchmark's ``extra_info`` next to the 10 ms kill criterion (KILL-2), and the test asserts it: a
p99 at or past 10 ms fails the bench report. The measurement is 300 timed rounds after 10 warm-up
rounds; p99 is the nearest-rank 99th percentile. The assertion is on the *CPU* time of each round
(``time.process_time_ns``: the work translation does, which includes the GC), with the wall-clock p99
printed and stored beside it: on a shared 2-core runner the wall clock also counts the time the
process waited for a core (a wall p99 of 9.3 ms was seen at load average 5 against a median of 0.8 ms).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from pytest_benchmark.fixture import BenchmarkFixture

from routeproof.core.formats.cross_fields import caller_fields_plan
from routeproof.core.formats.normalize import normalize_openai
from routeproof.core.formats.translate import (
    anthropic_request_to_openai,
    anthropic_response_to_openai,
    parse_anthropic_request,
    request_to_anthropic,
    request_to_bedrock_converse,
    request_to_openai,
)
from routeproof.core.messages import WireFormat, WireOrigin

KILL_MS = 10.0  # seed 003 kill criterion KILL-2, asserted


def conversation(turns: int = 50) -> dict[str, Any]:
    """An agent-loop transcript: user asks, assistant calls two tools in parallel, results come back."""
    messages: list[dict[str, Any]] = []
    for turn in range(turns):
        if turn % 2 == 0:
            blocks: list[dict[str, Any]] = [
                {"type": "tool_result", "tool_use_id": f"toolu_{turn - 1}_{k}", "content": "ok " * 40}
                for k in range(2 if turn else 0)
            ]
            blocks.append({"type": "text", "text": f"step {turn}: please continue with the refactor ✓"})
            messages.append({"role": "user", "content": blocks})
        else:
            messages.append(
                {
                    "role": "assistant",
                    "content": [{"type": "text", "text": "Reading the files."}]
                    + [
                        {"type": "tool_use", "id": f"toolu_{turn}_{k}", "name": "file_read",
                         "input": {"path": f"src/mod_{k}.py", "range": [1, 200],
                                   "opts": {"follow": True, "enc": "utf-8"}}}
                        for k in range(2)
                    ],
                }
            )  # fmt: skip
    tool = {"name": "file_read", "description": "Read a file", "input_schema": {"type": "object"}}
    return {"model": "claude-sonnet-4-5", "max_tokens": 4096, "system": "You are a coding agent.",
            "tools": [tool], "messages": messages}  # fmt: skip


RESPONSE = {
    "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
    "content": [{"type": "text", "text": "Done."},
                {"type": "tool_use", "id": "toolu_x", "name": "file_read", "input": {"path": "a.py"}}],
    "stop_reason": "tool_use", "stop_sequence": None,
    "usage": {"input_tokens": 9000, "output_tokens": 120, "cache_read_input_tokens": 8000},
}  # fmt: skip


def test_translation_p99_under_10_ms(benchmark: BenchmarkFixture) -> None:
    """KILL-2: one turn's format work (request Anthropic->OpenAI, response back, normalise) has p99 < 10 ms."""
    body = conversation()
    cpu_ns: list[int] = []

    def one_turn() -> None:
        start = time.process_time_ns()
        anthropic_request_to_openai(body)
        normalize_openai(anthropic_response_to_openai(RESPONSE))
        cpu_ns.append(time.process_time_ns() - start)

    _kill_2(benchmark, one_turn, cpu_ns, "translate+normalise")


def _kill_2(benchmark: BenchmarkFixture, one_turn: Callable[[], None], cpu_ns: list[int], label: str) -> None:
    """Run ``one_turn`` 300 times, record its wall and CPU p99, and hold KILL-2 (CPU p99 < 10 ms)."""
    # pytest-benchmark ships no annotations for pedantic()
    benchmark.pedantic(one_turn, rounds=300, iterations=1, warmup_rounds=10)  # type: ignore[no-untyped-call]
    assert benchmark.stats is not None
    wall_p99_ms = _p99(benchmark.stats.stats.data) * 1000
    cpu_p99_ms = _p99([ns / 1e9 for ns in cpu_ns[-300:]]) * 1000
    benchmark.extra_info.update(
        p99_ms=wall_p99_ms, cpu_p99_ms=cpu_p99_ms, kill_ms=KILL_MS, meets_kill_criterion=cpu_p99_ms < KILL_MS
    )
    verdict = "meets" if cpu_p99_ms < KILL_MS else "MISSES"
    print(
        f"KILL-2 {label} p99 = {cpu_p99_ms:.3f} ms CPU ({wall_p99_ms:.3f} ms wall): {verdict} the {KILL_MS} ms "
        "kill criterion"
    )
    assert cpu_p99_ms < KILL_MS, f"KILL-2: {label} p99 {cpu_p99_ms:.3f} ms CPU is not under {KILL_MS} ms"


def _p99(seconds: list[float]) -> float:
    """Nearest-rank 99th percentile."""
    ordered = sorted(seconds)
    return ordered[int(0.99 * (len(ordered) - 1))]


_PNG = "iVBORw0KGgo" + "A" * 4000  # a ~3 KB base64 image
_SIGNATURE = "EqQBCgIYAhIM" + "x" * 300 + "=="


def rich_conversation(turns: int = 50) -> dict[str, Any]:
    """The agent loop above with what today's apps send: a cached system block list, an image and a PDF in
    user turns, signed thinking before each assistant turn's tool calls, cache markers, strict tools, options."""
    body = conversation(turns)
    for index, message in enumerate(body["messages"]):
        if message["role"] == "user" and index % 4 == 0:
            image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": _PNG}}
            pdf = {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": _PNG},
                   "title": "spec.pdf"}  # fmt: skip
            message["content"] += [image, pdf]
        if message["role"] == "assistant":
            thinking = {"type": "thinking", "thinking": "Let me read both files first. " * 5, "signature": _SIGNATURE}
            message["content"] = [thinking, *message["content"]]
    body["system"] = [
        {"type": "text", "text": "You are a coding agent."},
        {"type": "text", "text": "Project rules: " * 50, "cache_control": {"type": "ephemeral", "ttl": "1h"}},
    ]
    body["tools"][0] |= {"strict": True, "cache_control": {"type": "ephemeral"}}
    body |= {"thinking": {"type": "enabled", "budget_tokens": 2048}, "metadata": {"user_id": "u-1"},
             "tool_choice": {"type": "auto", "disable_parallel_tool_use": False}}  # fmt: skip
    return body


def test_rich_translation_p99_under_10_ms(benchmark: BenchmarkFixture) -> None:
    """KILL-2 on the whole content model: 50 messages with images, PDFs, signed thinking and cache markers,
    parsed and printed for OpenAI, for Anthropic (same protocol) and for Bedrock Converse, p99 < 10 ms CPU.
    The Bedrock body includes what its provider does first: every field the caller set judged by the
    field table (``caller_fields_plan``, which parses the caller's body again for what it left out)."""
    body = rich_conversation()
    # as the gateway keeps it: the caller's body and the paths its parse left out
    untranslated = parse_anthropic_request(body)[1].untranslated
    origin = WireOrigin(protocol=WireFormat.ANTHROPIC_MESSAGES, body_json=json.dumps(body), untranslated=untranslated)
    cpu_ns: list[int] = []

    def one_turn() -> None:
        start = time.process_time_ns()
        req, extras = parse_anthropic_request(body)
        request_to_openai(req, "gpt-4o")
        request_to_anthropic(req, extras.model)
        caller_fields_plan(replace(req, origin=origin), req, WireFormat.BEDROCK_CONVERSE)
        request_to_bedrock_converse(req)
        normalize_openai(anthropic_response_to_openai(RESPONSE))
        cpu_ns.append(time.process_time_ns() - start)

    _kill_2(benchmark, one_turn, cpu_ns, "rich (images, PDFs, thinking, cache markers; 3 targets)")
