"""The falsification report's additive fields: ``method`` and ``data`` beside the evidence text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from falsification import report


@pytest.fixture(autouse=True)
def fresh_results(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test records into its own empty result table."""
    monkeypatch.setattr(report, "_RESULTS", {})
    monkeypatch.setattr(report, "_CURRENT_TEST", [])


def test_two_recordings_merge_data_and_methods() -> None:
    """A row recorded by two tests keeps both tests as its method and both data keys; verdict as before."""
    report.set_current_test("falsification/a.py::test_a: first")
    report.record_verdict(
        "FALSIFY-MPA-007", evidence="one", survived=True, procedure="p1", seeds="7", data={"real_socket": {"calls": 1}}
    )
    report.set_current_test("falsification/b.py::test_b: second")
    merged = report.record_verdict(
        "FALSIFY-MPA-007", evidence="two", survived=False, procedure="p2", seeds="8..9", data={"virtual": {"calls": 2}}
    )
    report.set_current_test(None)
    assert merged.verdict == "falsified"
    assert merged.evidence == "METHOD p1; SEEDS 7: one; METHOD p2; SEEDS 8..9: two"
    assert (merged.procedure, merged.seeds) == ("p1; p2", "7; 8..9")
    assert merged.method == "falsification/a.py::test_a: first; falsification/b.py::test_b: second"
    assert dict(merged.data) == {"real_socket": {"calls": 1}, "virtual": {"calls": 2}}


def test_json_gains_fields_and_markdown_is_unchanged(tmp_path: Path) -> None:
    """verdicts.json carries method and data per row; verdicts.md keeps its five columns."""
    report.record_verdict("AC-11", evidence="ok", survived=True, procedure="p", seeds="none", data={"band": []})
    report.write_reports(tmp_path, report.recorded())
    rows = {r["id"]: r for r in json.loads((tmp_path / "verdicts.json").read_text())}
    assert rows["AC-11"]["data"] == {"band": []}
    assert rows["AC-11"]["method"] == ""
    assert rows["H0-COST"]["data"] == {}
    assert "| id | claim | prediction | evidence | verdict |" in (tmp_path / "verdicts.md").read_text()
