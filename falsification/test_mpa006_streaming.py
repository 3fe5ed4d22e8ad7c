"""FALSIFY-MPA-006: every stream ends with MessageStop carrying usage, or with one Error — never a
silent end — through the full router over real-socket mock servers with injected faults."""

from __future__ import annotations

import asyncio
import random
import time

import pytest

from falsification.report import record_verdict
from falsification.seeds import base
from routeproof.core.health import HealthConfig
from routeproof.core.types import MessageStop, ProviderKind, StreamError
from routeproof.mock import CutMode, Scripted
from tests.streaming.harness import collect, fleet, open_stream, partial_tool_calls, policy

pytestmark = [pytest.mark.falsify, pytest.mark.asyncio]
KINDS = (ProviderKind.ANTHROPIC, ProviderKind.OPENAI, ProviderKind.BEDROCK)
STREAMS = 240
SEED = base(6)


def _fault(rng: random.Random) -> tuple[str, Scripted]:
    """A random fault (or none) for one streamed answer."""
    roll = rng.random()
    drip = rng.choice([0.0, 0.0, 0.002])
    if roll < 0.35:
        return "none", Scripted(delay_between_chunks_s=drip)
    if roll < 0.75:
        mode = rng.choice([CutMode.RESET, CutMode.CLOSE])
        return "cut", Scripted(cut_after_bytes=rng.randrange(0, 1600), cut_mode=mode, delay_between_chunks_s=drip)
    if roll < 0.85:
        return "status", Scripted(status=rng.choice([429, 500, 503]))
    return "malformed", Scripted(malformed_body=True)


async def test_mpa_006_every_stream_ends_with_message_stop_or_error() -> None:
    """240 streams with random cuts, drips, statuses and malformed bodies: one end event each."""
    rng = random.Random(SEED)
    counts = {"message_stop": 0, "error": 0, "silent": 0, "double_end": 0, "stop_without_usage": 0,
              "partial_tool": 0, "raised": 0, "clean_runs_not_completed": 0}  # fmt: skip
    by_fault: dict[str, dict[str, int]] = {}  # injected fault -> ending -> streams, for the report
    t0 = time.perf_counter()
    async with asyncio.timeout(240), fleet(health=HealthConfig(failure_threshold=10**6)) as f:
        for _ in range(STREAMS):
            kind = rng.choice(KINDS)
            server = f.server(kind)
            server.reset()
            label, step = _fault(rng)
            server.script(step)
            tool = rng.random() < 0.5
            try:
                events = await collect(open_stream(f, policy(kind), asyncio.get_running_loop().time() + 10, tool=tool))
            except Exception:  # a RouterError before the first token is a clean, loud end too
                counts["raised"] += 1
                _tally(by_fault, label, "raised")
                continue
            ends = [e for e in events if isinstance(e, MessageStop | StreamError)]
            if not ends:
                counts["silent"] += 1
                _tally(by_fault, label, "silent")
            elif len(ends) > 1 or events[-1] is not ends[0]:
                counts["double_end"] += 1
                _tally(by_fault, label, "double_end")
            elif isinstance(ends[0], MessageStop):
                counts["message_stop"] += 1
                _tally(by_fault, label, "message_stop")
                if ends[0].usage.prompt_tokens + ends[0].usage.completion_tokens == 0:
                    counts["stop_without_usage"] += 1
            else:
                counts["error"] += 1
                _tally(by_fault, label, "error")
                if label == "none":
                    counts["clean_runs_not_completed"] += 1
            counts["partial_tool"] += partial_tool_calls(events)
    took = time.perf_counter() - t0
    bad = {k: v for k, v in counts.items() if k not in ("message_stop", "error", "raised") and v}
    record_verdict(
        "FALSIFY-MPA-006",
        evidence=f"{STREAMS} streams over 3 shapes with random faults in {took:.1f} s: "
        f"{counts['message_stop']} MessageStop with usage, {counts['error']} 'stream interrupted' errors, "
        f"{counts['raised']} raised before the first token, {counts['silent']} silent ends, "
        f"{counts['double_end']} double ends, {counts['partial_tool']} partial tool calls",
        survived=not bad,
        procedure="universal claim sampled: every one of the random streams must end exactly once (MessageStop "
        "with usage or an error); one silent or double end falsifies",
        seeds=f"{SEED} (one stream of {STREAMS} faults)",
        data={"endings": {"streams": STREAMS, "counts": counts, "by_fault": by_fault}},
    )
    assert not bad, counts


def _tally(by_fault: dict[str, dict[str, int]], fault: str, ending: str) -> None:
    """Count one stream that had ``fault`` injected and ended as ``ending`` (report data only)."""
    endings = by_fault.setdefault(fault, {})
    endings[ending] = endings.get(ending, 0) + 1
