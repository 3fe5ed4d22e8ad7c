"""The page in a real browser: headless Chromium (Debian's ``chromium``) loads it from disk with no
console error and no request beyond the file, shows every section present in the JSON, and draws
every chart as a visible, non-empty SVG of a sensible size; a full-page screenshot is kept under
reports/. tools/ensure_chromium.sh installs chromium; without it these tests are skipped, saying so."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from routeproof.report import _plots, build_report, write_report
from routeproof.report.falsify import figures_for
from tests.report.cdp import PageCheck, check_page, find_chromium, launch

CHROMIUM = find_chromium()
pytestmark = [
    pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (tools/ensure_chromium.sh installs it)"),
    pytest.mark.skipif(not _plots.available(), reason="pygal not installed (the 'report' extra)"),
]
REPORT_DIR = Path(os.environ.get("ROUTEPROOF_REPORT_DIR", "reports"))
MIN_WIDTH_PX, MIN_HEIGHT_PX = 300, 150


def _expected(reports: Path) -> tuple[list[str], list[str], set[str]]:
    """From the JSON alone: the sections, the falsify rows and the chart keys the page must show."""
    sections = [
        name
        for name, present in (
            ("falsify", (reports / "verdicts.json").is_file()),
            ("chaos", (reports / "chaos.json").is_file()),
            ("conformance", any(reports.glob("conformance-*.json"))),
            ("bench", (reports / "bench.json").is_file()),
        )
        if present
    ]
    rows: list[str] = []
    keys: set[str] = set()
    if (reports / "verdicts.json").is_file():
        for row in json.loads((reports / "verdicts.json").read_text(encoding="utf-8")):
            rows.append(f"row-{row['id']}")
            keys |= {f.key for f in figures_for(row["id"], row.get("data") or {}, draw=False)}
    for name, key in (("chaos", "chaos-elapsed"), ("conformance", "conformance-totals"), ("bench", "bench-mean")):
        if name in sections:
            keys.add(key)
    return sections, rows, keys


def _load(page: Path, screenshot: Path, tmp_path: Path) -> PageCheck:
    assert CHROMIUM is not None
    with launch(CHROMIUM, tmp_path / "profile") as browser:
        return check_page(browser, page, screenshot)


def _assert_page(check: PageCheck, reports: Path, screenshot: Path) -> None:
    sections, rows, keys = _expected(reports)
    assert check.errors == []
    assert check.requests == []
    assert check.probe["scripts"] == 0
    assert check.probe["sections"] == sections
    assert check.probe["rows"] == rows
    figures = {f["key"]: f for f in check.probe["figures"]}
    assert set(figures) == keys
    for key, fig in figures.items():
        assert fig["svg"], key
        assert fig["visible"], key
        assert fig["width"] >= MIN_WIDTH_PX, fig
        assert fig["height"] >= MIN_HEIGHT_PX, fig
        assert fig["drawn"] >= 1, fig
    png = screenshot.read_bytes()
    assert png.startswith(b"\x89PNG")
    assert len(png) > 20_000  # a blank page compresses to a few kB


def test_fixture_page_in_chromium(reports: Path, tmp_path: Path) -> None:
    """Every suite's fixture JSON: the page loads cleanly and every section and chart is visible."""
    page, _ = write_report(reports)
    screenshot = REPORT_DIR / "report-screenshot.png"
    check = _load(page, screenshot, tmp_path)
    _assert_page(check, reports, screenshot)
    assert check.probe["sections"] == ["falsify", "chaos", "conformance", "bench"]


def test_this_runs_page_in_chromium(tmp_path: Path) -> None:
    """The page over this checkout's reports/ (left by `tox -e falsify`): same checks, screenshot kept."""
    if not (REPORT_DIR / "verdicts.json").is_file():
        pytest.skip(f"no {REPORT_DIR}/verdicts.json yet: `tox -e falsify` writes it")
    page, report = write_report(REPORT_DIR)
    assert report.problems == ()
    screenshot = REPORT_DIR / "index-screenshot.png"
    _assert_page(_load(page, screenshot, tmp_path), REPORT_DIR, screenshot)
    assert build_report(REPORT_DIR).sections[0] == "falsify"
