"""Traffic stores: where deployments' rate-limit windows and providers' retry buckets live.

``MemoryTrafficStore`` (one process), ``SQLiteTrafficStore`` (processes on one machine) and
``RedisTrafficStore`` (replicas anywhere) implement one Protocol, :class:`TrafficStore`.
"""

from __future__ import annotations

from routeproof.traffic_store.memory import MemoryTrafficStore
from routeproof.traffic_store.protocol import RateTicket, TrafficStore

__all__ = ["MemoryTrafficStore", "RateTicket", "TrafficStore"]
