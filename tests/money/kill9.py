"""Two OS processes share one ledger (SQLite file or Redis namespace); one is killed with SIGKILL mid-call.

The victim's call hangs at the provider (the mock holds it), so it holds a reservation when it
dies. The survivor makes its calls before and after the kill. Then, per the crash rule
(``ledger_store/protocol.py``), the victim's reservation stays open until its lease runs out and
is then committed at its worst case; the survivor's calls book their bills. The books must end
exact: ledger - (the survivor's bills x price + the victim's worst case) = 0 pico-USD per scope,
with nothing left open. Real processes and real time, bounded by a short lease (``LEASE_S``).
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from routeproof.core.pricing import worst_case_cost_pico_usd
from routeproof.core.types import ChatRequest, Message, ProviderKind
from routeproof.ledger_store.config import load_ledger_config, open_store
from routeproof.mock import MockProviderServer, Scripted, Shape
from tests.money.exact_money import (
    AGENT,
    ANTHROPIC_MODEL,
    OPENAI_MODEL,
    PRICES,
    PRICING_TEXT,
    ROOT,
    SESSION,
    _spent_by_scope,
    invoice_pico_usd,
)

LEASE_S = 10
"""Long enough for a plain loopback call on a loaded machine, short enough to wait out in a test."""

SURVIVOR_CALLS = 2  # before the kill, and as many after it


@dataclass(frozen=True, slots=True, kw_only=True)
class Kill9Result:
    """Ledger - expected per scope (pico-USD), what was open right after the kill (the victim's
    reservation, and any of the survivor's calls in flight), and at the end."""

    differences: dict[str, int]
    open_after_kill: int
    open_at_end: int
    expected_pico_usd: int

    @property
    def exact(self) -> bool:
        return all(d == 0 for d in self.differences.values()) and self.open_after_kill >= 1 and self.open_at_end == 0


def _ledger(backend: str, tmp: Path, redis_url: str | None) -> str:
    if backend == "sqlite":
        return f'[ledger]\nbackend = "sqlite"\npath = "{tmp / "shared.sqlite3"}"\nlease_s = {LEASE_S}\n'
    assert redis_url is not None
    return f'[ledger]\nbackend = "redis"\nurl = "{redis_url}"\nnamespace = "kill9-{tmp.name}"\nlease_s = {LEASE_S}\n'


async def _spawn(agent: Path, calls: int) -> asyncio.subprocess.Process:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.money.kill9_worker", str(agent), str(calls),
        cwd=ROOT, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip


async def _finish(proc: asyncio.subprocess.Process, what: str) -> None:
    out, err = await asyncio.wait_for(proc.communicate(), timeout=120)
    if proc.returncode != 0 or b"done" not in out:
        raise AssertionError(f"{what} exited {proc.returncode}: {out.decode()[-500:]} {err.decode()[-2000:]}")


def _prepare(tmp: Path) -> None:
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "pricing.toml").write_text(PRICING_TEXT, encoding="utf-8")


async def run_kill9(backend: str, tmp: Path, redis_url: str | None) -> Kill9Result:
    """Run the scenario on ``backend`` (sqlite or redis) and compare the ledger with the bills."""
    _prepare(tmp)
    req = ChatRequest(messages=(Message.user("2+2?"),), max_tokens=64, alias="chat")
    worst = worst_case_cost_pico_usd(PRICES.price_for(ProviderKind.ANTHROPIC, ANTHROPIC_MODEL), req)
    async with (
        MockProviderServer(Shape.ANTHROPIC) as anthropic,
        MockProviderServer(Shape.OPENAI) as openai,
        MockProviderServer(Shape.ANTHROPIC) as holding,
    ):
        holding.set_default(Scripted(hang=True))  # the victim's provider: holds every call, never answers
        agents = {}
        for name, primary in (("victim", holding), ("survivor", anthropic)):
            agents[name] = tmp / f"{name}.toml"
            agents[name].write_text(
                AGENT.format(
                    pricing=tmp / "pricing.toml", anthropic=primary.base_url, openai=openai.base_url + "/v1",
                    anthropic_model=ANTHROPIC_MODEL, openai_model=OPENAI_MODEL,
                    ledger=_ledger(backend, tmp, redis_url),
                ),
                encoding="utf-8",
            )  # fmt: skip
        ledger_config, limits = load_ledger_config(agents["survivor"], environ={})
        store = open_store(ledger_config, limits)
        try:
            victim, survivor = await _spawn(agents["victim"], 1), await _spawn(agents["survivor"], SURVIVOR_CALLS)
            async with asyncio.timeout(120):
                await holding.wait_for_requests(1)  # its reservation is granted before the request is sent
            victim.send_signal(signal.SIGKILL)  # mid-call, holding its reservation
            await victim.wait()
            killed_ms = int(time.time() * 1000)
            open_after_kill = len((await store.totals(now_ms=killed_ms)).open_reservations)
            await _finish(survivor, "the survivor")
            after = await _spawn(agents["survivor"], SURVIVOR_CALLS)  # another process, after the kill
            await _finish(after, "the process started after the kill")
            # the lease runs out in real time (no process is left to settle it)
            await asyncio.sleep(max(0.0, LEASE_S + 0.5 - (time.time() * 1000 - killed_ms) / 1000))
            totals = await store.totals(now_ms=int(time.time() * 1000))
        finally:
            await store.aclose()
        bills = [(ProviderKind.ANTHROPIC, b) for b in anthropic.bills] + [
            (ProviderKind.OPENAI, b) for b in openai.bills
        ]
        assert not holding.bills, holding.bills  # the held call was never answered
    answered = sum(invoice_pico_usd(kind, bill) for kind, bill in bills if bill.complete)
    expected = answered + worst
    want = {"month": expected, f"session {SESSION}": expected, "day anthropic": expected}
    got = {k: v for k, v in _spent_by_scope(totals).items() if v}
    return Kill9Result(
        differences={s: got.get(s, 0) - want.get(s, 0) for s in sorted(set(got) | set(want))},
        open_after_kill=open_after_kill,
        open_at_end=len(totals.open_reservations),
        expected_pico_usd=expected,
    )
