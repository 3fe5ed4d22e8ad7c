"""provider-routing-v1.yaml stays bound to the code: schema, ids, bindings, checks and report rows."""

from __future__ import annotations

import copy
from typing import Any

import jsonschema
import pytest

from falsification.report import ROWS
from tests.contract.bindings import (
    binding_codes,
    check_contract,
    is_icontract_decorated,
    items,
    load_contract,
    load_schema,
    pending_items,
    report_row_ids,
    resolve_check,
    resolve_code,
)

SEED_EQUATIONS = {"privacy_enforcement", "failover_cascade", "cost_budget", "backoff_jitter", "format_translation"}
ROUTER_RULES = {"retry_schedule", "failover_budget", "deadline", "retry_after", "terminal_statuses", "attempts_cap",
                "sse_completeness"}  # fmt: skip
FALSIFY_IDS = {f"FALSIFY-MPA-{n:03d}" for n in range(1, 8)}
KANI_IDS = {f"KANI-MPA-{n:03d}" for n in range(1, 6)}
H0_IDS = {"H0-EGRESS", "H0-LATENCY", "H0-COST", "H0-TRANSLATION"}
AC_IDS = {f"AC-{n}" for n in range(1, 20)}


@pytest.fixture(scope="module")
def contract() -> dict[str, Any]:
    """The contract as checked in."""
    return load_contract()


def _ids(contract: dict[str, Any], section: str) -> set[str]:
    return {i.id for i in items(contract) if i.section == section}


def _binding(contract: dict[str, Any], item_id: str) -> dict[str, Any]:
    for section in ("proof_obligations", "falsification_tests", "kani_harnesses", "h0_experiments",
                    "acceptance_criteria", "kill_criteria"):  # fmt: skip
        for entry in contract[section]:
            if entry["id"] == item_id:
                return dict(entry["binding"])
    section, _, name = item_id.partition(".")
    return dict(contract[section][name]["binding"])


def _set_binding(contract: dict[str, Any], item_id: str, **changes: Any) -> dict[str, Any]:
    """A deep copy of ``contract`` with the binding of ``item_id`` updated by ``changes``."""
    broken = copy.deepcopy(contract)
    for section in ("proof_obligations", "falsification_tests", "kani_harnesses", "h0_experiments",
                    "acceptance_criteria", "kill_criteria"):  # fmt: skip
        for entry in broken[section]:
            if entry["id"] == item_id:
                entry["binding"].update(changes)
                return broken
    section, _, name = item_id.partition(".")
    broken[section][name]["binding"].update(changes)
    return broken


def test_schema_is_valid_draft_2020_12() -> None:
    """The JSON Schema itself is a valid draft 2020-12 schema."""
    jsonschema.Draft202012Validator.check_schema(load_schema())


def test_contract_validates_against_schema(contract: dict[str, Any]) -> None:
    """The YAML contract validates against its JSON Schema."""
    jsonschema.Draft202012Validator(load_schema()).validate(contract)


def test_contract_covers_every_seed_item(contract: dict[str, Any]) -> None:
    """Every equation, rule, FALSIFY row, Kani harness, H0 row and AC of the seeds is in the contract."""
    assert set(contract["equations"]) == SEED_EQUATIONS
    assert set(contract["rules"]) >= ROUTER_RULES
    assert _ids(contract, "falsification_tests") == FALSIFY_IDS
    assert _ids(contract, "kani_harnesses") == KANI_IDS
    assert _ids(contract, "h0_experiments") == H0_IDS
    assert _ids(contract, "acceptance_criteria") == AC_IDS
    assert len(contract["proof_obligations"]) == 8
    assert len(contract["kill_criteria"]) == 4


def test_every_item_has_a_binding(contract: dict[str, Any]) -> None:
    """Every contract id (equations, rules, obligations, rows, harnesses, criteria) carries a binding."""
    unbound = [i.id for i in items(contract) if i.binding is None]
    assert unbound == []


def test_every_binding_is_intact(contract: dict[str, Any]) -> None:
    """The checked-in contract has no problems: code imports, checks exist, report rows agree."""
    assert check_contract(contract) == []


def test_report_rows_match_the_contract(contract: dict[str, Any]) -> None:
    """The FALSIFY/H0 (and report_row AC) ids are exactly the rows of falsification.report.ROWS."""
    assert report_row_ids(contract) == {row.id for row in ROWS}


def test_pending_items_have_intended_bindings_and_no_checks(contract: dict[str, Any]) -> None:
    """A pending item names the code it will bind and claims no check."""
    for item in pending_items(contract):
        assert item.binding is not None
        assert binding_codes(item.binding), item.id
        assert "checks" not in item.binding, item.id


def test_kani_roles_are_played_by_crosshair_or_hypothesis(contract: dict[str, Any]) -> None:
    """Each Kani harness is bound to at least one CrossHair target or Hypothesis-backed test."""
    for harness in contract["kani_harnesses"]:
        assert harness["binding"]["status"] == "bound", harness["id"]
        assert harness["binding"]["checks"], harness["id"]


