"""No import circle anywhere in ``src/routeproof``: the module graph, read from the AST, is acyclic.

Every import statement counts, wherever it sits: at module level, inside a function, and under
``if TYPE_CHECKING:`` (a circle hidden from the interpreter is still a circle a reader must walk).
``from P import n`` is an edge to the package ``P`` (its ``__init__`` runs) and, when ``P.n`` is a
module, to ``P.n`` as well; ``import a.b`` is an edge to ``a.b``. So a package whose ``__init__``
imports a submodule that imports back "through the package" (``from routeproof.report import
_plots`` inside ``routeproof.report.bench``) is a circle. The implicit parent-package imports Python
performs are not edges (every module would otherwise sit in a circle with ``routeproof/__init__``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

import routeproof

SRC = Path(routeproof.__file__).parent
ROOT_PACKAGE = "routeproof"


def module_files(root: Path = SRC, package: str = ROOT_PACKAGE) -> dict[str, Path]:
    """Every module under ``root`` by dotted name (a package is named by its ``__init__``)."""
    found: dict[str, Path] = {}
    for path in sorted(root.rglob("*.py")):
        parts = (package, *path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _resolve_relative(module: str, is_package: bool, level: int, target: str | None) -> str:
    """The absolute name a relative ``from`` import in ``module`` refers to."""
    base = module.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join([*base, target] if target else base)


def imports_of(module: str, path: Path, known: Mapping[str, Path]) -> set[str]:
    """The project modules ``module`` imports (every statement, TYPE_CHECKING blocks included)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    is_package = path.name == "__init__.py"
    targets: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = _resolve_relative(module, is_package, node.level, node.module) if node.level else (node.module or "")
            targets.add(base)
            targets |= {f"{base}.{alias.name}" for alias in node.names}
    return {t for t in targets if t in known and t != module}


def import_graph(known: Mapping[str, Path]) -> dict[str, set[str]]:
    """Module name -> the project modules it imports."""
    return {name: imports_of(name, path, known) for name, path in known.items()}


def components(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module, sorted (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(sorted(component))
    return sorted(components)


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """One concrete circle per strongly connected component (a shortest one through its first member)."""
    return [_one_circle(graph, set(component), component[0]) for component in components(graph)]


def _one_circle(graph: Mapping[str, set[str]], members: set[str], start: str) -> list[str]:
    """A shortest path start -> ... -> start inside one strongly connected component (BFS)."""
    parents: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following: list[str] = []
        for node in frontier:
            for child in sorted(graph[node] & members):
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(parents[path[-1]])
                    return [*reversed(path), start]
                if child not in parents:
                    parents[child] = node
                    following.append(child)
        frontier = following
    raise AssertionError(f"{start} is in a component but on no circle")  # pragma: no cover


def test_src_has_no_import_circle() -> None:
    """The import graph of src/routeproof (TYPE_CHECKING and package __init__ edges included) has no circle."""
    graph = import_graph(module_files())
    found = [
        f"  {' -> '.join(_one_circle(graph, set(members), members[0]))}   (modules in this knot: {', '.join(members)})"
        for members in components(graph)
    ]
    assert found == [], "import circles:\n" + "\n".join(found)


def test_the_graph_reads_type_checking_and_package_edges(tmp_path: Path) -> None:
    """A circle closed only under TYPE_CHECKING, or through a package __init__, is found and printed."""
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.b import B\n")
    (pkg / "b.py").write_text("def f() -> None:\n    from . import a\n")
    (pkg / "sub" / "__init__.py").write_text("from pkg.sub import leaf\n")
    (pkg / "sub" / "leaf.py").write_text("from pkg.sub import _helper\n")
    (pkg / "sub" / "_helper.py").write_text("")
    found = cycles(import_graph(module_files(pkg, "pkg")))
    assert found == [["pkg.a", "pkg.b", "pkg.a"], ["pkg.sub", "pkg.sub.leaf", "pkg.sub"]]


def test_an_acyclic_graph_has_no_circle(tmp_path: Path) -> None:
    """A chain of imports (a -> b -> c) and an import of a sibling through a relative import are no circle."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from pkg import b\n")
    (pkg / "b.py").write_text("from .c import x\n")
    (pkg / "c.py").write_text("x = 1\n")
    graph = import_graph(module_files(pkg, "pkg"))
    assert graph["pkg.a"] == {"pkg", "pkg.b"}
    assert graph["pkg.b"] == {"pkg.c"}
    assert cycles(graph) == []
