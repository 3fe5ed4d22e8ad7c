"""The bench section (issue 13's ``bench.json``, whose shape is not settled yet).

Shown generically until it is: a table of the benchmarks (pytest-benchmark's ``--benchmark-json``
layout ``{"benchmarks": [{name, stats: {...}}]}`` or a plain list of objects), with a bar chart of
the mean time when pytest-benchmark's stats are there. The overhead/throughput bars against the direct
clients and the lateness CDF the issue asks for wait for bench.json's documented shape.
"""

from __future__ import annotations

import json

from routeproof.report import _plots
from routeproof.report._html import esc, table
from routeproof.report._json import as_dict, as_number, as_str, rows_of
from routeproof.report._plots import Figure

__all__ = ["render"]


def _cell(value: object) -> str:
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return esc(value)
    if isinstance(value, int | float):
        return f'<td class="num">{value:.6g}</td>'
    return f"<code>{esc(json.dumps(value, separators=(',', ':')))}</code>"


def render(document: object, *, draw: bool) -> tuple[str, list[str]]:
    """The section's inner HTML from ``bench.json``, and the problems met."""
    rows = rows_of(document, "benchmarks", "bench.json")
    if rows and all("stats" in r for r in rows):
        names = [as_str(r["name"], f"bench.json[{i}].name") for i, r in enumerate(rows)]
        stats = [as_dict(r["stats"], f"bench.json[{i}].stats") for i, r in enumerate(rows)]
        keys = ("min", "median", "mean", "max", "stddev", "rounds")
        cells = [[esc(n), *(_cell(s.get(k)) for k in keys)] for n, s in zip(names, stats, strict=True)]
        means_ms = [1000 * as_number(s["mean"], f"{n}.stats.mean") for n, s in zip(names, stats, strict=True)]
        figure = Figure(
            key="bench-mean",
            svg=_plots.bars(
                "bench-mean",
                "bench: mean time per benchmark",
                names,
                [("mean (ms)", means_ms, "#1A73E8")],
                y_title="ms",
                horizontal=True,
                height=160 + 36 * len(names),
            )
            if draw
            else None,
            caption=f"{len(names)} benchmarks, mean wall time per round (pytest-benchmark).",
        )
        body = table(["benchmark", *(f"{k} (s)" if k != "rounds" else k for k in keys)], cells)
        return body + f'<div class="figures">{_plots.figure_html(figure)}</div>', []
    columns = list(dict.fromkeys(k for r in rows for k in r))
    cells = [[_cell(r.get(c, "")) for c in columns] for r in rows]
    return f'<p class="meta">{len(rows)} results.</p>' + table(columns, cells), []
