"""The page's content, without a browser: sections from the JSON present, tables, charts, no script."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from routeproof.cli import main
from routeproof.report import _plots, build_report, write_report
from routeproof.report.falsify import figures_for

needs_pygal = pytest.mark.skipif(not _plots.available(), reason="pygal not installed (the 'report' extra)")

ALL_SECTIONS = ("falsify", "chaos", "conformance", "bench")
FALSIFY_FIGURES = {
    "mpa-003",
    "mpa-004",
    "mpa-006",
    "mpa-007",
    "ac-11-2",
    "ac-11-3",
    "h0-latency-primary",
    "h0-latency-diagnostic_iid",
}


def _section(html: str, name: str) -> str:
    start = html.index(f'<section id="{name}"')
    return html[start : html.index("</section>", start)]


def test_every_suite_with_json_gets_its_section(reports: Path) -> None:
    """verdicts.json, chaos.json, conformance-*.json and bench.json each give one section, in order."""
    report = build_report(reports)
    assert report.sections == ALL_SECTIONS
    assert report.problems == ()
    assert re.findall(r'<section id="(\w+)"', report.html) == list(ALL_SECTIONS)


def test_the_matrix_and_the_break_table_are_no_scorecards(reports: Path) -> None:
    """``tox -e matrix`` writes conformance-matrix.json and the gate's conformance env
    conformance-breaks.json into the same folder: neither is read as an implementation's scorecard
    (the matrix was, and the report failed the next gate run in that checkout, "missing 'verdict'")."""
    (reports / "conformance-matrix.json").write_text(json.dumps({"implementations": [], "cases": []}))
    (reports / "conformance-breaks.json").write_text(json.dumps({"breaks": []}))
    report = build_report(reports)
    assert report.problems == ()
    assert "conformance-matrix.json" not in _section(report.html, "conformance")  # the page's file list keeps it


def test_a_section_appears_only_when_its_json_exists(reports: Path) -> None:
    """Removing a suite's JSON removes its section; an empty folder gives a page with none."""
    (reports / "chaos.json").unlink()
    for path in reports.glob("conformance-*.json"):
        path.unlink()
    assert build_report(reports).sections == ("falsify", "bench")
    empty = reports.parent / "empty"
    empty.mkdir()
    report = build_report(empty)
    assert report.sections == ()
    assert "no suite has written its JSON here yet" in report.html


def test_every_falsify_row_is_in_the_table(reports: Path) -> None:
    """Each row of verdicts.json has its table line with its verdict and its recording tests."""
    rows = json.loads((reports / "verdicts.json").read_text())
    html = _section(build_report(reports).html, "falsify")
    for row in rows:
        line = html[html.index(f'id="row-{row["id"]}"') :].split("</tr>", 1)[0]
        assert f">{row['verdict']}<" in line
        if row["method"]:
            assert row["method"].split(":", 1)[0] in line


