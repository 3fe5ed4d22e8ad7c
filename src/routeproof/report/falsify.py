"""The falsify section: every row's verdict and method (the tests that recorded it), its evidence,
and the charts :mod:`routeproof.report.falsify_figures` draws from the row's ``data``.

Reads ``verdicts.json`` (written by ``falsification/report.py``): a list of rows ``{id, claim,
prediction, evidence, verdict, method, data}``.
"""

from __future__ import annotations

from routeproof.report._html import badge, details, esc, table
from routeproof.report._json import ReportInputError, as_dict, as_str, rows_of
from routeproof.report._plots import figure_html
from routeproof.report.falsify_figures import figures_for

__all__ = ["figures_for", "render"]


def render(document: object, *, draw: bool) -> tuple[str, list[str]]:
    """The section's inner HTML from ``verdicts.json``, and the problems met (shown on the page too)."""
    rows = rows_of(document, "rows", "verdicts.json")
    problems: list[str] = []
    cells, ids, evidence_html = [], [], []
    for i, row in enumerate(rows):
        rid = as_str(row["id"], f"verdicts.json[{i}].id")
        verdict = as_str(row["verdict"], f"{rid}.verdict")
        method = as_str(row.get("method", ""), f"{rid}.method")
        evidence = as_str(row.get("evidence", ""), f"{rid}.evidence")
        methods = [m for m in method.split("; falsification/") if m]
        method_html = (
            details(
                f"{len(methods)} test{'s' * (len(methods) != 1)}",
                "<ul>"
                + "".join(
                    f"<li>{esc(m if m.startswith('falsification/') or j == 0 else 'falsification/' + m)}</li>"
                    for j, m in enumerate(methods)
                )
                + "</ul>",
            )
            if methods
            else "-"
        )
        short = evidence if len(evidence) <= 160 else evidence[:157] + "..."
        evidence_cell = details(short, f"<pre>{esc(evidence)}</pre>") if len(evidence) > 160 else esc(evidence or "-")
        cells.append(
            [
                f'<a href="#ev-{esc(rid)}">{esc(rid)}</a>' if row.get("data") else esc(rid),
                esc(as_str(row.get("claim", ""), f"{rid}.claim")),
                esc(as_str(row.get("prediction", ""), f"{rid}.prediction")),
                f'<td class="cell">{badge(verdict)}</td>',
                method_html,
                evidence_cell,
            ]
        )
        ids.append(f"row-{rid}")
        data = row.get("data")
        if not data:
            continue
        try:
            figures = figures_for(rid, as_dict(data, f"{rid}.data"), draw=draw)
        except ReportInputError as exc:
            problems.append(str(exc))
            evidence_html.append(f'<p class="problem">{esc(rid)}: cannot plot: {esc(exc)}</p>')
            continue
        if figures:
            evidence_html.append(
                f'<h3 id="ev-{esc(rid)}">{esc(rid)} {badge(verdict)}</h3><div class="figures">'
                + "".join(figure_html(f) for f in figures)
                + "</div>"
            )
    counts = {v: sum(1 for r in rows if r.get("verdict") == v) for v in ("survived", "falsified", "not run")}
    summary = ", ".join(f"{n} {v}" for v, n in counts.items())
    body = (
        f'<p class="meta">{len(rows)} rows: {esc(summary)}.</p>'
        + table(["id", "claim", "prediction", "verdict", "method", "evidence"], cells, row_ids=ids)
        + "".join(evidence_html)
    )
    return body, problems
