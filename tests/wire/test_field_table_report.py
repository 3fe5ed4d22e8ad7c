"""The field table's counts and refusals (``tools/field_table_report.py``) come from the rows alone."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from routeproof.core.formats.field_table import ROWS, Treatment, pair_counts, refusals

REPORT = Path(__file__).resolve().parents[2] / "tools" / "field_table_report.py"


def test_the_counts_add_up_to_the_rows_of_each_pair() -> None:
    """Every row is counted once, under its pair and its treatment."""
    counts = pair_counts()
    assert sum(sum(c.values()) for c in counts.values()) == len(ROWS)
    for (source, target), by_treatment in counts.items():
        for treatment, count in by_treatment.items():
            rows = [r for r in ROWS if (r.source, r.target, r.treatment) == (source, target, treatment)]
            assert count == len(rows)


def test_the_report_lists_every_refusal_with_its_reason() -> None:
    """The printed report names each REFUSED row and its note."""
    spec = importlib.util.spec_from_file_location("field_table_report", REPORT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    text = module.report()
    assert refusals()
    assert all(row.treatment is Treatment.REFUSED for row in refusals())
    for row in refusals():
        assert f"`{row.field}`: {row.note}" in text
