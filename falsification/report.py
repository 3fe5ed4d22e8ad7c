"""The verdict report: one row per contract claim, written as Markdown, JSON and JUnit XML.

A falsification test measures its evidence, calls :func:`record_verdict`, then asserts. Rows that
no test recorded are reported as "not run" (never "survived").

Every recording states its ``procedure`` (how the verdict is reached: an exhaustive walk, an
all-seeds statement, a sequential test...) and its ``seeds`` (which seeds, or why there are none);
:func:`record_verdict` refuses a recording without them, and the evidence text starts with both
(``METHOD ...; SEEDS ...: measured``), so the Markdown, JUnit and HTML reports show them.

Beside the evidence text, the JSON carries per row the ``procedure`` and ``seeds``, the ``method``
(the recording tests' node ids and one-line docstrings) and ``data``: structured evidence for
``routeproof report``'s plots. Each recording contributes its own top-level keys to ``data`` (e.g.
``real_socket`` and ``virtual`` for FALSIFY-MPA-007); the shapes are documented where the rows write them and read in
``routeproof.report.falsify``. Neither field takes part in any verdict.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

__all__ = [
    "ROWS",
    "Row",
    "Verdict",
    "record_verdict",
    "recorded",
    "render_markdown",
    "set_current_test",
    "write_reports",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class Row:
    """A claim the contract makes and how it would be shown wrong."""

    id: str
    claim: str
    prediction: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict:
    """What one run found for one row."""

    id: str
    claim: str
    prediction: str
    evidence: str
    verdict: str  # "survived" | "falsified" | "not run"
    method: str = ""  # "node id: docstring" of each test that recorded the row, "; "-joined
    procedure: str = ""  # how each recording reached its verdict, "; "-joined
    seeds: str = ""  # each recording's seeds (or why it has none), "; "-joined
    data: Mapping[str, object] = field(default_factory=dict)  # structured evidence for the plots


ROWS: tuple[Row, ...] = (
    Row(id="FALSIFY-MPA-001", claim="Privacy tiers prevent data egress",
        prediction="Sovereign tier never calls an external endpoint"),
    Row(id="FALSIFY-MPA-002", claim="Failover improves availability",
        prediction="After 2 failures on provider A, the next request goes to provider B"),
    Row(id="FALSIFY-MPA-003", claim="Cost tracking is accurate",
        prediction="The request after the session budget is exhausted returns BudgetExhausted"),
    Row(id="FALSIFY-MPA-004", claim="Backoff prevents thundering herd",
        prediction="No retry delay exceeds the 30 s cap"),
    Row(id="FALSIFY-MPA-005", claim="Format translation is lossless",
        prediction="Anthropic messages survive the round trip through OpenAI format"),
    Row(id="FALSIFY-MPA-006", claim="SSE streaming is reliable",
        prediction="Every stream ends with MessageStop carrying usage, or with an Error"),
    Row(id="FALSIFY-MPA-007", claim="Cascade routing is resilient",
        prediction="Calls complete despite 50 % random provider failures"),
    Row(id="AC-11", claim="Backoff jitter is bounded",
        prediction="Sleeps before attempt 2 are in [160, 240] ms and before attempt 3 in [640, 960] ms"),
    Row(id="H0-EGRESS", claim="Privacy tier enforcement has no bypass path",
        prediction="Zero external calls in 10,000 fuzzed Sovereign requests"),
    Row(id="H0-LATENCY", claim="Failover improves p99 latency",
        prediction="Cascade p99 improves >= 20 % over a single provider under 10 % failures"),
    Row(id="H0-COST", claim="Cost estimation is accurate",
        prediction="Mean absolute error < 2 %, max error < 5 % over 1,000 calls"),
    Row(id="H0-TRANSLATION", claim="Translation loses no information",
        prediction="Zero content mutations in 100,000 random message trees"),
)  # fmt: skip

_BY_ID = {row.id: row for row in ROWS}
_RESULTS: dict[str, Verdict] = {}
_CURRENT_TEST: list[str] = []  # the running test's description, set by conftest around each test call


def set_current_test(description: str | None) -> None:
    """Name the test now running (``None`` once it ends): it becomes the ``method`` of what it records."""
    _CURRENT_TEST.clear()
    if description is not None:
        _CURRENT_TEST.append(description)


def record_verdict(
    row_id: str,
    *,
    evidence: str,
    survived: bool,
    procedure: str,
    seeds: str,
    data: Mapping[str, object] | None = None,
) -> Verdict:
    """Record what a test measured for ``row_id``; a row falsified once stays falsified.

    ``procedure`` says how the verdict was reached and ``seeds`` which seeds it used (or why none):
    both are required and must not be blank; the evidence is stored as
    ``METHOD <procedure>; SEEDS <seeds>: <evidence>``. ``data`` is structured evidence for the HTML
    report's plots; it never affects the verdict.
    """
    for name, value in (("procedure", procedure), ("seeds", seeds)):
        if not value.strip():
            raise ValueError(f"{row_id}: a verdict must state its {name}, got {value!r}")
    row = _BY_ID.get(row_id) or Row(id=row_id, claim=row_id, prediction="")
    method = _CURRENT_TEST[0] if _CURRENT_TEST else ""
    evidence = f"METHOD {procedure}; SEEDS {seeds}: {evidence}"
    verdict = Verdict(
        id=row.id,
        claim=row.claim,
        prediction=row.prediction,
        evidence=evidence,
        verdict="survived" if survived else "falsified",
        method=method,
        procedure=procedure,
        seeds=seeds,
        data=dict(data or {}),
    )
    previous = _RESULTS.get(row_id)
    if previous is not None:
        merged_evidence = f"{previous.evidence}; {evidence}"
        merged = "falsified" if "falsified" in (previous.verdict, verdict.verdict) else "survived"
        methods = [m for m in (previous.method, method) if m]
        verdict = Verdict(
            id=row.id,
            claim=row.claim,
            prediction=row.prediction,
            evidence=merged_evidence,
            verdict=merged,
            method="; ".join(dict.fromkeys(methods)),
            procedure=f"{previous.procedure}; {procedure}",
            seeds=f"{previous.seeds}; {seeds}",
            data={**previous.data, **verdict.data},
        )
    _RESULTS[row_id] = verdict
    print(f"{row_id} {verdict.verdict}: {evidence}")
    return verdict


def recorded() -> tuple[Verdict, ...]:
    """Every row, in contract order: what was recorded, or "not run"."""
    rows = [
        _RESULTS.get(row.id)
        or Verdict(id=row.id, claim=row.claim, prediction=row.prediction, evidence="", verdict="not run")
        for row in ROWS
    ]
    rows.extend(v for k, v in _RESULTS.items() if k not in _BY_ID)
    return tuple(rows)


def render_markdown(verdicts: tuple[Verdict, ...]) -> str:
    """The verdict table as Markdown."""
    lines = ["| id | claim | prediction | evidence | verdict |", "| --- | --- | --- | --- | --- |"]
    for v in verdicts:
        cells = [v.id, v.claim, v.prediction, v.evidence or "-", f"**{v.verdict}**"]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines) + "\n"


def write_reports(directory: Path, verdicts: tuple[Verdict, ...]) -> None:
    """Write ``verdicts.md``, ``verdicts.json`` and ``verdicts.xml`` (JUnit) under ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "verdicts.md").write_text("# provider-routing-v1 verdicts\n\n" + render_markdown(verdicts))
    (directory / "verdicts.json").write_text(json.dumps([asdict(v) for v in verdicts], indent=2) + "\n")
    suite = ET.Element(
        "testsuite",
        name="provider-routing-v1",
        tests=str(len(verdicts)),
        failures=str(sum(v.verdict == "falsified" for v in verdicts)),
        skipped=str(sum(v.verdict == "not run" for v in verdicts)),
    )
    for v in verdicts:
        case = ET.SubElement(suite, "testcase", classname="provider-routing-v1", name=f"{v.id}: {v.claim}")
        if v.verdict == "falsified":
            ET.SubElement(case, "failure", message=v.evidence or "falsified")
        elif v.verdict == "not run":
            ET.SubElement(case, "skipped", message="not run")
        ET.SubElement(case, "system-out").text = v.evidence
    ET.ElementTree(suite).write(directory / "verdicts.xml", encoding="utf-8", xml_declaration=True)
