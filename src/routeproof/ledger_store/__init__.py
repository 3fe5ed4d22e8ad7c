"""Ledger stores: the budget ledger in memory, in one SQLite file, or in one Redis shared by replicas.

The pure ledger (:mod:`routeproof.core.ledger`) is the specification; each store performs its
transitions atomically where the state lives. The Router takes one through its ``ledger`` parameter
(default: memory). The crash rule for reservations held by a dead process is documented in
:mod:`routeproof.ledger_store.protocol`. The Redis store needs the ``ledger`` extra
(``pip install 'routeproof[ledger]'``); it is imported only when asked for.
"""

from __future__ import annotations

from routeproof.ledger_store.config import load_ledger_config, open_store
from routeproof.ledger_store.memory import MemoryLedgerStore, totals_of
from routeproof.ledger_store.protocol import (
    DEFAULT_LEASE_MS,
    LedgerStore,
    LedgerTotals,
    LedgerUnavailable,
    Settled,
)
from routeproof.ledger_store.sqlite import SqliteLedgerStore
from routeproof.ledger_store.table import LedgerConfig, parse_ledger_table

__all__ = [
    "DEFAULT_LEASE_MS",
    "LedgerConfig",
    "LedgerStore",
    "LedgerTotals",
    "LedgerUnavailable",
    "MemoryLedgerStore",
    "Settled",
    "SqliteLedgerStore",
    "load_ledger_config",
    "open_store",
    "parse_ledger_table",
    "totals_of",
]
