"""tools/teeth.py: ``--repeat`` counts a break caught only when every run caught it; rows run under the
``teeth`` Hypothesis profile (ci's search, no shrinking)."""

from __future__ import annotations

import itertools
import json
import subprocess
from pathlib import Path

import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from tests.support import load_hypothesis_profiles
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


def _calls_after_the_first_failure(profile: str) -> int:
    """Run a property that fails for n >= 1000 under ``profile``; how often it ran after it first failed."""
    calls: list[bool] = []

    @settings(settings.get_profile(profile), database=None, derandomize=True)
    @given(st.integers(min_value=0, max_value=10**6))
    def prop(n: int) -> None:
        calls.append(n >= 1000)
        assert n < 1000

    with pytest.raises(AssertionError):
        prop()
    return len(calls) - calls.index(True) - 1


def test_the_teeth_profile_searches_as_ci_does_and_does_not_shrink() -> None:
    """A row's failure is found by ci's own search, and then not minimised (only replayed)."""
    load_hypothesis_profiles()
    ci, planted = settings.get_profile("ci"), settings.get_profile("teeth")
    assert (planted.max_examples, planted.deadline) == (ci.max_examples, ci.deadline)
    assert Phase.shrink not in planted.phases
    assert Phase.generate in planted.phases
    assert _calls_after_the_first_failure("teeth") <= 2
    assert _calls_after_the_first_failure("ci") > 2  # the measure can tell: ci shrinks


def test_each_row_runs_under_the_teeth_profile_whatever_the_env_says(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HYPOTHESIS_PROFILE", "ci")  # what tox and .ci/run set
    seen: dict[str, str] = {}

    def run(command: list[str], *, env: dict[str, str], **_: object) -> subprocess.CompletedProcess[str]:
        seen.update(env)
        return subprocess.CompletedProcess(command, 1, stdout="1 failed in 0.1s\n", stderr="")

    monkeypatch.setattr(subprocess, "run", run)
    caught, _ = teeth._run_in_copy(teeth.BREAKS[0], tmp_path / "copy")
    assert caught
    assert seen["HYPOTHESIS_PROFILE"] == "teeth"
    assert seen["ROUTEPROOF_SEED_WORKERS"] == "1"  # its rows run --jobs at once already
