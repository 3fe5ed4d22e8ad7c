"""The report of one implementation: ``reports/conformance-<impl>.{md,json,xml}``; and the kill table
of the planted breaks: ``reports/conformance-breaks.{md,json}``."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from xml.etree import ElementTree as ET

from routeproof.conformance.run import CaseResult, RunResult, impl_slug

__all__ = [
    "LEVELS",
    "conforms",
    "level_markdown",
    "level_scores",
    "scorecard",
    "scorecard_markdown",
    "write_breaks_report",
    "write_report",
]

_VERDICTS = ("pass", "fail", "n/a")


def scorecard(results: Sequence[CaseResult]) -> dict[str, dict[str, int]]:
    """Per rule: how many cases passed, failed, were n/a."""
    table: dict[str, dict[str, int]] = {}
    for r in results:
        row = table.setdefault(r.rule, dict.fromkeys(_VERDICTS, 0))
        row[r.verdict] += 1
    return dict(sorted(table.items()))


LEVELS = ("must", "should", "extension")
"""The case levels, scored apart: only ``must`` decides "conforms to provider-routing-v1"."""


def level_scores(results: Sequence[CaseResult]) -> dict[str, dict[str, int]]:
    """Per level: how many cases passed, failed, were n/a."""
    table = {level: dict.fromkeys(_VERDICTS, 0) for level in LEVELS}
    for r in results:
        table.setdefault(r.level, dict.fromkeys(_VERDICTS, 0))[r.verdict] += 1
    return table


def conforms(results: Sequence[CaseResult]) -> bool:
    """Conforms to provider-routing-v1: no MUST case failed (n/a cases are listed, never passed)."""
    return not any(r.level == "must" and r.verdict == "fail" for r in results)


def level_markdown(results: Sequence[CaseResult]) -> str:
    """The headline: MUST (the contract), SHOULD (each allowed behaviour accepted), extensions apart."""
    scores = level_scores(results)
    must = scores["must"]
    verdict = "**yes**" if conforms(results) else "**no**"
    lines = [
        f"Conforms to provider-routing-v1 (MUST cases only): {verdict} — {must['pass']} pass, {must['fail']} fail, "
        f"{must['n/a']} n/a.",
        "",
        "| level | pass | fail | n/a |",
        "| --- | ---: | ---: | ---: |",
    ]
    lines += [f"| {lv} | {row['pass']} | {row['fail']} | {row['n/a']} |" for lv, row in scores.items()]
    return "\n".join(lines)


def scorecard_markdown(results: Sequence[CaseResult]) -> str:
    """The per-rule table in Markdown."""
    lines = ["| rule | pass | fail | n/a |", "| --- | ---: | ---: | ---: |"]
    totals = dict.fromkeys(_VERDICTS, 0)
    for rule, row in scorecard(results).items():
        lines.append(f"| {rule} | {row['pass']} | {row['fail']} | {row['n/a']} |")
        for v in _VERDICTS:
            totals[v] += row[v]
    lines.append(f"| **total** | **{totals['pass']}** | **{totals['fail']}** | **{totals['n/a']}** |")
    return "\n".join(lines)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def write_report(run: RunResult, out_dir: Path, *, expected_failures: Mapping[str, str] | None = None) -> Path:
    """Write the three files; returns the Markdown path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    slug = impl_slug(run.impl)
    base = out_dir / f"conformance-{slug}"
    md = [
        f"# provider-routing-v1 conformance: {run.impl} {run.version}",
        "",
        f"{len(run.results)} cases in {run.wall_s:.1f} s; capabilities: {', '.join(run.capabilities) or 'none'}.",
        "",
        level_markdown(run.results),
        "",
        scorecard_markdown(run.results),
        "",
        "| case | level | rule | verdict | evidence |",
        "| --- | --- | --- | --- | --- |",
    ]
    for r in run.results:
        evidence = r.reason or "; ".join(f.line(",") for f in r.failures)
        if r.failed_under_load:
            first = "; ".join(f.line(",") for f in r.failed_under_load)
            evidence = f"(run again alone, {r.verdict}; with other cases running: {first}) {evidence}"
        if expected_failures and r.id in expected_failures:
            evidence = f"(expected: {expected_failures[r.id]}) {evidence}"
        md.append(f"| {r.id} | {r.level} | {r.rule} | {r.verdict} | {_cell(evidence)[:400]} |")
    base.with_suffix(".md").write_text("\n".join(md) + "\n", encoding="utf-8")
    doc = {
        "implementation": run.impl,
        "version": run.version,
        "capabilities": list(run.capabilities),
        "wall_s": round(run.wall_s, 2),
        "conforms": conforms(run.results),
        "levels": level_scores(run.results),
        "scorecard": scorecard(run.results),
        "cases": [r.as_json() for r in run.results],
    }
    base.with_suffix(".json").write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    suite = ET.Element(
        "testsuite",
        name=f"conformance-{slug}",
        tests=str(len(run.results)),
        failures=str(sum(r.verdict == "fail" for r in run.results)),
        skipped=str(sum(r.verdict == "n/a" for r in run.results)),
        time=f"{run.wall_s:.3f}",
    )
    for r in run.results:
        tc = ET.SubElement(suite, "testcase", classname=f"{r.level}.{r.rule}", name=r.id, time=f"{r.duration_s:.3f}")
        if r.verdict == "fail":
            failure = ET.SubElement(tc, "failure", message=r.failures[0].check if r.failures else "fail")
            failure.text = "\n".join(f.line() for f in r.failures)
        elif r.verdict == "n/a":
            ET.SubElement(tc, "skipped", message=r.reason)
    ET.ElementTree(suite).write(base.with_suffix(".xml"), encoding="utf-8", xml_declaration=True)
    return base.with_suffix(".md")


def write_breaks_report(rows: Sequence[Mapping[str, object]], out_dir: Path) -> Path:
    """The kill table: each planted break, the rules it breaks, the cases that killed it."""
    out_dir.mkdir(parents=True, exist_ok=True)
    md = [
        "# Planted breaks: which cases killed which",
        "",
        "A break is *isolated* when no other break of its rules is killed by the same cases failing the",
        "same checks: some case fails it for a reason of its own.",
        "",
        "| break | rules | killed | isolated | killed by (the checks that failed) |",
        "| --- | --- | --- | --- | --- |",
    ]
    for row in rows:
        killers = row["killed_by"]
        assert isinstance(killers, list)
        rules = row["rules"]
        assert isinstance(rules, list)
        evidence = row.get("evidence") or {}
        assert isinstance(evidence, dict)
        twins = row.get("twins") or []
        assert isinstance(twins, list)
        shown = (
            ", ".join(f"{k} ({', '.join(evidence.get(k, ()))})" if evidence.get(k) else str(k) for k in killers)
            if killers
            else "NOTHING (survived)"
        )
        isolated = "no: same as " + ", ".join(str(t) for t in twins) if twins else "yes"
        md.append(
            f"| {row['break']} | {', '.join(str(r) for r in rules)} | {'yes' if killers else 'NO'} | {isolated} "
            f"| {shown} |"
        )
    path = out_dir / "conformance-breaks.md"
    path.write_text("\n".join(md) + "\n", encoding="utf-8")
    (out_dir / "conformance-breaks.json").write_text(json.dumps(list(rows), indent=2) + "\n", encoding="utf-8")
    return path
