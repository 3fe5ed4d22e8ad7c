"""The edges a user sees: ``routeproof cost`` shows the configured limits, a refusal on reservations
names spent, reserved and limit (library and gateway), and seed 003's default pricing location."""

from __future__ import annotations

import asyncio
import io
import time
from pathlib import Path

import pytest

from routeproof.config import DEFAULT_PRICING_PATH, load_config
from routeproof.core.ledger import BudgetLimits, Reservation, parse_usd
from routeproof.core.types import ProviderKind
from routeproof.errors import BudgetExhausted
from routeproof.ledger_store.config import load_ledger_config
from routeproof.ledger_store.memory import MemoryLedgerStore
from routeproof.ledger_store.report import run_cost
from routeproof.ledger_store.sqlite import SqliteLedgerStore

AGENT = """
[ledger]
backend = "sqlite"
path = "ledger.sqlite3"
[driver.budget]
session_usd = 2.50
monthly_usd = 40.00
[driver.providers.anthropic]
base_url = "http://127.0.0.1:9"
model = "claude-sonnet-4-20250514"
daily_budget_usd = 5.00
"""


@pytest.mark.asyncio
async def test_cost_shows_the_configured_session_and_monthly_limits(tmp_path: Path) -> None:
    """Each scope's row shows spent, reserved (a call in flight) and the configured limit, not ``none``."""
    path = tmp_path / "agent.toml"
    path.write_text(AGENT)
    config, limits = load_ledger_config(path, environ={})
    assert (limits.session_limit_pico_usd, limits.monthly_limit_pico_usd) == (parse_usd("2.50"), parse_usd("40"))
    db = config.path
    assert db is not None

    store = SqliteLedgerStore(db, limits)
    now_ms = int(time.time() * 1000)
    held = await store.try_reserve(
        session_id="alice", provider=ProviderKind.ANTHROPIC, amount_pico_usd=parse_usd("0.25"), now_ms=now_ms
    )
    assert isinstance(held, Reservation)
    await store.commit(held, parse_usd("0.10"), now_ms=now_ms)
    in_flight = await store.try_reserve(
        session_id="alice", provider=ProviderKind.ANTHROPIC, amount_pico_usd=parse_usd("0.30"), now_ms=now_ms
    )
    assert isinstance(in_flight, Reservation)  # left open: a call in flight
    await store.aclose()
    out, err = io.StringIO(), io.StringIO()
    status = await asyncio.to_thread(run_cost, path, out=out, err=err)  # the command runs its own loop
    assert status == 0, err.getvalue()
    shown = out.getvalue()
    rows = {line.split("│")[1].strip(): line for line in shown.splitlines() if line.count("│") >= 5}
    for scope, limit in (("monthly", "$40.00"), ("session", "$2.50"), ("provider_daily", "$5.00")):
        spent, reserved, shown_limit = (cell.strip() for cell in rows[scope].split("│")[3:6])
        assert (spent, reserved, shown_limit) == ("$0.10", "$0.30", limit), rows[scope]
    assert "none" not in shown


def test_the_session_limit_override_from_the_environment_reaches_cost(tmp_path: Path) -> None:
    """ROUTEPROOF_SESSION_BUDGET_USD overrides session_usd for ``routeproof cost`` as for the router."""
    path = tmp_path / "agent.toml"
    path.write_text(AGENT)
    _, limits = load_ledger_config(path, environ={"ROUTEPROOF_SESSION_BUDGET_USD": "1.25"})
    assert limits.session_limit_pico_usd == parse_usd("1.25")


@pytest.mark.asyncio
async def test_a_refusal_on_reservations_names_spent_reserved_and_limit() -> None:
    """Nothing spent, $0.009 reserved in flight, a $0.002 call on a $0.01 session: the error says all three."""
    store = MemoryLedgerStore(BudgetLimits(session_limit_pico_usd=parse_usd("0.01")))
    first = await store.try_reserve(
        session_id="s", provider=ProviderKind.OPENAI, amount_pico_usd=parse_usd("0.009"), now_ms=0
    )
    assert isinstance(first, Reservation)
    refused = await store.try_reserve(
        session_id="s", provider=ProviderKind.OPENAI, amount_pico_usd=parse_usd("0.002"), now_ms=0
    )
    assert not isinstance(refused, Reservation)
    error = refused.to_error()
    assert isinstance(error, BudgetExhausted)
    text = str(error)
    for part in ("scope='session'", "limit='$0.01'", "requested='$0.002'", "$0.00 spent", "$0.009 reserved"):
        assert part in text, text


def test_the_seeds_default_pricing_location_is_read_when_none_is_named(tmp_path: Path) -> None:
    """No ``pricing =`` in agent.toml: $HOME/.config/batuta/pricing.toml is used when it exists."""
    home = tmp_path / "home"
    (home / DEFAULT_PRICING_PATH).parent.mkdir(parents=True)
    (home / DEFAULT_PRICING_PATH).write_text('[anthropic."m"]\ninput_per_mtok = 1\noutput_per_mtok = 2\n')
    path = tmp_path / "agent.toml"
    path.write_text('[driver.providers.anthropic]\nbase_url = "http://127.0.0.1:9"\nmodel = "m"\n')
    environ = {"ANTHROPIC_API_KEY": "k", "HOME": str(home)}
    assert load_config(path, environ=environ).pricing_path == (home / DEFAULT_PRICING_PATH).resolve()
    assert load_config(path, environ={"ANTHROPIC_API_KEY": "k", "HOME": str(tmp_path / "empty")}).pricing_path is None
