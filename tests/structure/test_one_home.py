"""One home per name (issue 29): a constant, a message prefix, a unit conversion is written once.

- ``"stream interrupted"`` is ``core.constants.STREAM_INTERRUPTED``; no other string in ``src``
  starts with it (docstrings aside).
- ``RETRY_AFTER_STATUSES`` is assigned once, in the kernel.
- Millisecond <-> second conversions (``* 1000``, ``/ 1000``, ``1e3``, ``1_000_000``) are in
  ``clock.py``; the files that still hold one are listed below with the reason, and the list may only
  shrink (a new conversion outside clock.py fails here: use ``clock.ms_of_s`` / ``s_of_ms`` / ``wall_ms``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "routeproof"

STILL_CONVERTING = {
    # the pure core may not import the shell's clock: it converts in its own parsing rules
    "core/constants.py", "core/provider_variants.py", "core/retry_after.py", "core/ratelimit_headers.py",
    # on the call path, being edited on other branches this stop: next in line
    "admission.py", "call.py", "driver.py",
    # the configuration loader (moved to config/ at this stop's merge) reads seconds and micro-units
    "config/load.py", "config/read.py",
    # units of other programs' APIs or reports: Toxiproxy's ms attributes, figures' axes, the
    # conformance protocol's seconds, Redis's timeouts, a stopwatch
    "toxiproxy/proxy.py", "report/falsify_figures.py", "report/bench.py", "conformance/judge.py",
    "conformance/run.py", "conformance/subjects.py", "health_store/redis_store.py", "ledger_store/table.py",
    "gateway/commands.py", "mock/rate_headers.py",
    # not time: a ratio read in millionths, kept in thousandths
    "hedge_config.py",
}  # fmt: skip
"""Files outside clock.py that still multiply or divide by 1000 (or 1e6): may only shrink."""

UNIT_FACTORS = (1000, 1e3, 1_000_000, 1e6)


def _modules() -> Iterator[tuple[str, ast.Module]]:
    for path in sorted(SRC.rglob("*.py")):
        yield path.relative_to(SRC).as_posix(), ast.parse(path.read_text(encoding="utf-8"))


def _docstrings(tree: ast.Module) -> set[int]:
    """ids of the docstring constants of a module and its classes and functions."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def files_converting_units(modules: Iterator[tuple[str, ast.Module]]) -> set[str]:
    """The modules (but clock.py) with a ``x * 1000``-style conversion."""
    found: set[str] = set()
    for name, tree in modules:
        for node in ast.walk(tree):
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult | ast.Div | ast.FloorDiv):
                sides = (node.left, node.right)
                if any(isinstance(s, ast.Constant) and s.value in UNIT_FACTORS for s in sides):
                    found.add(name)
    return found - {"clock.py"}


def test_stream_interrupted_is_written_once() -> None:
    """Only core/constants.py spells the prefix; everyone else imports STREAM_INTERRUPTED."""
    spelled = sorted(
        f"{name}:{node.lineno}"
        for name, tree in _modules()
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value.startswith("stream interrupted")
        and id(node) not in _docstrings(tree)
    )
    assert [s for s in spelled if not s.startswith("core/constants.py:")] == []
    assert len(spelled) == 1


def test_retry_after_statuses_has_one_definition() -> None:
    """The statuses whose wait hint counts are the kernel's; providers import them."""
    assigned = [
        name
        for name, tree in _modules()
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "RETRY_AFTER_STATUSES" for t in node.targets)
    ]
    assert assigned == ["core/kernel.py"]


def test_unit_conversions_stay_in_clock_or_on_the_shrinking_list() -> None:
    """A new ``* 1000`` outside clock.py fails; a file cleaned of them must leave the list."""
    found = files_converting_units(_modules())
    assert found - STILL_CONVERTING == set(), "convert with routeproof.clock (ms_of_s, s_of_ms, wall_ms)"
    assert STILL_CONVERTING - found == set(), "this file converts no more: take it off STILL_CONVERTING"


def test_the_conversion_check_sees_a_planted_one() -> None:
    """The check has teeth: ``elapsed_ms / 1000`` in a module is found."""
    planted = ast.parse("def f(elapsed_ms):\n    return elapsed_ms / 1000\n")
    assert files_converting_units(iter([("planted.py", planted)])) == {"planted.py"}
