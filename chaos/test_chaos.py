"""Every chaos scenario run: the real router, mock providers behind Toxiproxy, the invariants."""

from __future__ import annotations

import asyncio

import pytest

from chaos.report import RESULTS
from chaos.runner import run_scenario
from chaos.scenarios import Run, runs
from chaos.toxi import Toxi

pytestmark = [pytest.mark.chaos]

RUNS = runs()
RUN_TIMEOUT_S = 60.0


@pytest.mark.asyncio
@pytest.mark.parametrize("run", RUNS, ids=[r.id for r in RUNS])
async def test_scenario_keeps_every_invariant(toxi: Toxi, run: Run) -> None:
    """The call ends by its deadline with a success or a RouterError, records match the journals, no
    reservation stays open, no cut answer is reported whole, the pool works afterwards, no late request."""
    async with asyncio.timeout(RUN_TIMEOUT_S):
        result = await run_scenario(toxi, run)
    RESULTS.append(result)
    failed = [name for name, ok in result.invariants.items() if not ok]
    if failed and run.scenario.xfail:
        pytest.xfail(f"known router bug: {run.scenario.xfail}; failed {failed}; {result.notes}")
    assert not failed, f"{run.id}: invariants failed {failed}; outcome {result.outcome}; notes {result.notes}"


def test_the_table_covers_the_issue() -> None:
    """>= 30 runs, all seven toxic types, both entry points, all three provider shapes."""
    types = {t.type for r in RUNS for t in r.scenario.toxics}
    assert len(RUNS) >= 30
    assert types >= {"latency", "bandwidth", "slow_close", "timeout", "reset_peer", "slicer", "limit_data"}
    assert {r.stream for r in RUNS} == {False, True}
    assert len({r.shape for r in RUNS}) == 3
