"""Traffic-store fixtures: the ledger stores' real redis-server (one per session, on loopback)."""

from __future__ import annotations

from tests.ledger_store.conftest import redis_binary, redis_server

__all__ = ["redis_binary", "redis_server"]
