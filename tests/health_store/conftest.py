"""Health-store fixtures: the ledger-store tests' real redis-server on a free loopback port."""

from __future__ import annotations

from tests.ledger_store.conftest import new_namespace, own_redis, redis_binary, redis_server

__all__ = ["new_namespace", "own_redis", "redis_binary", "redis_server"]
