"""The bench section over loadbench's bench.json (issue 13): the table, the ratio bars against the
direct clients and the deadline-lateness CDF."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from routeproof.report import _plots, build_report

needs_pygal = pytest.mark.skipif(not _plots.available(), reason="pygal not installed (the 'report' extra)")


def _row(arm: str, level: int, p50: float, rate: float) -> dict[str, object]:
    return {"arm": arm, "in_flight": level, "calls": 200, "failures": 0, "errors": {}, "p50_ms": p50,
            "p99_ms": 2 * p50, "calls_per_s": rate, "cpu_ms_per_call": 0.5, "peak_rss_mb": 40.0,
            "rounds": 3}  # fmt: skip


BENCH = {
    "schema": "routeproof-bench/1",
    "meta": {
        "started_at": "2026-11-30T16:00:00Z",
        "python": "3.11.7",
        "cpus": 2,
        "rounds": 3,
        "levels": [1, 100],
        "calls_per_level": {"1": 200, "100": 200},
        "note": "shared machine",
    },
    "arms": ["routeproof", "routeproof -O", "httpx", "aiohttp"],
    "rows": [
        _row(a, lv, p, r)
        for lv in (1, 100)
        for a, p, r in (
            ("routeproof", 1.2, 800.0),
            ("routeproof -O", 1.0, 900.0),
            ("httpx", 0.9, 1000.0),
            ("aiohttp", 0.3, 3000.0),
        )
    ],
    "streaming": [
        {"arm": "routeproof", "ttft_p50_ms": 1.0, "ttft_p99_ms": 2.0, "ttlt_p50_ms": 1.1, "ttlt_p99_ms": 2.1}
    ],
    "bursts": [{"calls": 10000, "failures": 0, "errors": {}, "calls_per_s": 500.0, "rss_kb_per_call_in_flight": 6.0}],
    "sse": [{"line_mb": 2, "seconds": 0.5, "mb_per_s": 4.0}],
    "lateness": [
        {
            "arm": "routeproof",
            "calls": 1000,
            "p50_ms": 20.0,
            "p99_ms": 40.0,
            "max_ms": 41.0,
            "samples_ms": [1.0, 20.0, 40.0, 41.0],
        }
    ],
}


def test_bench_json_gives_the_table_and_ratios(tmp_path: Path) -> None:
    """Every arm and level is a row with its ratio to direct httpx; no input problem is reported."""
    (tmp_path / "bench.json").write_text(json.dumps(BENCH))
    report = build_report(tmp_path)
    assert report.sections == ("bench",)
    assert report.problems == ()
    assert report.html.count("<td>routeproof -O</td>") == 2
    assert '<td class="num">1.33</td>' in report.html  # routeproof p50 1.2 ms / httpx 0.9 ms
    assert "Deadline lateness" in report.html
    assert "kB RSS per call in flight" in report.html


@needs_pygal
def test_bench_json_draws_ratio_bars_and_the_lateness_cdf(tmp_path: Path) -> None:
    """The overhead and throughput bars against both direct clients and the lateness CDF are drawn."""
    (tmp_path / "bench.json").write_text(json.dumps(BENCH))
    html = build_report(tmp_path).html
    for key in ("bench-overhead-httpx", "bench-throughput-httpx", "bench-overhead-aiohttp", "bench-lateness-cdf"):
        assert key in html


def test_a_bench_json_without_its_parts_is_named_as_a_problem(tmp_path: Path) -> None:
    """A routeproof-bench document missing 'rows' is a problem on the page, not a crash."""
    broken = {k: v for k, v in BENCH.items() if k != "rows"}
    (tmp_path / "bench.json").write_text(json.dumps(broken))
    report = build_report(tmp_path)
    assert report.problems
    assert "bench.json" in report.problems[0]


def test_the_interpreter_build_is_named_when_recorded(tmp_path: Path) -> None:
    """The Python build that ran the arms, and its reference loop, head the table when loadbench
    recorded them; an older bench.json without them still renders, without the line."""
    recorded = {**BENCH, "meta": {**BENCH["meta"], "executable": "/usr/bin/python3.11", "interpreter_ms": 61.2}}  # type: ignore[dict-item]
    (tmp_path / "bench.json").write_text(json.dumps(recorded))
    assert "Python 3.11.7 (/usr/bin/python3.11), reference loop 61.2 ms" in build_report(tmp_path).html
    (tmp_path / "bench.json").write_text(json.dumps(BENCH))
    assert "reference loop" not in build_report(tmp_path).html