def test_checker_reports_a_missing_function(contract: dict[str, Any]) -> None:
    """A code binding to routeproof.core.backoff:no_such_function is reported."""
    broken = _set_binding(contract, "equations.backoff_jitter", code="routeproof.core.backoff:no_such_function")
    problems = check_contract(broken)
    assert len(problems) == 1
    assert "equations.backoff_jitter" in problems[0]
    assert "no_such_function" in problems[0]


def test_checker_reports_a_missing_module() -> None:
    """A code binding to a module that does not import is reported."""
    assert resolve_code("routeproof.core.no_such_module:f") is not None
    assert resolve_code("routeproof.core.backoff:full_jitter_ms") is None


def test_checker_reports_a_missing_test_function(contract: dict[str, Any]) -> None:
    """A check naming a test function that the file does not define is reported."""
    checks = [*_binding(contract, "FALSIFY-MPA-004")["checks"], "tests/core/test_backoff.py::test_no_such_test"]
    problems = check_contract(_set_binding(contract, "FALSIFY-MPA-004", checks=checks))
    assert problems == [
        "FALSIFY-MPA-004: check 'tests/core/test_backoff.py::test_no_such_test': "
        "'test_no_such_test' is not defined in tests/core/test_backoff.py"
    ]


def test_checker_reports_a_missing_test_file() -> None:
    """A check naming a file that does not exist is reported."""
    assert resolve_check("tests/core/test_nothing_here.py::test_x") is not None


def test_node_ids_resolve_classes_assignments_and_parameters() -> None:
    """Node ids may name a TestCase bound by assignment, a method in a class, or carry a parameter id."""
    assert resolve_check("tests/core/test_ledger.py::TestLedgerInterleavings") is None
    assert resolve_check("tests/core/test_ledger.py::LedgerMachine::reserve_call") is None
    assert resolve_check("tests/core/test_ledger.py::LedgerMachine::no_such_rule") is not None
    assert resolve_check("tests/core/test_backoff.py::test_full_jitter_never_exceeds_cap[0]") is None


def test_checker_reports_a_crosshair_target_without_contracts() -> None:
    """A crosshair: target without icontract conditions, or that does not exist, is reported."""
    assert resolve_check("crosshair:routeproof.core.formats.wire.compact_json") is not None
    assert resolve_check("crosshair:routeproof.core.backoff.no_such_function") is not None
    assert resolve_check("crosshair:routeproof.core.backoff.full_jitter_ms") is None


def test_icontract_detection() -> None:
    """is_icontract_decorated tells icontract-wrapped functions from plain ones."""
    from routeproof.core import backoff
    from routeproof.core.formats import wire

    assert is_icontract_decorated(backoff.full_jitter_ms)
    assert not is_icontract_decorated(wire.compact_json)
    assert not is_icontract_decorated(backoff.UNIT_SCALE)


def test_checker_reports_a_pending_item_with_checks(contract: dict[str, Any]) -> None:
    """A pending binding that claims checks is reported (by the schema and by the checker)."""
    broken = _set_binding(
        contract, "FALSIFY-MPA-001", status="pending", checks=["tests/core/test_tiers.py::test_tier_order_is_total"]
    )
    problems = check_contract(broken)
    assert any(p.startswith("schema: falsification_tests/0/binding") for p in problems)
    assert any(p.startswith("FALSIFY-MPA-001: pending binding lists checks") for p in problems)


def test_checker_reports_a_removed_binding(contract: dict[str, Any]) -> None:
    """An item whose binding was deleted is reported."""
    broken = copy.deepcopy(contract)
    del broken["kani_harnesses"][2]["binding"]
    assert "KANI-MPA-003: no binding" in check_contract(broken)


def test_checker_reports_report_row_drift(contract: dict[str, Any]) -> None:
    """A report row missing from the contract, or a contract row missing from the report, is reported."""
    rows = [row.id for row in ROWS]
    extra = check_contract(contract, report_rows=[*rows, "FALSIFY-MPA-008"])
    assert extra == ["FALSIFY-MPA-008: a row of falsification.report.ROWS but not in the contract"]
    missing = check_contract(contract, report_rows=[r for r in rows if r != "H0-COST"])
    assert missing == ["H0-COST: in the contract but not a row of falsification.report.ROWS"]


def test_checker_reports_a_bad_id_and_a_duplicate(contract: dict[str, Any]) -> None:
    """An id off its pattern and an id used twice are both reported."""
    broken = copy.deepcopy(contract)
    broken["falsification_tests"][1]["id"] = "FALSIFY-MPA-001"
    broken["proof_obligations"][0]["id"] = "PO-1"
    problems = check_contract(broken)
    assert "FALSIFY-MPA-001: id used twice" in problems
    assert any(p.startswith("schema: proof_obligations/0/id") for p in problems)
