"""Every module under ``src/routeproof/core/`` is pure: no I/O, clock, randomness, concurrency or logging.

Checked on the AST (nothing is imported to check it), over every file in the package, so a new core
module is covered the day it is added. A module may import only the allow-list below, ``icontract``
and ``routeproof.core.*``; anything else (``time``, ``asyncio``, ``random``, ``os``, ``httpx``, the
shell's ``routeproof.errors`` …) fails the test naming the file, the line and the import.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import routeproof.core

CORE = Path(routeproof.core.__file__).parent
CORE_FILES = sorted(CORE.rglob("*.py"))  # core/ and its packages (core/formats/)

# Pure standard-library modules a core module may import, each with what core uses it for.
ALLOWED_STDLIB = {
    "__future__": "annotations",
    "bisect": "binary search over an in-memory, time-ordered sample window",
    "codecs": "the incremental UTF-8 decoder of the SSE parser (bytes in, text out)",
    "collections": "abc protocols (Mapping, Sequence, Iterator)",
    "dataclasses": "frozen value types",
    "decimal": "exact price parsing",
    "email": "email.utils.parsedate_to_datetime: parsing an HTTP-date Retry-After (no clock read)",
    "enum": "closed sets of outcomes and kinds",
    "fractions": "exact arithmetic",
    "functools": "pure combinators",
    "ipaddress": "classifying a host literal as private (no DNS lookup)",
    "itertools": "pure iteration",
    "json": "parsing and emitting wire bodies held in memory",
    "math": "integer ceilings and bounds",
    "operator": "itemgetter as a sort/bisect key (a pure accessor)",
    "re": "parsing text",
    "tomllib": "tomllib.loads of text the shell read (never tomllib.load of a file)",
    "types": "MappingProxyType (read-only views)",
    "typing": "annotations",
    "urllib": "urllib.parse.urlsplit of a configured base URL (no request)",
}
ALLOWED_THIRD_PARTY = {
    "icontract": "pre/postconditions",
    "blake3": "a deterministic digest for tool-call ids made where the wire gave none",
}
# Submodules of allowed packages that do I/O and stay out of core.
FORBIDDEN_SUBMODULES = {"urllib.request", "email.message", "email.parser", "json.tool"}
# Calls that read the clock, draw randomness or do I/O even without an import.
FORBIDDEN_CALLS = {"open", "print", "input", "exec", "eval", "compile", "__import__", "breakpoint"}
FORBIDDEN_ATTRIBUTES = {"now", "utcnow", "today", "monotonic", "perf_counter", "time_ns", "urandom", "getenv"}
# Money and policy modules hold exact integers only: a float literal there is a bug.
NO_FLOAT_PREFIXES = ("tiers", "pricing", "ledger", "health", "lemmas")


def _imports(tree: ast.Module) -> list[tuple[int, str]]:
    """Every imported module name (dotted, absolute) with its line."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                found.append((node.lineno, "routeproof.core." + (node.module or "")))
            elif node.module:
                found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
    return found


def impurities(source: str) -> list[str]:
    """What makes a core module's source impure, one line per finding (empty when pure)."""
    tree = ast.parse(source)
    problems: list[str] = []
    for line, name in _imports(tree):
        top = name.split(".")[0]
        if name.startswith("routeproof."):
            if not name.startswith("routeproof.core."):
                problems.append(f"line {line}: imports the shell: {name}")
        elif top not in ALLOWED_STDLIB and top not in ALLOWED_THIRD_PARTY:
            problems.append(f"line {line}: imports {name} (not on the core allow-list)")
        elif any(name == bad or name.startswith(bad + ".") for bad in FORBIDDEN_SUBMODULES):
            problems.append(f"line {line}: imports {name} (does I/O)")
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in FORBIDDEN_CALLS:
            problems.append(f"line {node.lineno}: calls {node.func.id}()")
        if isinstance(node, ast.Attribute) and node.attr in FORBIDDEN_ATTRIBUTES:
            problems.append(f"line {node.lineno}: reads .{node.attr} (clock, randomness or environment)")
    return problems


@pytest.mark.parametrize("path", CORE_FILES, ids=lambda p: p.stem)
def test_core_module_is_pure(path: Path) -> None:
    """A core module imports only the allow-list, icontract and routeproof.core, and calls no I/O builtin."""
    assert impurities(path.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize("path", [p for p in CORE_FILES if p.stem.startswith(NO_FLOAT_PREFIXES)], ids=lambda p: p.stem)
def test_money_and_policy_modules_have_no_float_literal(path: Path) -> None:
    """Tiers, pricing, ledger, health and the lemmas compute in exact integers: no float literal appears."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    floats = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, float)]
    assert floats == []


@pytest.mark.parametrize(
    ("source", "needle"),
    [
        ("import time\n", "imports time"),
        ("from asyncio import sleep\n", "imports asyncio.sleep"),
        ("import random\n", "imports random"),
        ("import logging\n", "imports logging"),
        ("from os import environ\n", "imports os.environ"),
        ("import httpx\n", "imports httpx"),
        ("from routeproof.errors import RouterError\n", "imports the shell"),
        ("from urllib.request import urlopen\n", "does I/O"),
        ("from datetime import datetime\n", "imports datetime.datetime"),
        ("x = when.now()\n", "reads .now"),
        ("print('x')\n", "calls print()"),
        ("open('f')\n", "calls open()"),
        ("def f() -> None:\n    import threading\n", "imports threading"),
    ],
)
def test_the_purity_check_catches(source: str, needle: str) -> None:
    """The checker itself flags each kind of impurity (so a silent checker cannot pass the suite)."""
    assert any(needle in problem for problem in impurities(source))


def test_every_core_module_is_checked() -> None:
    """The parametrisation covers every file in core (at least the 19 modules the issue counted)."""
    assert len(CORE_FILES) >= 20
    assert {p.stem for p in CORE_FILES} >= {"kernel", "ledger", "sse", "classify", "errors", "routing"}
