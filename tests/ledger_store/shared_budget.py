"""The shared-budget experiment the tests and FALSIFY-MPA-003's per-backend rows both run.

PROCESSES gateway processes (``tests.ledger_store.worker spend``), each with IN_FLIGHT callers,
spend one $0.01 session budget in one store until every caller is refused, while this process
samples the store's totals in a loop with a 1 ms pause; then one more call is made here.
With ``processes=0`` the callers run in this process on the memory store instead (the only
way to share a memory ledger).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from routeproof.core.ledger import Account
from routeproof.errors import BudgetExhausted
from routeproof.ledger_store import LedgerStore, LedgerTotals, MemoryLedgerStore
from tests.ledger_store.worker import ANSWER, LIMITS, SESSION, call, open_store, router_on, spend

__all__ = ["Measured", "run_shared_budget", "session_account"]

ROOT = Path(__file__).resolve().parents[2]
RUN_TIMEOUT_S = 180


@dataclass(frozen=True, slots=True, kw_only=True)
class Measured:
    """What one run of the experiment saw."""

    granted: int
    refused: int
    samples: int
    peak_spent_pico_usd: int
    peak_held_pico_usd: int  # spent + reserved
    final: LedgerTotals
    next_call: BudgetExhausted | None
    elapsed_s: float


def session_account(totals: LedgerTotals) -> Account:
    """The shared session's counters."""
    return dict(totals.sessions).get(SESSION, Account())


def _now_ms() -> int:
    return int(time.time() * 1000)


def _start_worker(spec: str, in_flight: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.ledger_store.worker", "spend", spec, str(in_flight)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


async def run_shared_budget(spec: str | None, *, processes: int, in_flight: int) -> Measured:
    """Run the experiment on the store ``spec`` names (None: the memory store, in this process)."""
    store: LedgerStore = MemoryLedgerStore(LIMITS) if spec is None else open_store(spec)
    await store.totals(now_ms=_now_ms())  # creates the schema before the processes race for it
    started = time.monotonic()
    workers: list[subprocess.Popen[str]] = []
    local: asyncio.Task[dict[str, int]] | None = None
    if spec is None:
        local = asyncio.create_task(spend(None, in_flight, store=store))
    else:
        workers = [_start_worker(spec, in_flight) for _ in range(processes)]
    try:
        samples = peak_spent = peak_held = 0

        def running() -> bool:
            return (local is not None and not local.done()) or any(w.poll() is None for w in workers)

        while running():
            if time.monotonic() - started > RUN_TIMEOUT_S:
                raise TimeoutError(f"the callers did not finish within {RUN_TIMEOUT_S} s")
            account = session_account(await store.totals(now_ms=_now_ms()))
            peak_spent = max(peak_spent, account.spent_pico_usd)
            peak_held = max(peak_held, account.spent_pico_usd + account.reserved_pico_usd)
            samples += 1
            await asyncio.sleep(0.001)
        elapsed_s = time.monotonic() - started
        reports = [] if local is None else [local.result()]
        for worker in workers:
            out, err = worker.communicate(timeout=30)
            if worker.returncode != 0:
                raise RuntimeError(f"a worker failed (exit {worker.returncode}): {err[-2000:]}")
            reports.append(json.loads(out.strip().splitlines()[-1]))
        final = await store.totals(now_ms=_now_ms())
        next_call = None
        router = router_on(store, httpx.MockTransport(lambda _: httpx.Response(200, json=ANSWER)))
        async with router:
            try:
                await call(router)
            except BudgetExhausted as exc:
                next_call = exc
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
                worker.communicate(timeout=30)
    return Measured(
        granted=sum(r["granted"] for r in reports),
        refused=sum(r["refused"] for r in reports),
        samples=samples,
        peak_spent_pico_usd=peak_spent,
        peak_held_pico_usd=peak_held,
        final=final,
        next_call=next_call,
        elapsed_s=elapsed_s,
    )
