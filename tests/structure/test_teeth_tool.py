"""tools/teeth.py: ``--repeat`` counts a break caught only when every run caught it."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from tools import teeth


def _fake_runs(monkeypatch: pytest.MonkeyPatch, results: list[bool]) -> None:
    """Make run_break return the given catch results in turn (cycling), without running pytest."""
    cycle = itertools.cycle(results)

    def fake(brk: teeth.Break) -> tuple[bool, str, float]:
        caught = next(cycle)
        return caught, f"pytest exit {1 if caught else 0}", 0.5

    monkeypatch.setattr(teeth, "run_break", fake)


def test_a_break_caught_two_runs_of_three_is_reported_missed(monkeypatch: pytest.MonkeyPatch) -> None:
    """A check that catches its break by luck (2 of 3 runs) is not 'always caught', and the miss is kept."""
    _fake_runs(monkeypatch, [True, False, True])
    outcome = teeth.run_repeated(teeth.BREAKS[0], 3)
    assert (outcome.caught, outcome.runs, outcome.always_caught) == (2, 3, False)
    assert outcome.detail == "pytest exit 0"


def test_repeat_fails_the_run_and_writes_the_catch_rate(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """main --repeat N exits 1 when one break misses once, and the report gives caught/runs per break."""
    _fake_runs(monkeypatch, [True, True, False])
    row = teeth.BREAKS[0].row
    code = teeth.main(["--only", row, "--repeat", "3", "--report", str(tmp_path)])
    assert code == 1
    rows = json.loads((tmp_path / "teeth.json").read_text(encoding="utf-8"))["breaks"]
    assert {(r["row"], r["runs"]) for r in rows} == {(row, 3)}
    assert any(r["caught"] < r["runs"] for r in rows)
    assert f"| {row} | " in (tmp_path / "teeth.md").read_text(encoding="utf-8")


def test_repeat_passes_when_every_run_catches(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """main --repeat N exits 0 when every break is caught in all N runs."""
    _fake_runs(monkeypatch, [True])
    assert teeth.main(["--only", teeth.BREAKS[0].row, "--repeat", "4", "--report", str(tmp_path)]) == 0


def test_repeat_must_be_positive() -> None:
    """--repeat 0 is refused naming the value."""
    with pytest.raises(SystemExit):
        teeth.main(["--repeat", "0"])


def test_every_break_applies_and_every_row_has_one() -> None:
    """The registry is in step with the code: each break's text occurs exactly once, each row has a break."""
    assert [why for b in teeth.BREAKS if (why := teeth.applies(b)) is not None] == []
    assert teeth.missing_rows() == []


def test_jobs_runs_every_break_and_keeps_the_registry_order(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """--jobs 3 runs each chosen break once and reports them in registry order; --jobs 0 is refused."""
    _fake_runs(monkeypatch, [True])
    rows = sorted({b.row for b in teeth.BREAKS[:6]})
    assert teeth.main(["--only", *rows, "--jobs", "3", "--report", str(tmp_path)]) == 0
    reported = [r["row"] for r in json.loads((tmp_path / "teeth.json").read_text(encoding="utf-8"))["breaks"]]
    assert reported == [b.row for b in teeth.BREAKS if b.row in rows]
    with pytest.raises(SystemExit):
        teeth.main(["--jobs", "0"])
