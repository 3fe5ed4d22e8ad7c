"""Falsification suite configuration: Hypothesis profiles, the verdict report, and contracts on.

The CrossHair Hypothesis backend switches icontract off for the whole process as soon as its
provider is imported (VERIFICATION.md §2, pitfall 1). So the symbolic rows (modules named
``test_*_symbolic.py``) run in a process of their own: ``pytest falsification`` never collects
them, ``pytest falsification --symbolic`` collects only them, and every other row checks that
icontract is still enforcing before it runs.
"""

from __future__ import annotations

import os
from collections.abc import Generator, Iterator
from pathlib import Path

import icontract
import pytest
from _pytest.terminal import TerminalReporter

from tests.support import close_stray_event_loop, load_hypothesis_profiles

__all__ = ["close_stray_event_loop"]  # the autouse fixture, registered by being here

load_hypothesis_profiles()

_REPORT_DIR = Path(os.environ.get("ROUTEPROOF_REPORT_DIR", "reports"))
_SYMBOLIC_GLOB = "test_*_symbolic.py"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    """While a test runs, its node id and docstring are the ``method`` of any verdict it records."""
    from falsification.report import set_current_test

    doc = " ".join((getattr(getattr(item, "function", None), "__doc__", None) or "").split())
    set_current_test(f"{item.nodeid}: {doc}" if doc else item.nodeid)
    try:
        return (yield)
    finally:
        set_current_test(None)


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--symbolic``: run only the CrossHair-backend rows (they switch icontract off process-wide)."""
    parser.addoption(
        "--symbolic",
        action="store_true",
        default=False,
        help="collect only falsification/test_*_symbolic.py (run them in a process of their own)",
    )


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Keep symbolic and contract-checked rows in separate processes."""
    if collection_path.is_dir() or collection_path.suffix != ".py" or not collection_path.name.startswith("test_"):
        return None
    symbolic = collection_path.match(_SYMBOLIC_GLOB)
    return symbolic != bool(config.getoption("--symbolic"))


@icontract.require(lambda x: x > 0)
def _needs_positive(x: int) -> int:
    return x


def icontract_enforcing() -> bool:
    """Whether a violated precondition still raises in this process."""
    try:
        _needs_positive(0)
    except icontract.ViolationError:
        return True
    return False


@pytest.fixture(autouse=True)
def contracts_on(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every non-symbolic row runs with icontract enforcing, before and after the test."""
    if request.path.match(_SYMBOLIC_GLOB):
        yield
        return
    assert icontract_enforcing(), "icontract is switched off in this process: a symbolic row ran in it?"
    yield
    assert icontract_enforcing(), "icontract was switched off during this row"


def pytest_terminal_summary(terminalreporter: TerminalReporter, config: pytest.Config) -> None:
    """Print the verdict table at the end of the run and write it under reports/."""
    from falsification.report import recorded, write_reports

    if config.getoption("--symbolic"):
        terminalreporter.section("provider-routing-v1 symbolic rows")
        terminalreporter.write_line("(own process, icontract off; the verdict table comes from `pytest falsification`)")
        return
    verdicts = recorded()
    write_reports(_REPORT_DIR, verdicts)
    terminalreporter.section("provider-routing-v1 verdicts")
    width = max(len(v.id) for v in verdicts)
    for v in verdicts:
        terminalreporter.write_line(f"{v.id:<{width}}  {v.verdict:<9}  {v.evidence}")
    terminalreporter.write_line(f"(Markdown, JSON and JUnit XML written to {_REPORT_DIR}/)")
