"""``routeproof conformance matrix``: cases x implementations from per-implementation reports."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from routeproof.cli import main as routeproof_main
from routeproof.conformance.matrix import load_column, matrix_json


def _report(tmp: Path, name: str, cases: list[dict[str, Any]]) -> Path:
    path = tmp / f"conformance-{name}.json"
    path.write_text(json.dumps({"implementation": name, "version": "1.0", "cases": cases}), encoding="utf-8")
    return path


def _case(case_id: str, level: str, verdict: str, **extra: Any) -> dict[str, Any]:
    return {"id": case_id, "level": level, "rule": "deadline", "verdict": verdict, **extra}


def test_cells_carry_the_first_failed_check_and_the_na_reason(tmp_path: Path) -> None:
    """A fail cell names its first failed check; an n/a cell its reason; a case a report lacks is 'not run'."""
    a = _report(
        tmp_path,
        "a",
        [
            _case("x", "must", "fail", failures=[{"check": "gap"}, {"check": "outcome"}]),
            _case("y", "extension", "n/a", reason="capabilities not declared: cancel"),
        ],
    )
    b = _report(tmp_path, "b", [_case("x", "must", "pass")])
    doc = matrix_json([load_column(a), load_column(b)])
    cells = {c["id"]: c["cells"] for c in doc["cases"]}
    assert cells["x"] == {"a": "fail: gap", "b": "pass"}
    assert cells["y"]["a"].startswith("n/a: capabilities not declared")
    assert cells["y"]["b"] == "not run"


def test_conforms_counts_must_cases_only(tmp_path: Path) -> None:
    """A failed extension case leaves 'conforms' true; a failed MUST case makes it false."""
    ok = _report(tmp_path, "ok", [_case("m", "must", "pass"), _case("e", "extension", "fail")])
    bad = _report(tmp_path, "bad", [_case("m", "must", "fail"), _case("e", "extension", "pass")])
    impls = {i["name"]: i for i in matrix_json([load_column(ok), load_column(bad)])["implementations"]}
    assert impls["ok"]["conforms"] is True
    assert impls["bad"]["conforms"] is False
    assert impls["ok"]["levels"]["extension"] == {"pass": 0, "fail": 1, "n/a": 0}


def test_the_command_writes_markdown_and_json(tmp_path: Path) -> None:
    """The CLI reads the reports and writes conformance-matrix.md and .json."""
    a = _report(tmp_path, "a", [_case("x", "must", "pass")])
    assert routeproof_main(["conformance", "matrix", str(a), "--reports", str(tmp_path / "out")]) == 0
    md = (tmp_path / "out" / "conformance-matrix.md").read_text(encoding="utf-8")
    assert "| x | must | deadline | pass |" in md
    assert json.loads((tmp_path / "out" / "conformance-matrix.json").read_text(encoding="utf-8"))["suite"]["cases"] == 1


def test_case_mocks_never_reuse_a_port_within_a_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """When the OS offers a port an earlier case had, the runner asks again: no mock reuses a port in a run."""
    from routeproof.conformance import mocks

    offered = iter([40001, 40001, 40002])

    class FakeSocket:
        """A socket whose bind to port 0 gets the next offered port."""

        def __init__(self, *args: object) -> None:
            self.port = next(offered)

        def __enter__(self) -> FakeSocket:
            return self

        def __exit__(self, *exc: object) -> None:
            return None

        def bind(self, address: object) -> None:
            """Accept any address."""

        def getsockname(self) -> tuple[str, int]:
            """The offered port."""
            return ("127.0.0.1", self.port)

    monkeypatch.setattr("routeproof.conformance.mocks.socket.socket", FakeSocket)
    monkeypatch.setattr(mocks, "_HANDED_OUT", set())
    assert [mocks.fresh_port(), mocks.fresh_port()] == [40001, 40002]


def test_runs_of_one_implementation_under_two_static_profiles_merge(tmp_path: Path) -> None:
    """A case n/a under the one-provider profile and judged under the two-provider one keeps its verdict."""
    from routeproof.conformance.matrix import merge_columns

    (tmp_path / "p1").mkdir()
    (tmp_path / "p2").mkdir()
    one = _report(tmp_path / "p1", "gw", [_case("x", "must", "n/a", reason="chain"), _case("y", "must", "fail")])
    two = _report(tmp_path / "p2", "gw", [_case("x", "must", "pass"), _case("y", "must", "n/a", reason="chain")])
    (column,) = merge_columns([load_column(one), load_column(two)])
    assert {k: v["verdict"] for k, v in column.cells.items()} == {"x": "pass", "y": "fail"}
    assert routeproof_main(["conformance", "matrix", str(tmp_path), "--reports", str(tmp_path / "out")]) == 0
    doc = json.loads((tmp_path / "out" / "conformance-matrix.json").read_text(encoding="utf-8"))
    assert [i["name"] for i in doc["implementations"]] == ["gw"]
