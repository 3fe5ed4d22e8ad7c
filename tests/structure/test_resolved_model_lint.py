"""AC19 (Python form): ResolvedModel is built only through alias resolution, checked on the AST.

Python has no clippy, so an AST pass plays the lint. Outside ``core/routing.py``'s ``_resolve`` it
flags, in production code under ``src/routeproof``:

* any *value* use of the class: a call ``ResolvedModel(...)``, an alias ``RM = ResolvedModel`` or
  ``from ... import ResolvedModel as RM`` then ``RM(...)``, a module alias ``t.ResolvedModel(...)``,
  passing the class around. Annotations and ``isinstance``/``issubclass`` checks are allowed;
* ``getattr(anything, "ResolvedModel")`` and ``vars(...)["ResolvedModel"]``-style string look-ups;
* copying a resolved model into a new one: ``dataclasses.replace``/``copy.copy``/``copy.deepcopy``/
  ``copy.replace`` of a value annotated ``ResolvedModel`` (parameter or annotated assignment) or
  of any name/attribute called ``*resolved*``, and ``type(x)(...)``/``x.__class__(...)`` on those.

The lint's own teeth are pinned below: each way round it is planted in a snippet and must be caught.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

CLASS = "ResolvedModel"
ALLOWED = {("core/routing.py", "_resolve")}  # the one constructor, behind resolve()'s contracts
COPIERS = {"replace", "copy", "deepcopy", "__replace__"}
SRC = Path(__file__).resolve().parents[2] / "src" / "routeproof"


def _mentions_class(annotation: ast.expr | None) -> bool:
    if annotation is None:
        return False
    return any(
        (isinstance(n, ast.Name) and n.id == CLASS)
        or (isinstance(n, ast.Attribute) and n.attr == CLASS)
        or (isinstance(n, ast.Constant) and isinstance(n.value, str) and CLASS in n.value)
        for n in ast.walk(annotation)
    )


class _Lint(ast.NodeVisitor):
    """Collects offending lines of one module."""

    def __init__(self, relpath: str) -> None:
        self.relpath = relpath
        self.offences: list[tuple[int, str]] = []
        self.aliases: set[str] = {CLASS}  # names bound to the class in this module
        self.typed: list[set[str]] = [set()]  # names annotated ResolvedModel, per function scope
        self.function: list[str] = []

    # --- bindings -------------------------------------------------------------------------------
    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        for alias in node.names:
            if alias.name == CLASS and alias.asname:
                self.aliases.add(alias.asname)
                self._flag(node, f"imports {CLASS} as {alias.asname}")

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for dec in node.decorator_list:
            self.visit(dec)
        args = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
        self.typed.append({a.arg for a in args if _mentions_class(a.annotation)})
        self.function.append(node.name)
        for default in [*node.args.defaults, *node.args.kw_defaults]:
            if default is not None:
                self.visit(default)
        for statement in node.body:
            self.visit(statement)
        self.function.pop()
        self.typed.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if isinstance(node.target, ast.Name) and _mentions_class(node.annotation):
            self.typed[-1].add(node.target.id)
        if node.value is not None:
            self.visit(node.value)

    def visit_arg(self, node: ast.arg) -> None:
        """Parameter annotations are type positions."""

    # --- uses -----------------------------------------------------------------------------------
    def visit_Name(self, node: ast.Name) -> None:
        if node.id in self.aliases and isinstance(node.ctx, ast.Load):
            self._flag(node, f"uses the class {node.id} as a value")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr == CLASS and isinstance(node.ctx, ast.Load):
            self._flag(node, f"uses the class .{CLASS} as a value")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        if name in {"isinstance", "issubclass"}:
            for arg in node.args[:1]:
                self.visit(arg)
            return
        if any(isinstance(a, ast.Constant) and a.value == CLASS for a in node.args):
            self._flag(node, f"looks the class up by name via {name or 'a call'}()")
        if name in COPIERS and node.args and self._is_resolved(node.args[0]):
            self._flag(node, f"copies a resolved model with {name}()")
        called_type = isinstance(func, ast.Call) and isinstance(func.func, ast.Name) and func.func.id == "type"
        if called_type and isinstance(func, ast.Call) and func.args and self._is_resolved(func.args[0]):
            self._flag(node, "constructs type(resolved)(...)")
        if isinstance(func, ast.Attribute) and func.attr == "__class__" and self._is_resolved(func.value):
            self._flag(node, "constructs resolved.__class__(...)")
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if isinstance(node.slice, ast.Constant) and node.slice.value == CLASS:
            self._flag(node, "looks the class up by name via a subscript")
        self.generic_visit(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for base in node.bases:
            self.visit(base)
        self.function.append(node.name)
        for statement in node.body:
            self.visit(statement)
        self.function.pop()

    def _is_resolved(self, node: ast.expr) -> bool:
        if isinstance(node, ast.Name):
            return node.id in self.typed[-1] or "resolved" in node.id.lower()
        if isinstance(node, ast.Attribute):
            return "resolved" in node.attr.lower()
        return False

    def _flag(self, node: ast.AST, why: str) -> None:
        if (self.relpath, self.function[-1] if self.function else "") in ALLOWED:
            return
        self.offences.append((getattr(node, "lineno", 0), why))


def lint(source: str, relpath: str) -> list[str]:
    """Every AC-19 offence in one module's source, as ``path:line: why``."""
    if relpath == "core/types.py":  # the class's own definition
        return []
    linter = _Lint(relpath)
    linter.visit(ast.parse(source))
    return [f"{relpath}:{line}: {why}" for line, why in sorted(set(linter.offences))]


