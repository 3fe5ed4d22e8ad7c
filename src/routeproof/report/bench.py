"""The bench section, from ``bench.json``.

``python -m benchmarks.loadbench`` (``tox -e bench``) writes ``{"schema": "routeproof-bench/1", ...}``:

* ``meta``: ``started_at``, ``python``, ``cpus``, ``rounds``, ``levels`` (calls in flight),
  ``calls_per_level``, ``note``;
* ``arms``: arm names in table order (``routeproof``, ``routeproof -O``, ``httpx``, ``aiohttp``, ...);
* ``rows``: one per arm and level, the median over rounds: ``arm``, ``in_flight``, ``calls``,
  ``failures``, ``errors`` ({kind: count}; ``timed_out`` when the run did not finish), ``p50_ms``,
  ``p99_ms``, ``calls_per_s``, ``cpu_ms_per_call``, ``peak_rss_mb``, ``rounds``;
* ``streaming``: per arm, ``ttft_p50_ms``/``ttft_p99_ms`` and ``ttlt_p50_ms``/``ttlt_p99_ms``;
* ``bursts``: routeproof with N calls started at once: ``calls``, ``failures``, ``errors``,
  ``calls_per_s``, ``rss_kb_per_call_in_flight``;
* ``sse``: ``line_mb``, ``seconds``, ``mb_per_s`` for decoding one SSE data line of that size;
* ``lateness``: ``arm``, ``calls`` (1: single calls in a row), ``p50_ms``, ``p99_ms``, ``max_ms``,
  ``samples_ms`` (sorted): how late ``DeadlineExceeded`` arrived.

The section shows the table, bars of routeproof's p50 overhead and throughput as ratios to the
direct clients per level, and the deadline-lateness CDF. Any other document (pytest-benchmark's
``--benchmark-json`` layout ``{"benchmarks": [{name, stats}]}`` or a plain list of objects) is shown
generically: a table, and a bar chart of the mean time when pytest-benchmark's stats are there.
"""

from __future__ import annotations

import json

from routeproof.report._html import esc, table
from routeproof.report._json import as_dict, as_list, as_number, as_str, rows_of
from routeproof.report._plots import Figure, Series, bars, figure_html, xy

__all__ = ["render"]


def _cell(value: object) -> str:
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return esc(value)
    if isinstance(value, int | float):
        return f'<td class="num">{value:.6g}</td>'
    return f"<code>{esc(json.dumps(value, separators=(',', ':')))}</code>"


SCHEMA = "routeproof-bench/1"
_COLORS = ("#1A73E8", "#D93025", "#188038", "#F29900", "#9334E6", "#5F6368")


def _ratio(a: object, b: object) -> float | None:
    if isinstance(a, int | float) and isinstance(b, int | float) and b:
        return float(a) / float(b)
    return None


def _ratios(
    by: dict[tuple[str, int], dict[str, object]], arm: str, direct: str, key: str, levels: list[int]
) -> list[float | None]:
    return [_ratio(by.get((arm, lv), {}).get(key), by.get((direct, lv), {}).get(key)) for lv in levels]


def _num(value: object) -> str:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return f'<td class="num">{value:,.3g}</td>' if value < 100 else f'<td class="num">{value:,.0f}</td>'
    return esc("-" if value is None else value)


