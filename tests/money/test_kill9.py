"""Two real processes on one SQLite ledger (and one Redis ledger), one killed with SIGKILL holding a
reservation: it stays open until its lease runs out, is then booked at its worst case, and the books
end exact (tests/money/kill9.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.money.kill9 import run_kill9
from tools.redis_server import RedisServer, redis_server_binary

pytestmark = pytest.mark.asyncio


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    binary = redis_server_binary()
    if binary is None:
        pytest.skip("redis-server is not installed (python tools/redis_server.py --install)")
    with RedisServer(binary, tmp_path / "redis") as server:
        yield server.url


async def test_sqlite_two_processes_one_killed_mid_call(tmp_path: Path) -> None:
    """SQLite: the killed process's reservation is open, then booked at its worst case; every scope exact."""
    result = await run_kill9("sqlite", tmp_path, None)
    assert result.open_after_kill >= 1, result  # the victim's (and maybe a survivor's call in flight)
    assert result.open_at_end == 0, result
    assert result.differences == dict.fromkeys(result.differences, 0), result


async def test_redis_two_processes_one_killed_mid_call(tmp_path: Path, redis_url: str) -> None:
    """Redis: the same, over a real redis-server."""
    result = await run_kill9("redis", tmp_path / "run", redis_url)
    assert result.open_after_kill >= 1, result  # the victim's (and maybe a survivor's call in flight)
    assert result.open_at_end == 0, result
    assert result.differences == dict.fromkeys(result.differences, 0), result
