"""Case levels: MUST / SHOULD / extension, alternatives accepted, scored apart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from routeproof.conformance.cases import CaseError, load_cases
from routeproof.conformance.judge import CallRun, judge_case
from routeproof.conformance.report import conforms, level_markdown, level_scores
from routeproof.conformance.run import CaseResult
from tests.conformance.test_judge import req

ROOT = Path(__file__).resolve().parents[2] / "conformance"
EXTENSION_IDS = {
    "retry-after.on-503",
    "retry-after.http-date",
    "retryable.anthropic-529",
    "deadline.during-a-sleep-ends-at-once",
}


def _run(call: dict[str, Any], outcome: dict[str, Any], observed: list[Any], returned_s: float) -> set[str]:
    case: dict[str, Any] = {"id": "t", "rule": "deadline", "calls": [call]}
    run = CallRun(index=0, spec=call, sent_s=0.0, returned_s=returned_s, outcome=outcome)
    return {f.check for f in judge_case(case, [run], observed, {}, {})}


def test_every_case_states_its_level_and_basis() -> None:
    """Each of the cases says whether the seeds require it, allow several behaviours, or are routeproof's own."""
    cases = load_cases(ROOT / "cases")
    assert all(c["level"] in {"must", "should", "extension"} and c.get("basis") for c in cases)
    old = [c for c in cases if not c["file"].startswith("13-")]  # case format 3's file: all extensions
    assert {c["id"] for c in old if c["level"] == "extension"} == EXTENSION_IDS
    assert {c["level"] for c in cases if c["file"].startswith("13-")} == {"extension"}


def test_a_case_without_a_level_is_refused(tmp_path: Path) -> None:
    """The schema requires a level, so a new case must decide what it tests."""
    (tmp_path / "cases").mkdir()
    (tmp_path / "case.schema.json").write_text((ROOT / "case.schema.json").read_text(encoding="utf-8"))
    (tmp_path / "cases" / "x.yaml").write_text(
        "cases:\n  - {id: x, rule: deadline, title: t, providers: [{name: a, protocol: openai}], "
        "calls: [{expect: {outcome: success}}]}\n",
        encoding="utf-8",
    )
    with pytest.raises(CaseError, match="level"):
        load_cases(tmp_path / "cases")


def test_expect_any_passes_when_one_alternative_holds() -> None:
    """A 422 that ends the call at once, or one that fails over: either behaviour the contract allows passes."""
    call = {
        "expect_any": [
            {"outcome": "success", "requests": {"a": 1, "b": 1}},
            {"outcome": "terminal", "requests": {"a": 1, "b": 0}},
        ]
    }
    assert _run(call, {"class": "terminal", "elapsed_ms": 20}, [req("a", 0, 0.0)], 0.02) == set()
    assert _run(call, {"class": "success", "elapsed_ms": 20}, [req("a", 0, 0.0), req("b", 0, 0.01)], 0.02) == set()


def test_expect_any_fails_when_no_alternative_holds_and_names_the_closest() -> None:
    """A retried 422 matches neither allowed behaviour: the closest one's failed checks are reported."""
    call = {
        "expect_any": [
            {"outcome": "success", "requests": {"a": 1, "b": 1}},
            {"outcome": "terminal", "requests": {"a": 1, "b": 0}},
        ]
    }
    failed = _run(call, {"class": "terminal", "elapsed_ms": 300}, [req("a", 0, 0.0), req("a", 1, 0.2)], 0.3)
    assert failed == {"requests (allowed behaviour 2 of 2, none held)"}


def _result(case_id: str, level: str, verdict: str) -> CaseResult:
    return CaseResult(id=case_id, rule="deadline", acs=(), title="t", level=level, verdict=verdict)


def test_only_must_cases_decide_conformance() -> None:
    """Failed extension and SHOULD cases are scored apart; one failed MUST case means 'does not conform'."""
    results = [_result("m", "must", "pass"), _result("s", "should", "fail"), _result("e", "extension", "fail")]
    assert conforms(results)
    assert level_scores(results)["extension"] == {"pass": 0, "fail": 1, "n/a": 0}
    assert "**yes**" in level_markdown(results)
    assert not conforms([*results, _result("m2", "must", "fail")])
    assert "**no**" in level_markdown([*results, _result("m2", "must", "fail")])
