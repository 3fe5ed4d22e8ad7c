"""``routeproof conformance matrix``: cases × implementations, from the per-implementation reports.

Each implementation's run writes ``conformance-<impl>.json`` (``report.write_report``); the matrix
reads several of them and renders one table, Bowtie-style: a row per case (its level and rule), a
column per implementation (its name and version), each cell ``pass``, ``fail`` with the first failed
check, or ``n/a`` with the reason; MUST, SHOULD and extension cases are totalled apart, and "conforms"
is decided by the MUST cases alone. The suite's own version (the protocol and the number of cases)
heads the table. Written as ``conformance-matrix.md`` and ``conformance-matrix.json``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from routeproof.conformance.subjects import PROTOCOL_VERSION as PROTOCOL

__all__ = [
    "Column",
    "load_column",
    "matrix_json",
    "matrix_markdown",
    "merge_columns",
    "report_paths",
    "write_matrix",
]

_LEVELS = ("must", "should", "extension")


@dataclass(frozen=True, slots=True, kw_only=True)
class Column:
    """One implementation's verdicts, keyed by case id."""

    name: str
    version: str
    cells: Mapping[str, Mapping[str, Any]]  # case id -> the report's case object

    def totals(self) -> dict[str, dict[str, int]]:
        """Per level: pass / fail / n/a counts."""
        table = {level: {"pass": 0, "fail": 0, "n/a": 0} for level in _LEVELS}
        for case in self.cells.values():
            table.setdefault(str(case.get("level", "must")), {"pass": 0, "fail": 0, "n/a": 0})[case["verdict"]] += 1
        return table

    def conforms(self) -> bool:
        """No MUST case failed."""
        return not any(c.get("level", "must") == "must" and c["verdict"] == "fail" for c in self.cells.values())


def load_column(path: Path) -> Column:
    """One ``conformance-<impl>.json`` report as a column."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    return Column(
        name=str(doc["implementation"]),
        version=str(doc.get("version", "")),
        cells={str(c["id"]): c for c in doc["cases"]},
    )


def merge_columns(columns: Sequence[Column]) -> list[Column]:
    """One column per (name, version): runs of one implementation under several static profiles (each
    fixing one chain length, so each case is n/a in all but one) merge, a verdict winning over n/a."""
    merged: dict[tuple[str, str], dict[str, Mapping[str, Any]]] = {}
    for column in columns:
        cells = merged.setdefault((column.name, column.version), {})
        for case_id, case in column.cells.items():
            if case_id not in cells or cells[case_id]["verdict"] == "n/a":
                cells[case_id] = case
    return [Column(name=name, version=version, cells=cells) for (name, version), cells in merged.items()]


def _cell(case: Mapping[str, Any] | None) -> str:
    if case is None:
        return "not run"
    verdict = str(case["verdict"])
    if verdict == "fail" and case.get("failures"):
        first = case["failures"][0]
        return f"fail: {first['check']}"
    if verdict == "n/a":
        return f"n/a: {str(case.get('reason', ''))[:60]}"
    return verdict


def _rows(columns: Sequence[Column]) -> list[tuple[str, str, str]]:
    """(case id, level, rule) for every case any column ran, in the order the first report lists them."""
    seen: dict[str, tuple[str, str, str]] = {}
    for column in columns:
        for case_id, case in column.cells.items():
            seen.setdefault(case_id, (case_id, str(case.get("level", "must")), str(case.get("rule", ""))))
    order = {level: n for n, level in enumerate(_LEVELS)}
    return sorted(seen.values(), key=lambda row: order.get(row[1], len(order)))


def matrix_markdown(columns: Sequence[Column]) -> str:
    """The whole matrix in Markdown: totals first, then one row per case."""
    rows = _rows(columns)
    head = "| | " + " | ".join(f"{c.name} {c.version}".strip() for c in columns) + " |"
    rule = "| --- |" + " --- |" * len(columns)
    lines = [
        f"# provider-routing-v1 conformance matrix ({PROTOCOL}, {len(rows)} cases)",
        "",
        head,
        rule,
        "| **conforms (MUST only)** | " + " | ".join("**yes**" if c.conforms() else "no" for c in columns) + " |",
    ]
    for level in _LEVELS:
        cells = []
        for c in columns:
            t = c.totals()[level]
            cells.append(f"{t['pass']} pass / {t['fail']} fail / {t['n/a']} n/a")
        lines.append(f"| {level} | " + " | ".join(cells) + " |")
    lines += ["", "| case | level | rule | " + " | ".join(c.name for c in columns) + " |"]
    lines.append("| --- | --- | --- |" + " --- |" * len(columns))
    for case_id, level, rule_name in rows:
        cells = [_cell(c.cells.get(case_id)).replace("|", "\\|") for c in columns]
        lines.append(f"| {case_id} | {level} | {rule_name} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def matrix_json(columns: Sequence[Column]) -> dict[str, Any]:
    """The matrix as data: the suite, each implementation with its totals, each case's cells."""
    return {
        "suite": {"protocol": PROTOCOL, "cases": len(_rows(columns))},
        "implementations": [
            {"name": c.name, "version": c.version, "conforms": c.conforms(), "levels": c.totals()} for c in columns
        ],
        "cases": [
            {
                "id": case_id,
                "level": level,
                "rule": rule_name,
                "cells": {c.name: _cell(c.cells.get(case_id)) for c in columns},
            }
            for case_id, level, rule_name in _rows(columns)
        ],
    }


def report_paths(given: Sequence[Path]) -> list[Path]:
    """The reports named, a directory standing for every ``conformance-<impl>.json`` in it."""
    paths: list[Path] = []
    for path in given:
        if path.is_dir():
            paths += sorted(p for p in path.rglob("conformance-*.json") if p.stem not in _NOT_IMPLEMENTATIONS)
        else:
            paths.append(path)
    return paths


_NOT_IMPLEMENTATIONS = {"conformance-matrix", "conformance-breaks"}


def write_matrix(reports: Sequence[Path], out_dir: Path) -> Path:
    """Read the reports (or directories of them), write ``conformance-matrix.{md,json}`` into ``out_dir``."""
    paths = report_paths(reports)
    if not paths:
        raise ValueError(f"no conformance-<impl>.json reports in {[str(p) for p in reports]!r}")
    columns = merge_columns([load_column(p) for p in paths])
    out_dir.mkdir(parents=True, exist_ok=True)
    md = out_dir / "conformance-matrix.md"
    md.write_text(matrix_markdown(columns), encoding="utf-8")
    (out_dir / "conformance-matrix.json").write_text(
        json.dumps(matrix_json(columns), indent=2) + "\n", encoding="utf-8"
    )
    return md
