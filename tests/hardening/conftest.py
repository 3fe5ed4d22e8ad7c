"""Hardening fixtures: the gateway stack of tests/gateway (real loopback sockets) and a redis-server
of the test's own (tests/ledger_store), reused.

``metrics_reader`` is None here: the process-wide telemetry is installed once, by tests/gateway's
session fixture, and a second install would take the reader its ``/metrics`` test reads."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from tests.gateway.conftest import make_stack, stack
from tests.ledger_store.conftest import own_redis, redis_binary

__all__ = ["make_stack", "metrics_reader", "own_redis", "redis_binary", "stack"]


@pytest.fixture(scope="session")
def metrics_reader() -> InMemoryMetricReader | None:
    """No metrics reader: these tests read no /metrics."""
    return None
