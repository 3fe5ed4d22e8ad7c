"""Run by test_stray_loop_guard.py as the only test of a fresh pytest process (not collected otherwise)."""

from __future__ import annotations

import asyncio


def test_the_first_sync_test_of_a_process_runs_an_event_loop() -> None:
    """asyncio.run in the first test of a process: it unsets the loop looptime made for this sync test."""
    assert asyncio.run(asyncio.sleep(0, result=1)) == 1
