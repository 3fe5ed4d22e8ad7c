"""Check that provider-routing-v1.yaml and the code stay bound to each other.

:func:`check_contract` takes a parsed contract document and returns a list of problems (empty when
every item is bound to code that imports and to checks that exist). Test modules are never
imported: a pytest node id is resolved by parsing its file with :mod:`ast`.
"""

from __future__ import annotations

import ast
import functools
import importlib
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import icontract._checkers
import jsonschema
import yaml

__all__ = [
    "CONTRACT_PATH",
    "REPO_ROOT",
    "SCHEMA_PATH",
    "Item",
    "binding_codes",
    "check_contract",
    "items",
    "load_contract",
    "load_schema",
    "pending_items",
    "report_row_ids",
]

REPO_ROOT = Path(__file__).resolve().parents[2]
CONTRACT_PATH = REPO_ROOT / "contracts" / "provider-routing-v1.yaml"
SCHEMA_PATH = REPO_ROOT / "contracts" / "provider-routing-v1.schema.json"

_LISTS = ("proof_obligations", "falsification_tests", "kani_harnesses", "h0_experiments", "acceptance_criteria",
          "kill_criteria")  # fmt: skip
_MAPS = ("equations", "rules")
_CROSSHAIR = "crosshair:"


@dataclass(frozen=True, slots=True)
class Item:
    """One contract item: its section, its id and its binding (``None`` when it has none)."""

    section: str
    id: str
    binding: Mapping[str, Any] | None


def load_contract(path: Path = CONTRACT_PATH) -> dict[str, Any]:
    """The contract document, parsed."""
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(document, dict):
        raise TypeError(f"{path} does not hold a mapping: {type(document).__name__}")
    return document


def load_schema(path: Path = SCHEMA_PATH) -> dict[str, Any]:
    """The contract's JSON Schema, parsed."""
    schema = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(schema, dict):
        raise TypeError(f"{path} does not hold an object: {type(schema).__name__}")
    return schema


def items(document: Mapping[str, Any]) -> Iterator[Item]:
    """Every item of every section that carries an id, whatever the document's shape."""
    for section in _MAPS:
        entries = document.get(section)
        if isinstance(entries, Mapping):
            for name, entry in entries.items():
                yield Item(section, f"{section}.{name}", _binding_of(entry))
    for section in _LISTS:
        entries = document.get(section)
        if isinstance(entries, list):
            for index, entry in enumerate(entries):
                item_id = entry.get("id") if isinstance(entry, Mapping) else None
                yield Item(section, str(item_id or f"{section}[{index}]"), _binding_of(entry))


def _binding_of(entry: object) -> Mapping[str, Any] | None:
    binding = entry.get("binding") if isinstance(entry, Mapping) else None
    return binding if isinstance(binding, Mapping) else None


def binding_codes(binding: Mapping[str, Any]) -> list[str]:
    """The binding's code references, whether it names one or a list."""
    code = binding.get("code")
    if isinstance(code, str):
        return [code]
    return [c for c in code if isinstance(c, str)] if isinstance(code, list) else []


def _strings(binding: Mapping[str, Any], key: str) -> list[str]:
    value = binding.get(key)
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def pending_items(document: Mapping[str, Any]) -> list[Item]:
    """The items whose binding is ``pending``: the code or checks still to be written."""
    return [i for i in items(document) if i.binding is not None and i.binding.get("status") == "pending"]


def report_row_ids(document: Mapping[str, Any]) -> set[str]:
    """Ids that must be rows of the verdict report: FALSIFY and H0 rows, and ACs marked report_row."""
    rows = {i.id for i in items(document) if i.section in ("falsification_tests", "h0_experiments")}
    criteria = document.get("acceptance_criteria")
    if isinstance(criteria, list):
        rows |= {str(c["id"]) for c in criteria if isinstance(c, Mapping) and c.get("report_row") and "id" in c}
    return rows


def resolve_code(ref: str) -> str | None:
    """``None`` when ``module:qualname`` imports and its attributes exist, else what went wrong."""
    module_name, sep, qualname = ref.partition(":")
    if not sep or not module_name or not qualname:
        return f"{ref!r} is not module:qualname"
    try:
        target: object = importlib.import_module(module_name)
    except ImportError as exc:
        return f"{ref!r}: module {module_name!r} does not import ({exc})"
    for part in qualname.split("."):
        if not hasattr(target, part):
            return f"{ref!r}: {part!r} not found in {getattr(target, '__name__', target)!r}"
        target = getattr(target, part)
    return None


def _crosshair_target(dotted: str) -> tuple[object | None, str | None]:
    parts = dotted.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        module_name = ".".join(parts[:cut])
        try:
            target: object = importlib.import_module(module_name)
        except ImportError:
            continue
        for part in parts[cut:]:
            if not hasattr(target, part):
                return None, f"{part!r} not found in {module_name!r}"
            target = getattr(target, part)
        return target, None
    return None, f"no importable module in {dotted!r}"


