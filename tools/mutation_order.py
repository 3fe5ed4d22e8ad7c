"""A pytest plugin for mutation shards: run a mutant's fastest tests first.

mutmut 3.8 hands each mutant the set of tests that cover its function, and pytest runs them with
``-x``: the first failing test ends the run. Most mutants are killed by a quick example test, so
running the tests in order of the duration mutmut recorded in its stats run
(``mutants/mutmut-stats.json``, ``duration_by_test``) lets a killed mutant stop before the slow
Hypothesis properties start. A surviving mutant still runs every test, so the verdict is the same.
Loaded only by the shards' ``pytest_add_cli_args`` (``-p tools.mutation_order``); outside a mutant
run (no ``MUTANT_UNDER_TEST``, or no stats yet) it leaves the order alone.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

_durations: dict[str, float] | None = None


def _load_durations() -> dict[str, float]:
    global _durations  # noqa: PLW0603 - read once per forked worker's parent, then shared
    if _durations is None:
        stats = Path("mutmut-stats.json")
        try:
            data = json.loads(stats.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        _durations = {str(k): float(v) for k, v in data.get("duration_by_test", {}).items()}
    return _durations


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Sort a mutant's tests by their recorded duration, fastest first (unknown ones last)."""
    if not os.environ.get("MUTANT_UNDER_TEST"):
        return
    durations = _load_durations()
    if durations:
        items.sort(key=lambda item: durations.get(item.nodeid, float("inf")))
