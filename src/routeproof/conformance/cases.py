"""Load the conformance cases (YAML or JSON files under ``conformance/cases/``) and check them
against ``conformance/case.schema.json``."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["CASE_FORMAT", "CaseError", "default_cases_dir", "expand_calls", "load_cases", "needs", "select"]

CASE_FORMAT = 3
"""The case format (``conformance/case.schema.json``): 3 adds caller bodies, declared model
capabilities, traffic settings and the drop/totals expectations, each needing a harness capability."""


class CaseError(ValueError):
    """A case file is not valid; the message names the file and the offending value."""


def default_cases_dir() -> Path:
    """``conformance/cases`` under the current directory."""
    return Path("conformance") / "cases"


def _read(path: Path) -> Any:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        return json.loads(text)
    import yaml

    return yaml.safe_load(text)


def load_cases(cases_dir: Path, schema_path: Path | None = None) -> list[dict[str, Any]]:
    """Every case of every file in ``cases_dir`` (sorted by file name), schema-checked, ids unique."""
    import jsonschema

    files = sorted(p for p in cases_dir.iterdir() if p.suffix in {".yaml", ".yml", ".json"})
    if not files:
        raise CaseError(f"no case files (*.yaml, *.json) in {str(cases_dir)!r}")
    schema = json.loads((schema_path or cases_dir.parent / "case.schema.json").read_text(encoding="utf-8"))
    validator = jsonschema.Draft202012Validator(schema)
    cases: list[dict[str, Any]] = []
    seen: set[str] = set()
    for path in files:
        doc = _read(path)
        errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
        if errors:
            where = "/".join(str(p) for p in errors[0].absolute_path)
            raise CaseError(f"{path}: {where}: {errors[0].message[:300]}")
        for case in doc["cases"]:
            if case["id"] in seen:
                raise CaseError(f"{path}: duplicate case id {case['id']!r}")
            seen.add(case["id"])
            names = [p["name"] for p in case["providers"]]
            if len(set(names)) != len(names):
                raise CaseError(f"{path}: case {case['id']!r} names a provider twice: {names!r}")
            cases.append({**case, "file": path.name})
    return cases


def _expectations(case: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    out: list[Mapping[str, Any]] = []
    for call in case["calls"]:
        out += [call["expect"]] if "expect" in call else list(call.get("expect_any", ()))
    return out


def needs(case: Mapping[str, Any]) -> list[str]:
    """The harness capabilities ``case`` needs: its ``requires`` plus what its features imply (case
    format 3), so a harness that does not declare them (every ``conformance-1`` harness) reports the
    case n/a naming them, instead of failing it."""
    wanted = list(case.get("requires", ()))
    apis = {str(c["api"]) for c in case["calls"] if "api" in c}
    derived = [
        ("request", bool(apis)),
        ("anthropic_request", "anthropic" in apis),
        ("responses", "responses" in apis),
        ("model_capabilities", any("capabilities" in p for p in case["providers"])),
        (
            "weights",  # deployment groups: priorities, weights, a balancing strategy
            "strategy" in case.get("traffic", {}) or any("weight" in p or "priority" in p for p in case["providers"]),
        ),
        ("rate_limits", any("rpm" in p for p in case["providers"])),
        ("retry_budget", "retry_budget" in case.get("traffic", {})),
        ("dropped", any("dropped" in e or "not_dropped" in e for e in _expectations(case))),
    ]
    for capability, used in derived:
        if used and capability not in wanted:
            wanted.append(capability)
    return wanted


def expand_calls(case: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The case's calls with each ``repeat: N`` call written out N times."""
    out: list[Mapping[str, Any]] = []
    for call in case["calls"]:
        out += [call] * int(call.get("repeat", 1))
    return out


def select(cases: Sequence[Mapping[str, Any]], only: Iterable[str]) -> list[Mapping[str, Any]]:
    """The cases whose id equals, or whose id or rule starts with, one of ``only`` (all when empty)."""
    wanted = [w for w in only if w]
    if not wanted:
        return list(cases)
    return [
        c
        for c in cases
        if any(
            c["id"] == w or c["id"].startswith(w) or c["rule"].startswith(w) or w in c.get("acs", ()) for w in wanted
        )
    ]
