"""Ledger-store fixtures: a real redis-server on a free loopback port, unique Redis namespaces."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tools.redis_server import RedisServer, redis_server_binary

_NAMESPACES = itertools.count()


def new_namespace() -> str:
    """A Redis key namespace no other test (or process) in this run uses."""
    return f"t{os.getpid()}-{next(_NAMESPACES)}"


@pytest.fixture(scope="session")
def redis_binary() -> str:
    """The redis-server binary, or the test is skipped saying why (never passed without Redis)."""
    found = redis_server_binary()
    if found is None:
        pytest.skip("redis-server is not installed (run `python tools/redis_server.py --install`, as .ci/run does)")
    return found


@pytest.fixture(scope="session")
def redis_server(redis_binary: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """One redis-server for the session (AOF on), on a free 127.0.0.1 port."""
    server = RedisServer(redis_binary, tmp_path_factory.mktemp("redis-shared"))
    try:
        server.start()
    except RuntimeError as exc:
        pytest.skip(f"redis-server could not be started: {exc}")
    yield server
    server.stop()


@pytest.fixture
def own_redis(redis_binary: str, tmp_path: Path) -> Iterator[RedisServer]:
    """A redis-server of this test's own, for tests that stop and restart it."""
    server = RedisServer(redis_binary, tmp_path / "redis")
    try:
        server.start()
    except RuntimeError as exc:
        pytest.skip(f"redis-server could not be started: {exc}")
    yield server
    server.stop()
