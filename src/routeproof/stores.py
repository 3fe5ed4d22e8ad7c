"""Where routeproof keeps state that outlives one call: budget ledgers and provider health.

``Router(budgets=BudgetOptions(ledger_store=...), health=HealthOptions(health_store=...))`` takes
any value of the ``LedgerStore`` and ``HealthStore`` protocols; ``load_router`` builds them from the
``[ledger]`` and ``[health]`` tables of ``agent.toml``. Shipped here: the in-process stores and the
SQLite ledger. The Redis ones need the ``ledger`` extra and are imported from their modules:
``routeproof.ledger_store.redis_store.RedisLedgerStore`` and
``routeproof.health_store.redis_store.RedisHealthStore``.

What the in-process stores keep is here too: the budget limits (``BudgetOptions(limits=...)``),
the health and latency config (``HealthOptions(config=..., latency=...)``). So are the values the
stores hold and hand back (the ledger's accounts and reservations, a provider's health and latency)
and the prices the ledger books by, so a caller can name every type a store's methods take or return.
"""

from __future__ import annotations

from routeproof.core.attempt_health import HealthEffect
from routeproof.core.health import HealthConfig, HealthState, ProviderHealth
from routeproof.core.latency import LatencyConfig, LatencyState
from routeproof.core.ledger import Account, BudgetLimits, BudgetRefusal, BudgetScope, LedgerState, Reservation
from routeproof.core.pricing import Price, PricingTable
from routeproof.health_store import HealthStore, MemoryHealthStore
from routeproof.ledger_store import (
    LedgerConfig,
    LedgerStore,
    LedgerTotals,
    LedgerUnavailable,
    MemoryLedgerStore,
    Settled,
    SqliteLedgerStore,
)

__all__ = [
    "Account",
    "BudgetLimits",
    "BudgetRefusal",
    "BudgetScope",
    "HealthConfig",
    "HealthEffect",
    "HealthState",
    "HealthStore",
    "LatencyConfig",
    "LatencyState",
    "LedgerConfig",
    "LedgerState",
    "LedgerStore",
    "LedgerTotals",
    "LedgerUnavailable",
    "MemoryHealthStore",
    "MemoryLedgerStore",
    "Price",
    "PricingTable",
    "ProviderHealth",
    "Reservation",
    "Settled",
    "SqliteLedgerStore",
]
