"""tools/falsify_seeds.py: the seed-stability comparison flags a row whose verdict moves with the seed base."""

from __future__ import annotations

import json
from pathlib import Path

from tools.falsify_seeds import RANDOMISED, compare, load, main

ROOT = Path(__file__).resolve().parents[2]


def _write(directory: Path, rows: dict[str, tuple[str, str]]) -> Path:
    directory.mkdir(parents=True)
    payload = [{"id": k, "verdict": v, "seeds": s} for k, (v, s) in rows.items()]
    (directory / "verdicts.json").write_text(json.dumps(payload), encoding="utf-8")
    return directory


def test_same_verdicts_under_two_bases_are_stable(tmp_path: Path) -> None:
    """Two bases with the same verdicts: no row changed, exit 0, seeds that differ are 'moved'."""
    a = _write(tmp_path / "a", {"H0-LATENCY": ("survived", "11..32"), "AC-11": ("survived", "none")})
    b = _write(tmp_path / "b", {"H0-LATENCY": ("survived", "101..120"), "AC-11": ("survived", "none")})
    lines, changed = compare({"a": load(a), "b": load(b)})
    assert changed == []
    assert any("H0-LATENCY" in line and "STABLE" in line and "moved with the base" in line for line in lines)
    assert any("AC-11" in line and "fixed" in line for line in lines)
    assert main(["compare", str(a), str(b)]) == 0


def test_a_verdict_that_moves_with_the_base_is_flagged(tmp_path: Path) -> None:
    """One row survived under one base and was falsified under another: CHANGED, exit 1."""
    a = _write(tmp_path / "a", {"H0-LATENCY": ("survived", "11..32")})
    b = _write(tmp_path / "b", {"H0-LATENCY": ("falsified", "101..200")})
    lines, changed = compare({"a": load(a), "b": load(b)})
    assert changed == ["H0-LATENCY"]
    assert "1 changed verdict: H0-LATENCY" in lines[-1]
    assert main(["compare", str(a), str(b)]) == 1


def test_rows_not_run_are_not_compared(tmp_path: Path) -> None:
    """A row 'not run' in one directory is neither stable nor changed there."""
    a = _write(tmp_path / "a", {"H0-COST": ("not run", ""), "AC-11": ("survived", "0..199")})
    b = _write(tmp_path / "b", {"H0-COST": ("falsified", "none"), "AC-11": ("survived", "5..204")})
    _, changed = compare({"a": load(a), "b": load(b)})
    assert changed == []


def test_every_seeded_row_module_is_in_the_randomised_list() -> None:
    """Every falsification module that takes its seeds from seeds.base is run by the tool's default."""
    seeded = {
        f"falsification/{p.name}"
        for p in (ROOT / "falsification").glob("test_*.py")
        if "base(" in p.read_text(encoding="utf-8")
    }
    assert seeded <= {path.split("::")[0] for path in RANDOMISED}
