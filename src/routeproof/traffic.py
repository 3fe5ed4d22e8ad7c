"""Traffic over many deployments (issue 32): deployment groups and balancing, declared rate
limits, retry budgets, budgeted hedging (``HedgePolicy`` per alias, ``TrafficConfig.hedges``). See docs/traffic.md.

``Router(..., traffic=TrafficConfig(...), traffic_store=...)``, or in ``agent.toml`` a provider's
``weight``, ``rpm`` and ``tpm`` and the ``[driver.traffic]`` table.
"""

from __future__ import annotations

from routeproof.core.balance import Member, Strategy
from routeproof.core.hedge import HedgePolicy
from routeproof.core.rate_limit import DeploymentLimits, LimitKind, RateVerdict
from routeproof.core.retry_budget import RetryBudgetConfig
from routeproof.traffic_store import MemoryTrafficStore, RateTicket, TrafficStore
from routeproof.traffic_store.port import TrafficConfig

__all__ = [
    "DeploymentLimits",
    "HedgePolicy",
    "LimitKind",
    "Member",
    "MemoryTrafficStore",
    "RateTicket",
    "RateVerdict",
    "RetryBudgetConfig",
    "Strategy",
    "TrafficConfig",
    "TrafficStore",
]
