"""Fixtures for the report tests: a reports/ folder holding every suite's JSON (fixture files)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def reports(tmp_path: Path) -> Path:
    """A fresh reports/ folder with verdicts.json (a real falsify run), chaos.json, three conformance
    files and bench.json, plus the Markdown file a link should point at."""
    target = tmp_path / "reports"
    shutil.copytree(FIXTURES, target)
    (target / "verdicts.md").write_text("# provider-routing-v1 verdicts\n", encoding="utf-8")
    return target