def test_ac19_resolved_model_built_only_by_alias_resolution() -> None:
    """AC19: production code builds ResolvedModel only inside core/routing.py's _resolve (AST check)."""
    offenders = [
        offence
        for path in sorted(SRC.rglob("*.py"))
        for offence in lint(path.read_text(encoding="utf-8"), path.relative_to(SRC).as_posix())
    ]
    assert offenders == [], offenders
    routing = (SRC / "core" / "routing.py").read_text(encoding="utf-8")
    calls = [
        n
        for n in ast.walk(ast.parse(routing))
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == CLASS
    ]
    assert len(calls) == 1, "exactly one constructor call, in _resolve"


PLANTED = {
    "direct call": "from routeproof.core.types import ResolvedModel\nx = ResolvedModel(provider=p, model='m')\n",
    "import alias": "from routeproof.core.types import ResolvedModel as RM\nx = RM(provider=p)\n",
    "assignment alias": "from routeproof.core.types import ResolvedModel\nRM = ResolvedModel\n",
    "module alias": "import routeproof.core.types as t\nx = t.ResolvedModel(provider=p)\n",
    "getattr": "import routeproof.core.types as t\nx = getattr(t, 'ResolvedModel')(provider=p)\n",
    "vars subscript": "import routeproof.core.types as t\nx = vars(t)['ResolvedModel']\n",
    "dataclasses.replace of a parameter": (
        "import dataclasses\nfrom routeproof.core.types import ResolvedModel\n"
        "def f(r: ResolvedModel) -> None:\n    return dataclasses.replace(r, model='x')\n"
    ),
    "bare replace of an attribute": "from dataclasses import replace\ny = replace(self.resolved, model='x')\n",
    "annotated local then copy.copy": (
        "import copy\nfrom routeproof.core.types import ResolvedModel\n"
        "def f(a: object) -> None:\n    r: ResolvedModel | None = a\n    return copy.copy(r)\n"
    ),
    "type(x)(...)": "def f(resolved: object) -> object:\n    return type(resolved)(provider=p)\n",
    "__class__": "def f(resolved: object) -> object:\n    return resolved.__class__(provider=p)\n",
    "construction in routing.py outside _resolve": (
        "def other() -> None:\n    return ResolvedModel(provider=p, model='m', alias='a', fallback_position=0)\n"
    ),
}


@pytest.mark.parametrize("snippet", PLANTED.values(), ids=PLANTED.keys())
def test_ac19_lint_catches_planted_construction(snippet: str) -> None:
    """AC19's own teeth: each way round the constructor, planted in a module, is flagged."""
    relpath = "core/routing.py" if "other()" in snippet else "router.py"
    assert lint(snippet, relpath) != []


def test_ac19_lint_allows_annotations_and_isinstance() -> None:
    """AC19 lint: annotations, isinstance and the one allowed constructor are not offences."""
    ok = (
        "from routeproof.core.types import ResolvedModel\n"
        "def f(r: ResolvedModel, s: 'ResolvedModel | None') -> ResolvedModel | None:\n"
        "    x: ResolvedModel = r\n    assert isinstance(x, ResolvedModel)\n    return s\n"
    )
    assert lint(ok, "router.py") == []
    allowed = "def _resolve(a, p):\n    return ResolvedModel(provider=k, model=m, alias=a, fallback_position=0)\n"
    assert lint(allowed, "core/routing.py") == []
