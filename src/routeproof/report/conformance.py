"""The conformance section (issue 15's ``conformance-<impl>.json``): a rule × implementation scorecard.

Each file is a list with one object per case: ``{id, rule, verdict: "pass" | "fail" | "n/a", evidence}``;
``evidence`` is text or any JSON (journal excerpt, gaps, wall time) and is shown for failed cases.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from routeproof.report._html import details, esc, table
from routeproof.report._json import ReportInputError, as_str, rows_of
from routeproof.report._plots import Figure, bars, figure_html

__all__ = ["render"]

_VERDICTS = ("pass", "fail", "n/a")


def _evidence_html(evidence: object) -> str:
    text = evidence if isinstance(evidence, str) else json.dumps(evidence, indent=2, ensure_ascii=False)
    return f"<pre>{esc(text)}</pre>"


def render(documents: Mapping[str, object], *, draw: bool) -> tuple[str, list[str]]:
    """The section's inner HTML from ``{impl: parsed conformance-<impl>.json}``, and the problems met."""
    cases: dict[str, list[dict[str, object]]] = {}
    for impl, document in documents.items():
        where = f"conformance-{impl}.json"
        cases[impl] = rows_of(document, "cases", where)
        for i, case in enumerate(cases[impl]):
            verdict = as_str(case["verdict"], f"{where}[{i}].verdict")
            if verdict not in _VERDICTS:
                raise ReportInputError(f"{where}[{i}].verdict: expected one of {_VERDICTS}, got {verdict!r}")
    impls = list(cases)
    rules = sorted({as_str(c["rule"], "rule") for impl in impls for c in cases[impl]})
    score: dict[tuple[str, str], dict[str, int]] = {}
    for impl in impls:
        for case in cases[impl]:
            tally = score.setdefault((str(case["rule"]), impl), dict.fromkeys(_VERDICTS, 0))
            tally[str(case["verdict"])] += 1
    rows = []
    for rule in rules:
        line = [f"<code>{esc(rule)}</code>"]
        for impl in impls:
            t = score.get((rule, impl))
            if t is None:
                line.append('<td class="cell">–</td>')
                continue
            cls = "bad" if t["fail"] else "ok" if t["pass"] else "na"
            text = " ".join(f"{n} {v}" for v, n in t.items() if n)
            line.append(f'<td class="cell {cls}">{esc(text)}</td>')
        rows.append(line)
    failed_html = []
    for impl in impls:
        failed = [c for c in cases[impl] if c["verdict"] == "fail"]
        items = "".join(
            details(f"{as_str(c['id'], 'id')} — {c['rule']}", _evidence_html(c.get("evidence", ""))) for c in failed
        )
        failed_html.append(f"<h3>{esc(impl)}: {len(failed)} failed case{'s' * (len(failed) != 1)}</h3>{items}")
    totals = {impl: [sum(1 for c in cases[impl] if c["verdict"] == v) for v in _VERDICTS] for impl in impls}
    figure = Figure(
        key="conformance-totals",
        svg=bars(
            "conformance-totals",
            "conformance: cases per implementation",
            impls,
            [
                (v, [float(totals[impl][j]) for impl in impls], color)
                for j, (v, color) in enumerate(zip(_VERDICTS, ("#1B7F3B", "#B3261E", "#80868B"), strict=True))
            ],
            y_title="cases",
            stacked=True,
        )
        if draw and impls
        else None,
        caption="; ".join(
            f"{impl}: " + ", ".join(f"{n} {v}" for v, n in zip(_VERDICTS, t, strict=True)) for impl, t in totals.items()
        ),
    )
    body = (
        f'<p class="meta">{len(rules)} rules × {len(impls)} implementations ({esc(", ".join(impls))}).</p>'
        + table(["rule", *impls], rows)
        + f'<div class="figures">{figure_html(figure)}</div>'
        + "".join(failed_html)
    )
    return body, []
