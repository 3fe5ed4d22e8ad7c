"""The exact-money state machine (tests/money/money_machine.py) on the memory and SQLite stores, one and two
routers: after every step of every example, the ledger equals the mocks' bills x price, per scope, exactly.

Bounded: a few short examples per store (real loopback sockets). The FALSIFY row EXACT-MONEY runs it
longer and on a real redis-server too.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test

from tests.money.money_machine import MoneyMachine

BOUNDED = settings(
    max_examples=3,
    stateful_step_count=8,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)


@pytest.mark.parametrize(("backend", "replicas"), [("memory", 1), ("sqlite", 1), ("sqlite", 2)])
def test_the_ledger_equals_the_bills_after_every_step(backend: str, replicas: int, tmp_path: Path) -> None:
    """Random sequences of paths (and, on SQLite, killed processes and lapsed leases): always exact."""
    machine = MoneyMachine.configure(backend, tmp_path, None, replicas)
    run_state_machine_as_test(machine, settings=BOUNDED)
    assert sum(machine.seen.values()) > 0
