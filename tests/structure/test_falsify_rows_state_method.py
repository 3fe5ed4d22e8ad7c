"""Every falsification row's evidence states its method and its seeds (issue 18).

Two layers: an AST pass over ``falsification/`` requires every ``record_verdict(...)`` call to pass
``procedure=`` and ``seeds=`` (and neither as a blank literal), and :func:`record_verdict` itself
refuses a blank one at run time and writes both at the head of the evidence the reports show.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from falsification import report

FALSIFICATION = Path(__file__).resolve().parents[2] / "falsification"
REQUIRED = ("procedure", "seeds")


def _blank_literal(node: ast.expr) -> bool:
    """A string constant (or an f-string with only constant parts) that is empty or whitespace."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str) and not node.value.strip()
    if isinstance(node, ast.JoinedStr):
        parts = node.values
        return (
            all(isinstance(p, ast.Constant) for p in parts)
            and not "".join(str(p.value) for p in parts if isinstance(p, ast.Constant)).strip()
        )
    return False


def missing_method_or_seeds(source: str, filename: str) -> list[str]:
    """``file:line: what is missing`` for each ``record_verdict`` call without a procedure or seeds."""
    problems = []
    for node in ast.walk(ast.parse(source, filename)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        if name != "record_verdict":
            continue
        given = {k.arg: k.value for k in node.keywords if k.arg is not None}
        if any(k.arg is None for k in node.keywords):
            continue  # **kwargs: left to the run-time check
        for key in REQUIRED:
            if key not in given:
                problems.append(f"{filename}:{node.lineno}: record_verdict without {key}=")
            elif _blank_literal(given[key]):
                problems.append(f"{filename}:{node.lineno}: record_verdict with a blank {key}=")
    return problems


def test_every_recorded_row_states_method_and_seeds() -> None:
    """Each record_verdict call in falsification/ passes a non-blank procedure= and seeds=."""
    files = sorted(p for p in FALSIFICATION.glob("*.py") if p.name != "report.py")
    calls = sum(p.read_text(encoding="utf-8").count("record_verdict(") for p in files)
    assert calls >= 12, f"expected the rows' record_verdict calls, found {calls}"
    problems = [
        problem for path in files for problem in missing_method_or_seeds(path.read_text(encoding="utf-8"), path.name)
    ]
    assert problems == []


@pytest.mark.parametrize(
    "snippet",
    [
        'record_verdict("H0-X", evidence="e", survived=True)',
        'record_verdict("H0-X", evidence="e", survived=True, procedure="walk")',
        'record_verdict("H0-X", evidence="e", survived=True, seeds="1..3")',
        'record_verdict("H0-X", evidence="e", survived=True, procedure="walk", seeds="  ")',
        'report.record_verdict("H0-X", evidence="e", survived=True, procedure=f"", seeds="1")',
    ],
)
def test_the_lint_catches_a_row_without_method_or_seeds(snippet: str) -> None:
    """The AST pass flags a recording missing procedure= or seeds=, or giving a blank one."""
    assert missing_method_or_seeds(snippet, "planted.py")


def test_the_lint_accepts_a_complete_recording() -> None:
    """A recording with both fields (literal or computed) passes the AST pass."""
    snippet = 'record_verdict("H0-X", evidence="e", survived=True, procedure=f"walk {n}", seeds=seed_range(s))'
    assert missing_method_or_seeds(snippet, "ok.py") == []


@pytest.fixture
def fresh_results(monkeypatch: pytest.MonkeyPatch) -> None:
    """Record into an empty result table."""
    monkeypatch.setattr(report, "_RESULTS", {})
    monkeypatch.setattr(report, "_CURRENT_TEST", [])


@pytest.mark.usefixtures("fresh_results")
@pytest.mark.parametrize(("procedure", "seeds"), [("", "1"), ("walk", ""), (" ", " ")])
def test_record_verdict_refuses_blank_method_or_seeds(procedure: str, seeds: str) -> None:
    """At run time a recording with a blank procedure or seeds raises, naming the row."""
    with pytest.raises(ValueError, match="H0-EGRESS: a verdict must state its"):
        report.record_verdict("H0-EGRESS", evidence="e", survived=True, procedure=procedure, seeds=seeds)


@pytest.mark.usefixtures("fresh_results")
def test_evidence_starts_with_method_and_seeds() -> None:
    """The evidence the reports show starts with METHOD and SEEDS; the JSON fields carry them too."""
    verdict = report.record_verdict(
        "H0-EGRESS", evidence="0 attempts", survived=True, procedure="all-seeds statement", seeds="1000..1019 (20)"
    )
    assert verdict.evidence == "METHOD all-seeds statement; SEEDS 1000..1019 (20): 0 attempts"
    assert (verdict.procedure, verdict.seeds) == ("all-seeds statement", "1000..1019 (20)")
    assert "METHOD all-seeds statement; SEEDS 1000..1019 (20)" in report.render_markdown(report.recorded())
