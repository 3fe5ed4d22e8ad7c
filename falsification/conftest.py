"""Falsification suite configuration: Hypothesis profiles and the verdict report."""

from __future__ import annotations

import os
from collections.abc import Generator
from pathlib import Path

import pytest
from _pytest.terminal import TerminalReporter

from tests.support import close_stray_event_loop, load_hypothesis_profiles

__all__ = ["close_stray_event_loop"]  # the autouse fixture, registered by being here

load_hypothesis_profiles()

_REPORT_DIR = Path(os.environ.get("ROUTEPROOF_REPORT_DIR", "reports"))


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


def pytest_terminal_summary(terminalreporter: TerminalReporter) -> None:
    """Print the verdict table at the end of the run and write it under reports/."""
    from falsification.report import recorded, write_reports

    verdicts = recorded()
    write_reports(_REPORT_DIR, verdicts)
    terminalreporter.section("provider-routing-v1 verdicts")
    width = max(len(v.id) for v in verdicts)
    for v in verdicts:
        terminalreporter.write_line(f"{v.id:<{width}}  {v.verdict:<9}  {v.evidence}")
    terminalreporter.write_line(f"(Markdown, JSON and JUnit XML written to {_REPORT_DIR}/)")
