"""The policy core (tiers, pricing, ledger, health) imports nothing that does I/O, reads a clock or draws randomness."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import routeproof.core

FORBIDDEN = {"asyncio", "httpx", "time", "random", "os", "logging", "socket", "datetime", "subprocess", "threading"}
CORE = Path(routeproof.core.__file__).parent


@pytest.mark.parametrize("name", ["tiers", "pricing", "ledger", "health"])
def test_policy_module_imports_are_pure(name: str) -> None:
    """No forbidden top-level module is imported anywhere in the module, and no float literal appears."""
    tree = ast.parse((CORE / f"{name}.py").read_text(encoding="utf-8"))
    imported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module.split(".")[0])
    assert not imported & FORBIDDEN
    floats = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, float)]
    assert floats == []
