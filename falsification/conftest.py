"""Falsification suite configuration: Hypothesis profiles and the verdict report."""

from __future__ import annotations

import asyncio
import os
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from _pytest.terminal import TerminalReporter
from hypothesis import HealthCheck, settings

settings.register_profile("dev", max_examples=100)
settings.register_profile("ci", max_examples=200, deadline=None, print_blob=True)
settings.register_profile("mutation", max_examples=50, derandomize=True, database=None, deadline=None)
settings.register_profile("falsify", max_examples=2_000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))

_REPORT_DIR = Path(os.environ.get("ROUTEPROOF_REPORT_DIR", "reports"))


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


@pytest.fixture(autouse=True)
def _close_stray_event_loop(request: pytest.FixtureRequest) -> Iterator[None]:
    """Close the loop looptime 0.9 creates for a *sync* test (``policy.get_event_loop()`` in its
    ``pytest_pyfunc_call``); left open it is garbage-collected in a later test as a ResourceWarning,
    which ``filterwarnings = error`` turns into a failure of whichever test happens to be running."""
    yield
    if request.node.get_closest_marker("asyncio") is not None:
        return
    policy = asyncio.get_event_loop_policy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            loop = policy.get_event_loop()
        except RuntimeError:
            return
    if not loop.is_running():
        loop.close()
        policy.set_event_loop(None)
