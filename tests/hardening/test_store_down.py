"""A ledger store that is down, locked or full fails the call closed with 503 and ``Retry-After``,
in the client's API shape, before any provider is asked (it was 502 ``upstream_error``)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import httpx
import pytest

from tests.gateway.conftest import FAST_BACKOFF, GATEWAY_KEY, StackFactory

pytestmark = pytest.mark.asyncio
PRICING = Path(__file__).resolve().parents[2] / "config" / "pricing.toml"
BODY = {"model": "chat", "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]}
AUTH = {"x-api-key": GATEWAY_KEY}


async def test_redis_down_is_503_with_retry_after(make_stack: StackFactory) -> None:
    """Nothing listens on the Redis port: both APIs answer 503 store_unavailable, Retry-After: 1."""
    ledger = '\n[ledger]\nbackend = "redis"\nurl = "redis://:s3cret-pw@127.0.0.1:9/0"\n'
    stack_cm = make_stack(extra=FAST_BACKOFF + ledger, pricing=str(PRICING), budget_usd="5")
    async with stack_cm as stack, httpx.AsyncClient(base_url=stack.url, timeout=10) as client:
        openai = await client.post("/v1/chat/completions", json=BODY, headers=AUTH)
        anthropic = await client.post("/v1/messages", json=BODY, headers=AUTH)
        assert stack.provider_requests() == 0
    assert openai.status_code == anthropic.status_code == 503
    assert openai.headers["retry-after"] == anthropic.headers["retry-after"] == "1"
    assert openai.json()["error"]["code"] == "store_unavailable"
    assert anthropic.json()["error"]["type"] == "overloaded_error"
    assert "s3cret-pw" not in openai.text + anthropic.text


async def test_sqlite_locked_is_503_with_retry_after(make_stack: StackFactory, tmp_path: Path) -> None:
    """Another process holds the SQLite write lock past busy_timeout: 503 store_unavailable, Retry-After."""
    path = tmp_path / "ledger.sqlite3"
    ledger = f'\n[ledger]\nbackend = "sqlite"\npath = "{path}"\n'
    stack_cm = make_stack(extra=FAST_BACKOFF + ledger, pricing=str(PRICING), budget_usd="5")
    async with stack_cm as stack, httpx.AsyncClient(base_url=stack.url, timeout=30) as client:
        assert (await client.post("/v1/chat/completions", json=BODY, headers=AUTH)).status_code == 200
        blocker = sqlite3.connect(path, isolation_level=None)
        try:
            blocker.execute("BEGIN IMMEDIATE")
            locked = await client.post("/v1/chat/completions", json=BODY, headers=AUTH)
        finally:
            blocker.execute("ROLLBACK")
            blocker.close()
        again = await client.post("/v1/chat/completions", json=BODY, headers=AUTH)
    assert locked.status_code == 503, locked.text
    assert locked.headers["retry-after"] == "1"
    assert "locked" in locked.json()["error"]["message"]
    assert again.status_code == 200
