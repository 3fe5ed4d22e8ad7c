"""The chaos report: a table on the terminal, ``reports/chaos.md`` and ``reports/chaos.json``."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from chaos.runner import INVARIANTS, RunResult

__all__ = ["RESULTS", "markdown", "write_reports"]

RESULTS: list[RunResult] = []  # filled by the tests, read at the end of the session
SHORT = {
    "ends_by_deadline": "deadline",
    "router_outcome": "typed",
    "records_match_journals": "records",
    "reservations_released": "budget",
    "no_false_completion": "whole",
    "no_partial_tool_call": "tools",
    "pool_usable_after": "pool",
    "no_request_after_return": "late",
    "expected": "expect",
}


def markdown(results: Sequence[RunResult], server_kind: str) -> str:
    """The table as Markdown (one row per scenario run)."""
    head = ["scenario", "toxics", "entry", "shape", "outcome", "attempts", "elapsed/deadline ms"]
    head += [SHORT[n] for n in INVARIANTS] + ["verdict"]
    lines = [
        "# Chaos report",
        "",
        f"Toxiproxy: {server_kind}. {len(results)} scenario runs; "
        f"{sum(r.verdict == 'pass' for r in results)} pass, {sum(r.verdict == 'fail' for r in results)} fail, "
        f"{sum(r.verdict == 'xfail' for r in results)} known router bugs (xfail).",
        "",
        "Invariants: " + "; ".join(f"`{SHORT[n]}` = {n}" for n in INVARIANTS) + ".",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for r in results:
        row = r.to_json()
        cells = [
            str(row["scenario"]),
            "<br>".join(str(t) for t in row["toxics"]) if isinstance(row["toxics"], list) else "",
            "stream" if row["stream"] else "call",
            str(row["shape"]),
            str(row["outcome"]).replace("|", "/")[:80],
            str(row["attempts"]),
            f"{row['elapsed_ms']}/{row['deadline_ms']}",
        ]
        cells += ["ok" if r.invariants[n] else "**NO**" for n in INVARIANTS]
        cells.append(r.verdict if not r.run.scenario.xfail else f"{r.verdict} ({r.run.scenario.xfail})")
        lines.append("| " + " | ".join(cells) + " |")
    notes = [f"- {r.run.id}: {'; '.join(r.notes)}" for r in results if r.notes]
    if notes:
        lines += ["", "Notes:", "", *notes]
    return "\n".join(lines) + "\n"


def write_reports(results: Sequence[RunResult], server_kind: str, directory: Path) -> tuple[Path, Path]:
    """Write chaos.md and chaos.json under ``directory``; return their paths."""
    directory.mkdir(parents=True, exist_ok=True)
    md = directory / "chaos.md"
    md.write_text(markdown(results, server_kind), encoding="utf-8")
    js = directory / "chaos.json"
    js.write_text(json.dumps([r.to_json() for r in results], indent=2) + "\n", encoding="utf-8")
    return md, js
