"""The chaos section (issue 14's ``chaos.json``): a scenario × invariant grid and elapsed vs deadline.

``chaos.json`` is a list with one object per scenario run: ``{scenario, toxics, stream, shape, outcome,
elapsed_ms, deadline_ms, invariants: {name: bool}, verdict}``.
"""

from __future__ import annotations

import json

from routeproof.report._html import badge, esc, table
from routeproof.report._json import as_bool, as_dict, as_number, as_str, rows_of
from routeproof.report._plots import Figure, bars, figure_html

__all__ = ["render"]


def _label(run: dict[str, object], where: str) -> str:
    mode = "stream" if as_bool(run.get("stream", False), f"{where}.stream") else "call"
    return f"{as_str(run['scenario'], f'{where}.scenario')} ({as_str(run.get('shape', '?'), f'{where}.shape')}, {mode})"


def render(document: object, *, draw: bool) -> tuple[str, list[str]]:
    """The section's inner HTML from ``chaos.json``, and the problems met."""
    runs = rows_of(document, "runs", "chaos.json")
    labels = [_label(run, f"chaos.json[{i}]") for i, run in enumerate(runs)]
    grids = [as_dict(run["invariants"], f"chaos.json[{i}].invariants") for i, run in enumerate(runs)]
    names = sorted({name for grid in grids for name in grid})
    cells = []
    for i, (run, grid) in enumerate(zip(runs, grids, strict=True)):
        marks = []
        for name in names:
            if name not in grid:
                marks.append('<td class="cell">–</td>')
            elif as_bool(grid[name], f"chaos.json[{i}].invariants.{name}"):
                marks.append('<td class="cell ok" title="held">✓</td>')
            else:
                marks.append('<td class="cell bad" title="broken">✗</td>')
        toxics = run.get("toxics", [])
        cells.append(
            [
                esc(labels[i]),
                f"<code>{esc(json.dumps(toxics, separators=(',', ':')))}</code>",
                esc(as_str(run.get("outcome", ""), f"chaos.json[{i}].outcome")),
                f'<td class="num">{as_number(run["elapsed_ms"], "elapsed_ms"):.0f} / '
                f"{as_number(run['deadline_ms'], 'deadline_ms'):.0f}</td>",
                *marks,
                f'<td class="cell">{badge(as_str(run["verdict"], f"chaos.json[{i}].verdict"))}</td>',
            ]
        )
    elapsed = [as_number(run["elapsed_ms"], "elapsed_ms") for run in runs]
    deadline = [as_number(run["deadline_ms"], "deadline_ms") for run in runs]
    late = sum(e > d for e, d in zip(elapsed, deadline, strict=True))
    figure = Figure(
        key="chaos-elapsed",
        svg=bars(
            "chaos-elapsed",
            "chaos: elapsed vs deadline per scenario run",
            labels,
            [("elapsed (ms)", elapsed, "#1A73E8"), ("deadline (ms)", deadline, "#B3261E")],
            y_title="ms",
            horizontal=True,
            height=160 + 36 * len(runs),
        )
        if draw and runs
        else None,
        caption=f"{len(runs)} scenario runs; {late} ended after their deadline.",
    )
    body = (
        f'<p class="meta">{len(runs)} scenario runs × {len(names)} invariants; ✓ held, ✗ broken.</p>'
        + table(
            [
                "scenario (shape, mode)",
                "toxics",
                "outcome",
                "elapsed / deadline ms",
                *(n.replace("_", " ") for n in names),
                "verdict",
            ],
            cells,
        )
        + f'<div class="figures">{figure_html(figure)}</div>'
    )
    return body, []
