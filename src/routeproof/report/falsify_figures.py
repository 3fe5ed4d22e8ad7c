"""The falsify section's charts, one or more per row, from the structured ``data`` each row writes.

A row's ``data`` in ``verdicts.json`` (written by ``falsification/report.py``) is what it measured,
by key:

* FALSIFY-MPA-004 ``full_jitter``: ``{draws, cap_ms, max_ms, over_cap, bin_ms, counts}`` (a histogram).
* AC-11 ``band``: per attempt ``{attempt, nominal_ms, low_ms, high_ms, first_ms, counts}`` (per-ms counts).
* H0-LATENCY ``cdf_bp`` (quantile grid, basis points) and ``primary`` / ``diagnostic_iid``, each
  ``{model, single, cascade, improvement[, required]}`` with arms ``{calls, answered, p99_ms, cdf_ms}``;
  optionally ``improvement_by_seed`` ``{seed: improvement}`` once the row is judged over many seeds.
* FALSIFY-MPA-003 ``router``: ``{budget_pico_usd, granted, series: [[ms, spent, spent+reserved], ...]}``.
* FALSIFY-MPA-007: any key holding ``{calls, completed, claimed_completion, significance, diagnostic}``.
* FALSIFY-MPA-006 ``endings``: ``{streams, counts, by_fault: {fault: {ending: streams}}}``.

A row without ``data`` (or with keys this module does not know) gets its table line and no plot.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import partial

from routeproof.report._json import (
    ReportInputError,
    as_bool,
    as_dict,
    as_int,
    as_list,
    as_number,
    as_str,
)
from routeproof.report._plots import Figure, Series, bars, xy
from routeproof.report._stats import clopper_pearson

__all__ = ["figures_for"]

BLUE, ORANGE, RED, GREEN, GREY, PURPLE = "#1A73E8", "#E8710A", "#B3261E", "#1B7F3B", "#80868B", "#8E24AA"

Draw = Callable[[], str]


def _steps(edges_and_counts: Sequence[tuple[float, float, float]]) -> list[tuple[float, float]]:
    """A histogram outline (start, end, height per bar) as a closed polygon on the x axis."""
    points: list[tuple[float, float]] = []
    for start, end, height in edges_and_counts:
        points += [(start, height), (end, height)]
    if points:
        points = [(points[0][0], 0.0), *points, (points[-1][0], 0.0)]
    return points


def _mpa_004(data: dict[str, object]) -> list[tuple[str, str, Draw]]:
    fj = as_dict(data["full_jitter"], "full_jitter")
    counts = [as_int(c, "full_jitter.counts[]") for c in as_list(fj["counts"], "full_jitter.counts")]
    bin_ms, cap_ms = as_int(fj["bin_ms"], "bin_ms"), as_int(fj["cap_ms"], "cap_ms")
    top = max(counts, default=1) * 1.1
    caption = (
        f"{as_int(fj['draws'], 'draws')} full-jitter delays for random attempt numbers in {bin_ms} ms bins; "
        f"largest {as_int(fj['max_ms'], 'max_ms')} ms, {as_int(fj['over_cap'], 'over_cap')} over the "
        f"{cap_ms} ms cap (red line)."
    )

    def draw() -> str:
        bins = [(i * bin_ms / 1000, (i + 1) * bin_ms / 1000, float(c)) for i, c in enumerate(counts)]
        return xy(
            "mpa-004",
            "FALSIFY-MPA-004: retry delays vs the 30 s cap",
            [
                Series(title="delays per bin", points=_steps(bins), color=BLUE, kind="area"),
                Series(title=f"cap {cap_ms / 1000:g} s", points=[(cap_ms / 1000, 0), (cap_ms / 1000, top)], color=RED),
            ],
            x_title="delay (s)",
            y_title="delays",
        )

    return [("mpa-004", caption, draw)]


def _ac_11(data: dict[str, object]) -> list[tuple[str, str, Draw]]:
    out: list[tuple[str, str, Draw]] = []
    for i, raw in enumerate(as_list(data["band"], "band")):
        b = as_dict(raw, f"band[{i}]")
        attempt, nominal = as_int(b["attempt"], "attempt"), as_int(b["nominal_ms"], "nominal_ms")
        low, high, first = (
            as_int(b["low_ms"], "low_ms"),
            as_int(b["high_ms"], "high_ms"),
            as_int(b["first_ms"], "first_ms"),
        )
        counts = [as_int(c, "band.counts[]") for c in as_list(b["counts"], "band.counts")]
        outside = sum(c for ms, c in enumerate(counts, start=first) if not low <= ms <= high)
        caption = (
            f"Attempt {attempt}: {sum(counts)} sleeps, observed {first}..{first + len(counts) - 1} ms, "
            f"{outside} outside the ±20 % band [{low}, {high}] ms (shaded) around {nominal} ms (dashed)."
        )

        out.append((f"ac-11-{attempt}", caption, partial(_draw_ac_11, attempt, nominal, (low, high), first, counts)))
    return out


def _draw_ac_11(attempt: int, nominal: int, band: tuple[int, int], first: int, counts: list[int]) -> str:
    low, high = band
    top = max(counts, default=1) * 1.15
    margin = (high - low) * 0.3
    bins = [(ms - 0.5, ms + 0.5, float(c)) for ms, c in enumerate(counts, start=first)]
    return xy(
        f"ac-11-{attempt}",
        f"AC-11: sleeps before attempt {attempt} vs the ±20 % band",
        [
            Series(
                title=f"band [{low}, {high}] ms",
                points=[(low, 0), (low, top), (high, top), (high, 0)],
                color=GREEN,
                kind="area",
            ),
            Series(title="sleeps per ms", points=_steps(bins), color=BLUE, kind="area"),
            Series(title=f"nominal {nominal} ms", points=[(nominal, 0), (nominal, top)], color=GREY, kind="dashed"),
        ],
        x_title="sleep (ms)",
        y_title="sleeps",
        xrange=(low - margin, high + margin),
    )


def _h0_latency(data: dict[str, object]) -> list[tuple[str, str, Draw]]:
    grid = [as_int(q, "cdf_bp[]") for q in as_list(data["cdf_bp"], "cdf_bp")]
    out: list[tuple[str, str, Draw]] = []
    for key, label in (("primary", "verdict"), ("diagnostic_iid", "diagnostic")):
        if key not in data:
            continue
        model = as_dict(data[key], key)
        arms = {name: as_dict(model[name], f"{key}.{name}") for name in ("single", "cascade")}
        curves = {
            name: [
                as_number(x, f"{key}.{name}.cdf_ms[]") / 1000 for x in as_list(arm["cdf_ms"], f"{key}.{name}.cdf_ms")
            ]
            for name, arm in arms.items()
        }
        for name, curve in curves.items():
            if len(curve) != len(grid):
                raise ReportInputError(f"{key}.{name}.cdf_ms has {len(curve)} points for {len(grid)} quantiles")
        p99 = {name: as_number(arm["p99_ms"], f"{key}.{name}.p99_ms") / 1000 for name, arm in arms.items()}
        improvement = as_number(model["improvement"], f"{key}.improvement")
        need = f" (needed ≥ {as_number(model['required'], 'required'):.0%})" if "required" in model else ""
        answered = {n: as_int(a["answered"], "answered") / max(1, as_int(a["calls"], "calls")) for n, a in arms.items()}
        caption = (
            f"{as_str(model.get('model', key), 'model')} ({label}): share of calls slower than x, log scale. "
            f"p99 single {p99['single']:.2f} s, cascade {p99['cascade']:.2f} s (dashed), improvement "
            f"{improvement:.1%}{need}; answered: single {answered['single']:.1%}, cascade {answered['cascade']:.1%}."
        )

        out.append((f"h0-latency-{key}", caption, partial(_draw_h0_latency, key, label, grid, curves, p99)))
    if "improvement_by_seed" in data:
        raw = as_dict(data["improvement_by_seed"], "improvement_by_seed")
        by_seed = {seed: 100 * as_number(v, f"improvement_by_seed.{seed}") for seed, v in raw.items()}
        caption = f"p99 improvement per provider seed over {len(by_seed)} seeds (the effect's distribution)."
        draw_seeds = partial(
            bars,
            "h0-latency-seeds",
            "H0-LATENCY: p99 improvement by seed",
            list(by_seed),
            [("improvement (%)", list(by_seed.values()), BLUE)],
            y_title="%",
        )
        out.append(("h0-latency-seeds", caption, draw_seeds))
    return out


def _draw_h0_latency(
    key: str, label: str, grid: list[int], curves: dict[str, list[float]], p99: dict[str, float]
) -> str:
    """Each arm's tail as the share of calls slower than x, on a log10 y axis drawn by hand (pygal's
    logarithmic mode would make the time axis logarithmic too)."""
    series: list[Series] = []
    arms = (("single", "single provider", ORANGE), ("cascade", "cascade", BLUE))
    shares = [1 - bp / 10_000 for bp in grid]
    for name, title, color in arms:
        tail = [(x, math.log10(s)) for x, s in zip(curves[name], shares, strict=True) if s > 0]
        series.append(Series(title=title, points=tail, color=color))
    lowest = math.floor(math.log10(min((s for s in shares if s > 0), default=0.001)))
    for name, _, color in arms:
        marker = [(p99[name], lowest), (p99[name], 0.0)]
        series.append(Series(title=f"p99 {name} {p99[name]:.2f} s", points=marker, color=color, kind="dashed"))
    right = max(max(c) for c in curves.values())
    series.append(Series(title="1 % of calls", points=[(0.0, -2.0), (right, -2.0)], color=GREY, kind="dashed"))
    labels: list[dict[str, object]] = [{"label": f"{100 * 10.0**e:g} %", "value": e} for e in range(lowest, 1)]
    return xy(
        f"h0-latency-{key}",
        f"H0-LATENCY ({label}): latency tail, single provider vs cascade",
        series,
        x_title="time to outcome (s), failed calls at their elapsed time",
        y_title="share of calls slower (log)",
        y_labels=labels,
        xrange=(0.0, right * 1.02),
    )


def _mpa_003(data: dict[str, object]) -> list[tuple[str, str, Draw]]:
    r = as_dict(data["router"], "router")
    budget = as_int(r["budget_pico_usd"], "budget_pico_usd")
    series_raw = [as_list(p, "router.series[]") for p in as_list(r["series"], "router.series")]
    points = [(as_int(p[0], "ms"), as_int(p[1], "spent"), as_int(p[2], "committed")) for p in series_raw]
    peak = max((c for _, _, c in points), default=0)
    caption = (
        f"Through the router, {as_int(r['granted'], 'granted')} calls granted; {len(points)} ledger changes: "
        f"peak spent+reserved ${peak / 1e12:.6f} against the ${budget / 1e12:g} session budget (red)."
    )

    def draw() -> str:
        def step(index: int) -> list[tuple[float, float]]:
            out: list[tuple[float, float]] = []
            for j, p in enumerate(points):
                if j:
                    out.append((float(p[0]), points[j - 1][index] / 1e12))
                out.append((float(p[0]), p[index] / 1e12))
            return out

        end = float(points[-1][0]) if points else 1.0
        return xy(
            "mpa-003",
            "FALSIFY-MPA-003: session spend over time vs the budget",
            [
                Series(title="spent + reserved", points=step(2), color=ORANGE),
                Series(title="spent", points=step(1), color=BLUE),
                Series(
                    title=f"budget ${budget / 1e12:g}",
                    points=[(0, budget / 1e12), (end, budget / 1e12)],
                    color=RED,
                    kind="dashed",
                ),
            ],
            x_title="time since the first call (ms)",
            y_title="USD",
        )

    return [("mpa-003", caption, draw)]


def _mpa_007(data: dict[str, object]) -> list[tuple[str, str, Draw]]:
    runs: list[tuple[str, int, int, float, float, float, float]] = []
    for name, raw in data.items():
        run = as_dict(raw, name)
        calls, completed = as_int(run["calls"], f"{name}.calls"), as_int(run["completed"], f"{name}.completed")
        alpha = as_number(run["significance"], f"{name}.significance")
        claim = as_number(run["claimed_completion"], f"{name}.claimed_completion")
        lo, hi = clopper_pearson(completed, calls, alpha)
        label = name.replace("_", " ") + (
            " (diagnostic)" if as_bool(run.get("diagnostic", False), "diagnostic") else ""
        )
        runs.append((label, calls, completed, lo, hi, claim, alpha))
    if not runs:
        return []
    claim, alpha = runs[0][5], runs[0][6]
    caption = (
        "Completion per run with its exact (Clopper-Pearson) interval, each end a one-sided "
        f"{1 - alpha:.1%} bound; the verdict falsifies the claim when the upper end lies left of the "
        f"{claim:.0%} line. "
        + "; ".join(f"{r[0]}: {r[2]}/{r[1]} = {r[2] / r[1]:.1%} [{r[3]:.1%}, {r[4]:.2%}]" for r in runs)
    )

    def draw() -> str:
        interval: list[tuple[float, float] | None] = []
        for y, r in enumerate(runs, start=1):
            interval += [(100 * r[3], y), (100 * r[4], y), None]
        left = min(100 * r[3] for r in runs) - 1
        return xy(
            "mpa-007",
            "FALSIFY-MPA-007: completion under 50 % provider failures",
            [
                Series(title=f"{1 - 2 * alpha:.1%} interval", points=interval, color=BLUE, kind="thick"),
                Series(
                    title="observed",
                    points=[(100 * r[2] / r[1], y) for y, r in enumerate(runs, start=1)],
                    color="#111111",
                    kind="dots",
                ),
                Series(
                    title=f"claim {claim:.0%}",
                    points=[(100 * claim, 0.5), (100 * claim, len(runs) + 0.5)],
                    color=RED,
                    kind="dashed",
                ),
            ],
            x_title="calls completed (%)",
            y_title="",
            xrange=(left, 100.0),
            y_labels=[{"label": r[0], "value": y} for y, r in enumerate(runs, start=1)],
            height=120 + 60 * len(runs),
            y_guides=False,
        )

    return [("mpa-007", caption, draw)]


_ENDINGS = (("message_stop", GREEN), ("error", ORANGE), ("raised", GREY), ("silent", RED), ("double_end", PURPLE))


def _mpa_006(data: dict[str, object]) -> list[tuple[str, str, Draw]]:
    e = as_dict(data["endings"], "endings")
    by_fault = {f: as_dict(v, f"by_fault.{f}") for f, v in as_dict(e["by_fault"], "endings.by_fault").items()}
    order = [f for f in ("none", "cut", "status", "malformed") if f in by_fault] + sorted(
        f for f in by_fault if f not in ("none", "cut", "status", "malformed")
    )
    totals = {end: sum(as_int(by_fault[f].get(end, 0), end) for f in order) for end, _ in _ENDINGS}
    caption = (
        f"{as_int(e['streams'], 'streams')} streams by injected fault and how each ended: "
        + ", ".join(f"{n} {end.replace('_', ' ')}" for end, n in totals.items())
        + " (silent and double ends falsify the row)."
    )

    def draw() -> str:
        series = [
            (end.replace("_", " "), [float(as_int(by_fault[f].get(end, 0), end)) for f in order], color)
            for end, color in _ENDINGS
        ]
        return bars(
            "mpa-006",
            "FALSIFY-MPA-006: stream endings by injected fault",
            order,
            series,
            y_title="streams",
            stacked=True,
        )

    return [("mpa-006", caption, draw)]


_FIGURES: dict[str, tuple[str, Callable[[dict[str, object]], list[tuple[str, str, Draw]]]]] = {
    "FALSIFY-MPA-003": ("router", _mpa_003),
    "FALSIFY-MPA-004": ("full_jitter", _mpa_004),
    "FALSIFY-MPA-006": ("endings", _mpa_006),
    "FALSIFY-MPA-007": ("", _mpa_007),
    "AC-11": ("band", _ac_11),
    "H0-LATENCY": ("cdf_bp", _h0_latency),
}


def figures_for(row_id: str, data: dict[str, object], *, draw: bool) -> list[Figure]:
    """The figures one row's ``data`` supports (charts drawn only when ``draw``)."""
    known = _FIGURES.get(row_id)
    if known is None or (known[0] and known[0] not in data):
        return []
    if row_id == "FALSIFY-MPA-007":
        data = {k: v for k, v in data.items() if isinstance(v, dict) and {"calls", "completed"} <= v.keys()}
    try:
        plans = known[1](data)
    except (KeyError, IndexError) as exc:
        raise ReportInputError(f"{row_id}: data lacks {exc}") from exc
    return [Figure(key=key, svg=make() if draw else None, caption=caption) for key, caption, make in plans]