def _loadbench(document: dict[str, object], draw: bool) -> tuple[str, list[str]]:
    meta = as_dict(document["meta"], "bench.json.meta")
    arms = [as_str(a, "bench.json.arms[]") for a in as_list(document["arms"], "bench.json.arms")]
    rows = rows_of(document, "rows", "bench.json")
    levels = [int(as_number(v, "bench.json.meta.levels[]")) for v in as_list(meta["levels"], "bench.json.meta.levels")]
    by = {(as_str(r["arm"], "rows[].arm"), int(as_number(r["in_flight"], "rows[].in_flight"))): r for r in rows}
    keys = ("p50_ms", "p99_ms", "calls_per_s", "cpu_ms_per_call", "peak_rss_mb", "failures")
    cells = []
    for level in levels:
        for arm in arms:
            r = by.get((arm, level))
            if r is not None:
                base = by.get(("httpx", level), {})
                cells.append(
                    [esc(arm), _num(level), *(_num(r.get(k)) for k in keys),
                     _num(_ratio(r.get("p50_ms"), base.get("p50_ms"))),
                     _num(_ratio(r.get("calls_per_s"), base.get("calls_per_s")))]
                )  # fmt: skip
    headers = ["arm", "in flight", "p50 ms", "p99 ms", "calls/s", "CPU ms/call", "peak RSS MB", "failures",
               "p50 ×httpx", "calls/s ×httpx"]  # fmt: skip
    body = (
        f'<p class="meta">{esc(meta.get("started_at"))} · {esc(meta.get("rounds"))} rotated rounds, median per '
        f"cell · {esc(meta.get('cpus'))} CPUs · {esc(meta.get('note'))}{_interpreter(meta)}</p>" + table(headers, cells)
    )
    ours = [a for a in arms if a.startswith("routeproof")]
    figures = []
    for direct in ("httpx", "aiohttp"):
        labels = [str(level) for level in levels]
        overhead = [(f"{arm} p50 ÷ {direct}", _ratios(by, arm, direct, "p50_ms", levels), _COLORS[i % len(_COLORS)])
                    for i, arm in enumerate(ours)]  # fmt: skip
        throughput = [
            (f"{arm} calls/s ÷ {direct}", _ratios(by, arm, direct, "calls_per_s", levels), _COLORS[i % len(_COLORS)])
            for i, arm in enumerate(ours)
        ]
        for key, what, series in (("overhead", "p50 latency", overhead), ("throughput", "throughput", throughput)):
            figures.append(
                Figure(
                    key=f"bench-{key}-{direct}",
                    svg=bars(
                        f"bench-{key}-{direct}",
                        f"routeproof {what} ÷ direct {direct}, per level",
                        labels,
                        series,
                        y_title="ratio (1 = same as the direct client)",
                    )
                    if draw
                    else None,
                    caption=f"routeproof's {what} as a ratio to direct {direct} at each number of calls in flight "
                    f"(x axis); {'below' if key == 'overhead' else 'above'} 1 is better than the direct client.",
                )
            )
    lateness = rows_of(document, "lateness", "bench.json")
    curves = []
    for i, lat in enumerate(lateness):
        samples = [as_number(v, "lateness[].samples_ms[]") for v in as_list(lat.get("samples_ms", []), "samples_ms")]
        if samples:
            n = len(samples)
            points: list[tuple[float, float] | None] = [(v, (k + 1) / n) for k, v in enumerate(samples)]
            title = f"{as_str(lat['arm'], 'lateness[].arm')}, {int(as_number(lat['calls'], 'lateness[].calls'))} calls"
            curves.append(Series(title=title, points=points, color=_COLORS[i % len(_COLORS)]))
    if curves:
        figures.append(
            Figure(
                key="bench-lateness-cdf",
                svg=xy(
                    "bench-lateness-cdf",
                    "How late DeadlineExceeded arrives (CDF)",
                    curves,
                    x_title="ms past the deadline",
                    y_title="fraction of calls",
                )
                if draw
                else None,
                caption="Cumulative share of calls whose deadline error had arrived by x ms past the deadline "
                "(1: single calls one after another; 1000: that many calls sharing one deadline). "
                "The seed's bound is 50 ms p99 at 1,000 calls; issue 13's is 5 ms p99 for a single call.",
            )
        )
    lat_cells = [[esc(lat.get("arm")), _num(lat.get("calls")), _num(lat.get("p50_ms")), _num(lat.get("p99_ms")),
                  _num(lat.get("max_ms"))] for lat in lateness]  # fmt: skip
    body += "<h3>Deadline lateness</h3>" + table(["arm", "calls", "p50 ms", "p99 ms", "max ms"], lat_cells)
    streaming = rows_of(document, "streaming", "bench.json")
    body += "<h3>Streaming, one in flight</h3>" + table(
        ["arm", "TTFT p50 ms", "TTFT p99 ms", "TTLT p50 ms", "TTLT p99 ms"],
        [[esc(s.get("arm")), *(_num(s.get(k)) for k in ("ttft_p50_ms", "ttft_p99_ms", "ttlt_p50_ms", "ttlt_p99_ms"))]
         for s in streaming],
    )  # fmt: skip
    bursts = rows_of(document, "bursts", "bench.json") if "bursts" in document else []
    body += "<h3>Calls started at once (admission)</h3>" + table(
        ["calls", "failures", "calls/s", "kB RSS per call in flight"],
        [[_num(b.get("calls")), _num(b.get("failures")), _num(b.get("calls_per_s")),
          _num(b.get("rss_kb_per_call_in_flight"))] for b in bursts],
    )  # fmt: skip
    sse = rows_of(document, "sse", "bench.json")
    body += "<h3>SSE decoding, one data line</h3>" + table(
        ["line MB", "seconds", "MB/s"], [[_num(x.get("line_mb")), _num(x.get("seconds")), _num(x.get("mb_per_s"))]
                                         for x in sse]
    )  # fmt: skip
    return body + '<div class="figures">' + "".join(figure_html(f) for f in figures) + "</div>", []


def render(document: object, *, draw: bool) -> tuple[str, list[str]]:
    """The section's inner HTML from ``bench.json``, and the problems met."""
    if isinstance(document, dict) and document.get("schema") == SCHEMA:
        return _loadbench(document, draw)
    rows = rows_of(document, "benchmarks", "bench.json")
    if rows and all("stats" in r for r in rows):
        names = [as_str(r["name"], f"bench.json[{i}].name") for i, r in enumerate(rows)]
        stats = [as_dict(r["stats"], f"bench.json[{i}].stats") for i, r in enumerate(rows)]
        keys = ("min", "median", "mean", "max", "stddev", "rounds")
        cells = [[esc(n), *(_cell(s.get(k)) for k in keys)] for n, s in zip(names, stats, strict=True)]
        means_ms = [1000 * as_number(s["mean"], f"{n}.stats.mean") for n, s in zip(names, stats, strict=True)]
        figure = Figure(
            key="bench-mean",
            svg=bars(
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
        return body + f'<div class="figures">{figure_html(figure)}</div>', []
    columns = list(dict.fromkeys(k for r in rows for k in r))
    cells = [[_cell(r.get(c, "")) for c in columns] for r in rows]
    return f'<p class="meta">{len(rows)} results.</p>' + table(columns, cells), []


def _interpreter(meta: dict[str, object]) -> str:
    """The Python build that ran the arms and its reference loop (loadbench.interpreter_ms), when recorded."""
    if "interpreter_ms" not in meta:
        return ""
    python, executable, loop_ms = esc(meta.get("python")), esc(meta.get("executable")), esc(meta["interpreter_ms"])
    return f" · Python {python} ({executable}), reference loop {loop_ms} ms"
