"""A completed stream's connection goes back to the pool: sequential streams share one connection."""

from __future__ import annotations

import pytest

from tools.stream_connections import connections


@pytest.mark.asyncio
async def test_sequential_completed_streams_reuse_one_connection() -> None:
    """Five streams read to MessageStop, one after the other on one client (directly and through the
    Router), open one connection per server."""
    assert await connections(5) == {"anthropic": 1, "openai": 1, "router (openai)": 1}
