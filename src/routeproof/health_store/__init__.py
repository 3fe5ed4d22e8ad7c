"""Health stores: provider health (consecutive failures, cooldowns) in this process, or shared
through one Redis so that a provider one replica saw failing is demoted by all.

The pure health model (:mod:`routeproof.core.health`) is the specification; a store only decides
where else an effect is applied. The Router takes one through its ``health_store`` parameter
(default: memory). The Redis store needs the ``ledger`` extra and is imported only when asked for.
"""

from __future__ import annotations

from routeproof.health_store.config import (
    HealthStoreConfig,
    load_health_config,
    open_health_store,
    parse_health_table,
)
from routeproof.health_store.memory import MemoryHealthStore
from routeproof.health_store.protocol import HealthStore, apply_effect

__all__ = [
    "HealthStore",
    "HealthStoreConfig",
    "MemoryHealthStore",
    "apply_effect",
    "load_health_config",
    "open_health_store",
    "parse_health_table",
]
