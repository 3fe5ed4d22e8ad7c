"""The shell reaches the world through its ports: no Router import below it, no foreign private names."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "routeproof"
BELOW_THE_ROUTER = ("call.py", "driver.py", "ports.py", "streaming.py")
SHELL = ("router.py", *BELOW_THE_ROUTER)


def _imported_modules(tree: ast.Module) -> set[str]:
    """Every module an ``import`` or ``from ... import`` names, anywhere (TYPE_CHECKING blocks too)."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


@pytest.mark.parametrize("name", BELOW_THE_ROUTER)
def test_nothing_below_the_router_imports_it(name: str) -> None:
    """call/driver/ports/streaming never import routeproof.router, not even for type checking."""
    tree = ast.parse((SRC / name).read_text(encoding="utf-8"))
    assert "routeproof.router" not in _imported_modules(tree), f"{name} imports routeproof.router"


def _foreign_privates(tree: ast.Module) -> list[str]:
    """``x._name`` where ``x`` is neither ``self``/``cls`` nor a class defined in the same module."""
    own_classes = {node.name for node in tree.body if isinstance(node, ast.ClassDef)}
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        attr = node.attr
        if not attr.startswith("_") or (attr.startswith("__") and attr.endswith("__")):
            continue
        base = node.value
        if isinstance(base, ast.Name) and (base.id in {"self", "cls"} or base.id in own_classes):
            continue
        found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


@pytest.mark.parametrize("name", SHELL)
def test_the_shell_touches_no_other_objects_private_names(name: str) -> None:
    """The router, driver, call, ports and streaming modules use only their own private names."""
    tree = ast.parse((SRC / name).read_text(encoding="utf-8"))
    assert _foreign_privates(tree) == [], name