def is_icontract_decorated(func: object) -> bool:
    """Whether icontract put pre- or postconditions on ``func`` (what CrossHair's icontract mode checks)."""
    if not callable(func):
        return False
    if icontract._checkers.find_checker(func) is not None:
        return True
    seen: object | None = func
    while seen is not None:
        if getattr(seen, "__preconditions__", None) or getattr(seen, "__postconditions__", None):
            return True
        seen = getattr(seen, "__wrapped__", None)
    return False


def _defined_names(body: Iterable[ast.stmt]) -> dict[str, ast.stmt]:
    names: dict[str, ast.stmt] = {}
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names[node.name] = node
        elif isinstance(node, ast.Assign):
            names.update((t.id, node) for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names[node.target.id] = node
    return names


@functools.lru_cache(maxsize=256)
def _module_body(path: Path, mtime_ns: int) -> tuple[ast.stmt, ...]:
    """The top-level statements of ``path`` (cached per modification time)."""
    del mtime_ns  # part of the cache key only
    return tuple(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)).body)


def resolve_node_id(node_id: str, root: Path = REPO_ROOT) -> str | None:
    """``None`` when ``path::name[::name]`` names a file under ``root`` and a def/class/assignment in it."""
    path_text, *names = node_id.split("[", 1)[0].split("::")
    path = root / path_text
    if not names:
        return f"{node_id!r} names no test"
    if not path.is_file():
        return f"{node_id!r}: no file {path_text}"
    body: Iterable[ast.stmt] = _module_body(path, path.stat().st_mtime_ns)
    for name in names:
        found = _defined_names(body).get(name)
        if found is None:
            return f"{node_id!r}: {name!r} is not defined in {path_text}"
        body = found.body if isinstance(found, ast.ClassDef) else ()
    return None


def resolve_check(check: str, root: Path = REPO_ROOT) -> str | None:
    """``None`` when the check exists, else what is wrong with it."""
    if check.startswith(_CROSSHAIR):
        target, problem = _crosshair_target(check.removeprefix(_CROSSHAIR))
        if problem is not None:
            return f"{check!r}: {problem}"
        if not is_icontract_decorated(target):
            return f"{check!r} is not an icontract-decorated function (CrossHair would check nothing)"
        return None
    if "::" not in check:
        return f"{check!r} is neither a pytest node id (path::name) nor crosshair:module.qualname"
    return resolve_node_id(check, root)


def _schema_problems(document: Mapping[str, Any], schema: Mapping[str, Any]) -> list[str]:
    validator = jsonschema.Draft202012Validator(schema)
    return [
        f"schema: {'/'.join(str(p) for p in error.absolute_path) or '<root>'}: {error.message}"
        for error in sorted(validator.iter_errors(document), key=lambda e: list(map(str, e.absolute_path)))
    ]


def _binding_problems(item: Item, root: Path) -> list[str]:
    binding = item.binding
    if binding is None:
        return [f"{item.id}: no binding"]
    status = binding.get("status")
    codes = binding_codes(binding)
    checks = _strings(binding, "checks")
    if not codes:
        return [f"{item.id}: binding names no code"]
    if status == "pending":
        if checks:
            return [f"{item.id}: pending binding lists checks {checks} (bind it or move them to intended_checks)"]
        return []
    if status != "bound":
        return [f"{item.id}: binding status {status!r} is neither 'bound' nor 'pending'"]
    problems = [] if checks else [f"{item.id}: bound but lists no checks"]
    problems += [f"{item.id}: code {p}" for c in codes if (p := resolve_code(c)) is not None]
    problems += [f"{item.id}: check {p}" for c in checks if (p := resolve_check(c, root)) is not None]
    return problems


def check_contract(
    document: Mapping[str, Any],
    *,
    schema: Mapping[str, Any] | None = None,
    report_rows: Iterable[str] | None = None,
    root: Path = REPO_ROOT,
) -> list[str]:
    """Every way ``document`` fails to be bound: schema errors, missing or dangling bindings, row drift.

    ``schema`` defaults to the contract's JSON Schema and ``report_rows`` to the ids of
    ``falsification.report.ROWS``.
    """
    problems = _schema_problems(document, load_schema() if schema is None else schema)
    all_items = list(items(document))
    seen: set[str] = set()
    for item in all_items:
        if item.id in seen:
            problems.append(f"{item.id}: id used twice")
        seen.add(item.id)
        problems += _binding_problems(item, root)
    if report_rows is None:
        from falsification.report import ROWS

        report_rows = (row.id for row in ROWS)
    rows, contract_rows = set(report_rows), report_row_ids(document)
    problems += [
        f"{r}: in the contract but not a row of falsification.report.ROWS" for r in sorted(contract_rows - rows)
    ]
    problems += [
        f"{r}: a row of falsification.report.ROWS but not in the contract" for r in sorted(rows - contract_rows)
    ]
    gate = document.get("qa_gate")
    gate_checks = gate.get("checks") if isinstance(gate, Mapping) else None
    for check in gate_checks if isinstance(gate_checks, list) else ():
        row = check.get("row") if isinstance(check, Mapping) else None
        if row not in contract_rows:
            problems.append(f"qa_gate: check {check!r} names no report row of the contract")
    return problems
