"""The case files and the protocol schema: valid, enough cases, every contract rule covered."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from routeproof.conformance.cases import CaseError, load_cases, select

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "conformance" / "cases"
CONTRACT = ROOT / "contracts" / "provider-routing-v1.yaml"
PROTOCOL_SCHEMA = ROOT / "conformance" / "protocol.schema.json"
# Contract rules judged from the outside; attempt_records is internal (records are not observable).
NOT_OBSERVABLE = {"attempt_records"}


def test_cases_validate_and_there_are_at_least_60() -> None:
    """Every case file validates against case.schema.json, ids are unique and there are >= 60 cases."""
    cases = load_cases(CASES)
    assert len(cases) >= 60
    assert len({c["id"] for c in cases}) == len(cases)


def test_every_contract_rule_has_cases() -> None:
    """Each rule of the contract (and the tier and budget equations) is checked by at least one case."""
    contract = yaml.safe_load(CONTRACT.read_text(encoding="utf-8"))
    wanted = set(contract["rules"]) - NOT_OBSERVABLE | {"privacy_enforcement", "cost_budget", "cancellation"}
    covered = {c["rule"] for c in load_cases(CASES)}
    assert wanted <= covered, sorted(wanted - covered)


def test_every_report_row_ac_observable_from_outside_is_named() -> None:
    """The ACs a router's behaviour shows on the wire (2-8, 11-13, 15, 17) each name at least one case."""
    named = {ac for c in load_cases(CASES) for ac in c.get("acs", ())}
    wanted = {f"AC-{n}" for n in (2, 3, 4, 5, 6, 7, 8, 11, 12, 13, 15, 17)}
    assert wanted <= named, sorted(wanted - named)


def test_a_case_with_an_unknown_key_is_refused(tmp_path: Path) -> None:
    """A typo in a case file is a CaseError naming the file, never a silently ignored key."""
    cases = tmp_path / "cases"
    cases.mkdir()
    (tmp_path / "case.schema.json").write_text((ROOT / "conformance" / "case.schema.json").read_text())
    (cases / "x.yaml").write_text(
        "cases:\n  - {id: x, rule: deadline, title: t, providers: [{name: a, protocol: openai}],"
        " calls: [{expect: {outcom: success}}]}\n"
    )
    with pytest.raises(CaseError, match=r"x\.yaml"):
        load_cases(cases)


def test_only_selects_by_id_prefix_rule_and_ac() -> None:
    """--only matches an exact id, an id prefix, a rule prefix or an AC id."""
    cases = load_cases(CASES)
    assert next(c["id"] for c in select(cases, ["terminal.400"])) == "terminal.400"
    assert {c["rule"] for c in select(cases, ["retry_after"])} == {"retry_after"}
    assert all("AC-13" in c.get("acs", ()) for c in select(cases, ["AC-13"]))
    assert len(select(cases, [])) == len(cases)


def test_protocol_examples_validate() -> None:
    """The messages PROTOCOL.md shows validate against protocol.schema.json."""
    schema = json.loads(PROTOCOL_SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    examples = [
        {"op": "start", "protocol": "provider-routing-v1/conformance-1"},
        {"op": "started", "name": "my-router", "version": "1.2.3", "capabilities": ["stream", "deadline"]},
        {
            "op": "configure",
            "case": "retry.503-then-200",
            "budget_usd": None,
            "providers": [
                {
                    "name": "a",
                    "protocol": "openai",
                    "hosting": "public",
                    "base_url": "http://127.0.0.1:40123",
                    "model": "model-a",
                    "credentials": {"api_key": "k"},
                }
            ],
        },
        {"op": "configured"},
        {
            "op": "call",
            "case": "retry.503-then-200",
            "index": 0,
            "request": {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 64},
            "stream": False,
            "deadline_ms": None,
            "tier": "standard",
            "traceparent": None,
            "cancel_after_ms": None,
        },
        {"op": "outcome", "class": "success", "text": "from-a", "elapsed_ms": 214.7},
        {"op": "unsupported", "reason": "no bedrock"},
        {"op": "stop"},
    ]
    for message in examples:
        validator.validate(message)
    with pytest.raises(jsonschema.ValidationError):
        validator.validate({"op": "outcome", "class": "fine", "elapsed_ms": 1})
