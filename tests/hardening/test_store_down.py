"""A ledger store that is down, locked or full fails the call closed with 503 and ``Retry-After``,
in the client's API shape, before any provider is asked (it was 502 ``upstream_error``)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import httpx
import pytest

from routeproof.core.ledger import BudgetLimits, Reservation
from routeproof.core.types import ProviderKind
from routeproof.gateway.failures import failure_for
from routeproof.ledger_store import LedgerUnavailable, SqliteLedgerStore
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


@pytest.mark.asyncio
async def test_sqlite_full_disk_is_store_unavailable_503(tmp_path: Path) -> None:
    """SQLite's "database or disk is full" (a page cap standing in for a full disk) fails the reservation
    closed with LedgerUnavailable, which the gateway answers 503 store_unavailable with Retry-After."""
    store = SqliteLedgerStore(tmp_path / "full.sqlite3", BudgetLimits())
    try:
        first = await store.try_reserve(session_id="s0", provider=ProviderKind.OPENAI, amount_pico_usd=1, now_ms=1)
        assert isinstance(first, Reservation)
        conn = store._connection()
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count = {pages}")
        with pytest.raises(LedgerUnavailable, match="full") as caught:  # noqa: PT012 - fills until it is full
            for n in range(5_000):  # new sessions need new rows, then new pages: there are none
                await store.try_reserve(
                    session_id=f"session-{n:05d}-" + "x" * 200, provider=ProviderKind.OPENAI, amount_pico_usd=1,
                    now_ms=1,
                )  # fmt: skip
    finally:
        await store.aclose()
    failure = failure_for(caught.value)
    assert (failure.status, failure.code, failure.retry_after_s) == (503, "store_unavailable", 1)
