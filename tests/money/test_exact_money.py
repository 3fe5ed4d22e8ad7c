"""The ledger equals the provider's bill on every path, on the memory and SQLite stores (one process):
real routers, real loopback sockets, the mocks' journaled usage as the truth (tests/money/exact_money.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.money.exact_money import PATHS, Path_, run_path

pytestmark = pytest.mark.asyncio


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
@pytest.mark.parametrize("path", PATHS, ids=[p.value.replace(" ", "_") for p in PATHS])
async def test_ledger_equals_the_reported_usage_times_price(path: Path_, backend: str, tmp_path: Path) -> None:
    """Per scope (session, provider day, month) the ledger's spent equals the mocks' bills, in pico-USD."""
    row = await run_path(path, backend, tmp_path, None)
    assert row.exact, row


@pytest.mark.parametrize("path", PATHS, ids=[p.value.replace(" ", "_") for p in PATHS])
async def test_two_routers_on_one_sqlite_file_book_both_bills(path: Path_, tmp_path: Path) -> None:
    """Two routers (two store connections) on one SQLite ledger: each scope holds both calls' bills."""
    row = await run_path(path, "sqlite", tmp_path, None, replicas=2)
    assert row.exact, row