def test_tables_without_the_plotting_extra(reports: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without pygal every section keeps its table, each chart becomes a note, and nothing fails."""
    monkeypatch.setattr(_plots, "available", lambda: False)
    report = build_report(reports)
    assert report.sections == ALL_SECTIONS
    assert not report.plots
    assert "<svg" not in report.html
    assert report.html.count('class="noplot"') == len(FALSIFY_FIGURES) + 3  # + chaos, conformance, bench
    assert "pip install 'routeproof[report]'" in report.html


@needs_pygal
def test_falsify_rows_with_data_get_their_plots(reports: Path) -> None:
    """The rows' data give the histogram, CDF, spend, completion and endings charts, each a drawn SVG."""
    html = build_report(reports).html
    keys = set(re.findall(r'<figure class="plot" data-key="([\w-]+)"><svg', _section(html, "falsify")))
    assert keys == FALSIFY_FIGURES


@needs_pygal
def test_the_page_is_self_contained(reports: Path) -> None:
    """No script, no external URL to load, a CSP that forbids fetching; links stay beside the page."""
    html = build_report(reports).html
    assert "<script" not in html
    assert "<!--" not in html
    assert "default-src &#x27;none&#x27;" in html
    refs = re.findall(r'(?:src|href)="([^"]*)"', html)
    assert refs
    assert all(not re.match(r"[a-z]+:", ref) and ".." not in ref for ref in refs), refs
    assert 'href="verdicts.md"' in html
    assert 'href="conformance-litellm.json"' in html


@needs_pygal
def test_rendering_is_deterministic(reports: Path) -> None:
    """Two renders of the same inputs are byte-identical (pygal's random ids and dates are removed)."""
    assert build_report(reports).html == build_report(reports).html


def test_chaos_grid_marks_each_invariant(reports: Path) -> None:
    """The scenario × invariant grid shows ✗ for a broken invariant and – where one was not checked."""
    html = _section(build_report(reports).html, "chaos")
    line = html[html.index("bandwidth-overrun") :].split("</tr>", 1)[0]
    assert line.count('class="cell bad" title="broken"') == 1
    assert line.count('title="held"') == 4
    assert line.count('<td class="cell">–</td>') == 1  # no_cut_stream_complete: not a stream scenario
    assert "2032 / 2000" in line


def test_conformance_scorecard_and_failed_evidence(reports: Path) -> None:
    """Rule × implementation cells count pass/fail/n/a; each failed case opens to its evidence."""
    html = _section(build_report(reports).html, "conformance")
    assert "<th>litellm</th><th>naive</th><th>routeproof</th>" in html
    line = html[html.index("<code>retry_after</code>") :].split("</tr>", 1)[0]
    assert re.findall(r'<td class="cell (\w+)">([^<]*)</td>', line) == [
        ("bad", "1 fail"),
        ("bad", "1 fail"),
        ("ok", "1 pass"),
    ]
    assert "<summary>retry-after-seconds — retry_after</summary>" in html
    assert "&quot;gaps_ms&quot;: [\n    210\n  ]" in html
    assert "naive: 4 failed cases" in html


def test_a_malformed_input_is_named_and_the_rest_is_written(reports: Path) -> None:
    """A chaos run whose invariant is not a boolean is named on the page; other sections still render."""
    runs = json.loads((reports / "chaos.json").read_text())
    runs[1]["invariants"]["ends_by_deadline"] = "yes"
    (reports / "chaos.json").write_text(json.dumps(runs))
    report = build_report(reports)
    assert report.problems == (
        "chaos.json: chaos.json[1].invariants.ends_by_deadline: expected true or false, got 'yes'",
    )
    assert "Cannot show this section" in _section(report.html, "chaos")
    assert report.sections == ALL_SECTIONS


def test_malformed_row_data_costs_only_that_plot(reports: Path) -> None:
    """A row whose data lacks a field keeps its table line; the problem replaces its plot."""
    rows = json.loads((reports / "verdicts.json").read_text())
    for row in rows:
        if row["id"] == "FALSIFY-MPA-004":
            del row["data"]["full_jitter"]["counts"]
    (reports / "verdicts.json").write_text(json.dumps(rows))
    report = build_report(reports)
    assert report.problems == ("FALSIFY-MPA-004: data lacks 'counts'",)
    assert "FALSIFY-MPA-004: cannot plot" in report.html
    assert 'id="row-FALSIFY-MPA-004"' in report.html


def test_unknown_data_keys_give_no_plot() -> None:
    """A row whose data this report does not know (or a row it has no plot for) gets no figure."""
    assert figures_for("FALSIFY-MPA-004", {"something_else": 1}, draw=False) == []
    assert figures_for("H0-COST", {"errors": [0.0]}, draw=False) == []


def test_cli_writes_index_html(reports: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`routeproof report DIR` writes DIR/index.html and exits 0; a missing folder exits 2."""
    assert main(["report", str(reports)]) == 0
    assert (reports / "index.html").read_text().startswith("<!DOCTYPE html>")
    assert "sections: falsify, chaos, conformance, bench" in capsys.readouterr().out
    assert main(["report", str(reports / "nope")]) == 2
    assert "no such directory" in capsys.readouterr().err


def test_cli_exits_1_on_a_malformed_input(reports: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A malformed input is printed and exits 1, with the page written anyway."""
    (reports / "bench.json").write_text("{not json")
    assert main(["report", str(reports)]) == 1
    assert "bench.json: cannot be read as JSON" in capsys.readouterr().err
    assert 'id="falsify"' in (reports / "index.html").read_text()


def test_write_report_returns_the_page_it_wrote(reports: Path) -> None:
    """write_report's path holds exactly the HTML it reports."""
    target, report = write_report(reports)
    assert target == reports / "index.html"
    assert target.read_text(encoding="utf-8") == report.html


@needs_pygal
def test_h0_latency_effect_distribution_once_judged_over_seeds() -> None:
    """H0-LATENCY data with improvement_by_seed adds a chart of the effect's distribution over seeds."""
    rows = json.loads((Path(__file__).parent / "fixtures" / "verdicts.json").read_text())
    data = next(r["data"] for r in rows if r["id"] == "H0-LATENCY")
    data["improvement_by_seed"] = {"11": 0.306, "12": 0.272, "14": 0.049}
    figures = figures_for("H0-LATENCY", data, draw=True)
    seeds = next(f for f in figures if f.key == "h0-latency-seeds")
    assert seeds.svg is not None
    assert seeds.svg.count('class="rect reactive tooltip-trigger"') == 3
    assert "over 3 seeds" in seeds.caption
