"""tools/run_crosshair.py: a counterexample fails the run; a crash of CrossHair's own is checked again.

A stand-in for CrossHair's command line plays each outcome: the module's file name says which.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tools import run_crosshair

FAKE_CROSSHAIR = """\
import os, sys
target = sys.argv[-1]
seed = os.environ["PYTHONHASHSEED"]
print("seed", seed, file=sys.stderr)
if "finds" in target:
    print(target + ":12: error: false when calling settle(1, 2) (which returns 3)")
    sys.exit(1)
if "crashes_always" in target or ("crashes_at_0" in target and seed == "0"):
    print("Traceback (most recent call last):", file=sys.stderr)
    print("crosshair.util.CrossHairInternal: SymbolicBoundedIntTuple", file=sys.stderr)
    sys.exit(1)
"""


@pytest.fixture
def fake_crosshair(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    entry = tmp_path / "fake_crosshair.py"
    entry.write_text(FAKE_CROSSHAIR, encoding="utf-8")
    monkeypatch.setattr(run_crosshair, "ENTRY", entry)
    monkeypatch.setenv("PYTHONHASHSEED", "0")
    monkeypatch.setenv("CROSSHAIR_WORKERS", "2")
    return tmp_path


def test_clean_modules_pass(fake_crosshair: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_crosshair.main([str(fake_crosshair / "clean.py"), str(fake_crosshair / "tidy.py")]) == 0
    assert "crashed and checked again: 0" in capsys.readouterr().out


def test_a_counterexample_fails_and_is_printed_last(fake_crosshair: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_crosshair.main([str(fake_crosshair / "finds.py"), str(fake_crosshair / "clean.py")]) == 1
    out = capsys.readouterr().out
    assert "crashed and checked again: 0" in out  # a finding is never run again
    lines = out.splitlines()
    header = lines.index("---- crosshair finds.py: counterexample at PYTHONHASHSEED=0 ----")
    assert header == len(lines) - 5  # after every module's line: the finding, its stderr, the two summary lines
    assert lines[header + 1].endswith(":12: error: false when calling settle(1, 2) (which returns 3)")
    assert lines[-1] == "crosshair found counterexamples or crashed twice in: finds.py"


def test_a_crash_is_checked_again_at_the_next_seed(fake_crosshair: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_crosshair.main([str(fake_crosshair / "crashes_at_0.py")]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^crosshair crashes_at_0.py +ok \(crashed at seed 0\) ", out, re.M)
    assert "---- crosshair crashes_at_0.py: crashed at PYTHONHASHSEED=0, checked again at 1 ----" in out
    assert "CrossHairInternal" in out  # the crash is shown, not hidden
    assert "crashed and checked again: 1" in out


def test_a_crash_on_both_seeds_fails(fake_crosshair: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_crosshair.main([str(fake_crosshair / "crashes_always.py")]) == 1
    out = capsys.readouterr().out
    assert "---- crosshair crashes_always.py: crash at PYTHONHASHSEED=1 ----" in out
    assert out.splitlines()[-1] == "crosshair found counterexamples or crashed twice in: crashes_always.py"


def test_the_seed_after_the_last_one_python_takes_is_0(
    fake_crosshair: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PYTHONHASHSEED", "4294967295")  # the largest: 2**32 would stop Python at start
    assert run_crosshair.main([str(fake_crosshair / "crashes_always.py")]) == 1
    assert "crashed at PYTHONHASHSEED=4294967295, checked again at 0 ----" in capsys.readouterr().out
