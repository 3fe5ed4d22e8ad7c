"""``routeproof cost``: the spend and limits per scope, read from the configured ledger store."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import TextIO

from routeproof.clock import wall_ms
from routeproof.core.ledger import Account, format_usd
from routeproof.errors import ConfigError
from routeproof.ledger_store.config import load_ledger_config, open_store
from routeproof.ledger_store.protocol import LedgerTotals, LedgerUnavailable

__all__ = ["cost_rows", "run_cost"]

_HEADER = ("scope", "key", "spent", "reserved", "limit")


def _limit(value: int | None) -> str:
    return "none" if value is None else format_usd(value)


def cost_rows(totals: LedgerTotals) -> list[tuple[str, str, str, str, str]]:
    """One row per scope and key: spent, reserved (calls in flight) and the limit, in USD."""
    limits = totals.limits

    def row(scope: str, key: str, account: Account, limit: int | None) -> tuple[str, str, str, str, str]:
        return (scope, key, format_usd(account.spent_pico_usd), format_usd(account.reserved_pico_usd), _limit(limit))

    year, month = divmod(totals.month_index, 12)
    rows = [row("monthly", f"{year:04d}-{month + 1:02d}", totals.monthly, limits.monthly_limit_pico_usd)]
    daily = dict(totals.provider_daily)
    for provider in sorted({p for p, _ in limits.provider_daily_pico_usd} | set(daily), key=lambda p: p.value):
        rows.append(
            row("provider_daily", provider.value, daily.get(provider, Account()), limits.provider_limit(provider))
        )
    rows.extend(row("session", session, account, limits.session_limit_pico_usd) for session, account in totals.sessions)
    return rows


def _print(rows: list[tuple[str, str, str, str, str]], title: str, out: TextIO) -> None:
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        widths = [max(len(r[i]) for r in [_HEADER, *rows]) for i in range(len(_HEADER))]
        print(title, file=out)
        for r in [_HEADER, *rows]:
            print("  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip(), file=out)
        return
    table = Table(title=title)
    for name in _HEADER:
        table.add_column(name, justify="right" if name in {"spent", "reserved", "limit"} else "left")
    for r in rows:
        table.add_row(*r)
    Console(file=out).print(table)


def run_cost(config_path: Path, *, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    """Print the totals of the ledger ``config_path``'s ``[ledger]`` table names; the exit status."""
    try:
        config, limits = load_ledger_config(config_path)
        store = open_store(config, limits)
    except (ConfigError, ValueError) as exc:
        print(f"routeproof cost: {exc}", file=err)
        return 2

    async def read() -> LedgerTotals:
        try:
            return await store.totals(now_ms=wall_ms(time.time()))
        finally:
            await store.aclose()

    try:
        totals = asyncio.run(read())
    except LedgerUnavailable as exc:
        print(f"routeproof cost: {exc}", file=err)
        return 1
    if config.backend == "memory":
        print("note: [ledger] backend is memory: nothing outlives a process, so there is nothing to show", file=err)
    title = f"ledger {store.description}: {len(totals.open_reservations)} call(s) in flight"
    if totals.overrun_pico_usd:
        title += f", {format_usd(totals.overrun_pico_usd)} billed past reservations"
    _print(cost_rows(totals), title, out)
    return 0
