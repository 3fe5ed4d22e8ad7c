"""The ``[ledger]`` table, the Router's one port to the store, and ``routeproof cost``."""

from __future__ import annotations

import asyncio
import io
import sys
import time
from pathlib import Path

import pytest

from routeproof import BudgetOptions
from routeproof.config import load_config
from routeproof.core.ledger import BudgetLimits, Reservation, format_usd, parse_usd
from routeproof.core.pricing import load_pricing
from routeproof.core.types import ProviderKind
from routeproof.errors import ConfigError
from routeproof.factory import load_router
from routeproof.ledger_store import MemoryLedgerStore, SqliteLedgerStore, load_ledger_config, parse_ledger_table
from routeproof.ledger_store.report import run_cost
from routeproof.providers.local import LocalProvider
from routeproof.router import Router
from tests.ledger_store.conftest import new_namespace
from tools.redis_server import RedisServer

ROOT = Path(__file__).resolve().parents[2]
PRICING_PATH = ROOT / "config" / "pricing.toml"


def _agent_toml(tmp_path: Path, ledger: str) -> Path:
    path = tmp_path / "agent.toml"
    path.write_text(
        f'pricing = "{PRICING_PATH}"\n\n'
        '[driver]\ntype = "routing"\n\n'
        '[driver.providers.realizar]\nmodel = "llama-3.2-3b.apr"\n\n'
        '[driver.providers.anthropic]\nmodel = "claude-sonnet-4-20250514"\ndaily_budget_usd = 5.00\n\n'
        f"[ledger]\n{ledger}\n",
        encoding="utf-8",
    )
    return path


def test_ledger_table_is_accepted_by_the_main_config(tmp_path: Path) -> None:
    """agent.toml may carry a [ledger] table: the routing config still loads."""
    path = _agent_toml(tmp_path, 'backend = "sqlite"\npath = "ledger.sqlite3"')
    config = load_config(path, environ={"ANTHROPIC_API_KEY": "sk-test"})
    assert [p.kind for p in config.providers] == [ProviderKind.LOCAL, ProviderKind.ANTHROPIC]


@pytest.mark.parametrize(
    ("table", "needle"),
    [
        ({"backend": "postgres"}, "ledger.backend = 'postgres'"),
        ({"backend": "sqlite"}, "ledger.path"),
        ({"backend": "redis"}, "ledger.url"),
        ({"backend": "redis", "url": "http://x"}, "must start with redis://"),
        ({"backend": "redis", "url_env": "NOPE"}, "'NOPE' is not set"),
        ({"lease_s": 0}, "ledger.lease_s = 0"),
        ({"lease_s": True}, "ledger.lease_s = True"),
        ({"bogus": 1}, "ledger.bogus"),
        ({"namespace": "a{b}"}, "braces"),
    ],
)
def test_bad_ledger_tables_are_refused_naming_the_key(table: dict[str, object], needle: str) -> None:
    """Each bad [ledger] value is a ConfigError naming the key and the offending value."""
    with pytest.raises(ConfigError, match=r".*") as caught:
        parse_ledger_table(table, base_dir=Path("/"), environ={})
    assert needle in str(caught.value)


def test_a_redis_password_never_shows_in_errors() -> None:
    """A Redis URL with a password is hidden in a config error."""
    with pytest.raises(ConfigError) as caught:
        parse_ledger_table({"backend": "redis", "url": "http://user:SECRET@x"}, base_dir=Path("/"), environ={})
    assert "SECRET" not in str(caught.value)


def test_ledger_table_values_are_parsed() -> None:
    """Paths resolve against the config's directory, the URL may come from the environment, lease_s is ms."""
    sqlite = parse_ledger_table(
        {"backend": "sqlite", "path": "l.db", "lease_s": 1.5}, base_dir=Path("/etc"), environ={}
    )
    assert (sqlite.path, sqlite.lease_ms) == (Path("/etc/l.db"), 1500)
    redis = parse_ledger_table(
        {"backend": "redis", "url_env": "LEDGER_URL"}, base_dir=Path("/"), environ={"LEDGER_URL": "redis://h:1/0"}
    )
    assert redis.url == "redis://h:1/0"
    assert parse_ledger_table(None, base_dir=Path("/"), environ={}).backend == "memory"


@pytest.mark.asyncio
async def test_router_takes_the_store_through_one_port(tmp_path: Path) -> None:
    """load_router builds a SQLite store from [ledger], with the daily limits; memory stays the default."""
    path = _agent_toml(tmp_path, 'backend = "sqlite"\npath = "ledger.sqlite3"\nlease_s = 60')
    router = load_router(path, environ={"ANTHROPIC_API_KEY": "sk-test"})
    store = router.ledger_store
    assert isinstance(store, SqliteLedgerStore)
    assert store.limits.provider_limit(ProviderKind.ANTHROPIC) == parse_usd("5.00")
    assert router.ledger is None  # the pure snapshot exists only for the memory store
    await router.aclose()
    pricing = load_pricing(PRICING_PATH.read_text(encoding="utf-8"))
    default = Router([LocalProvider()], budgets=BudgetOptions(pricing=pricing, limits=BudgetLimits()))
    assert isinstance(default.ledger_store, MemoryLedgerStore)
    assert default.ledger is not None
    await default.aclose()


def test_router_refuses_a_budget_given_twice() -> None:
    """Limits go to the store or to the Router, not both (two sources of truth)."""
    pricing = load_pricing(PRICING_PATH.read_text(encoding="utf-8"))
    with pytest.raises(ConfigError, match="ledger store"):
        Router(
            [LocalProvider()],
            budgets=BudgetOptions(
                pricing=pricing, limits=BudgetLimits(), ledger_store=MemoryLedgerStore(BudgetLimits())
            ),
        )


@pytest.mark.asyncio
async def test_cost_cli_shows_the_same_totals_after_a_restart(tmp_path: Path) -> None:
    """Spend booked by this process is what ``routeproof cost`` prints from a new process."""
    path = _agent_toml(tmp_path, 'backend = "sqlite"\npath = "ledger.sqlite3"')
    config, limits = load_ledger_config(path)
    assert config.path is not None
    store = SqliteLedgerStore(config.path, limits)
    now_ms = int(time.time() * 1000)
    held = await store.try_reserve(
        session_id="alice", provider=ProviderKind.ANTHROPIC, amount_pico_usd=parse_usd("0.25"), now_ms=now_ms
    )
    assert isinstance(held, Reservation)
    await store.commit(held, parse_usd("0.1234"), now_ms=now_ms)
    await store.aclose()
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "routeproof.cli",
        "cost",
        "--config",
        str(path),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={"PATH": "/usr/bin:/bin", "COLUMNS": "200"},
    )
    stdout, stderr = await asyncio.wait_for(process.communicate(), timeout=60)
    shown = stdout.decode()
    assert process.returncode == 0, stderr.decode()
    assert "alice" in shown
    assert shown.count(format_usd(parse_usd("0.1234"))) == 3  # monthly, anthropic daily, session
    assert format_usd(parse_usd("5")) in shown  # the anthropic daily limit


def test_cost_cli_prints_plain_text_without_rich(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without rich installed the same rows come out as aligned plain text."""
    path = _agent_toml(tmp_path, 'backend = "sqlite"\npath = "ledger.sqlite3"')
    for name in [n for n in sys.modules if n == "rich" or n.startswith("rich.")] or ["rich"]:
        monkeypatch.setitem(sys.modules, name, None)  # submodules too: another test may have imported them
    out, err = io.StringIO(), io.StringIO()
    assert run_cost(path, out=out, err=err) == 0
    lines = out.getvalue().splitlines()
    assert lines[1].split() == ["scope", "key", "spent", "reserved", "limit"]
    assert lines[3].split() == ["provider_daily", "anthropic", "$0.00", "$0.00", "$5.00"]


def test_cost_cli_reports_a_bad_config_and_an_unreachable_redis(tmp_path: Path) -> None:
    """A bad [ledger] table exits 2; an unreachable Redis exits 1 saying so (no password shown)."""
    bad = _agent_toml(tmp_path, 'backend = "nope"')
    err = io.StringIO()
    assert run_cost(bad, out=io.StringIO(), err=err) == 2
    assert "ledger.backend = 'nope'" in err.getvalue()
    port = RedisServer("redis-server", tmp_path / "unused").port  # a free port nobody listens on (never started)
    down = _agent_toml(tmp_path, f'backend = "redis"\nurl = "redis://u:SECRET@127.0.0.1:{port}/0"')
    err = io.StringIO()
    assert run_cost(down, out=io.StringIO(), err=err) == 1
    assert "unreachable" in err.getvalue()
    assert "SECRET" not in err.getvalue()


@pytest.mark.redis
def test_cost_cli_reads_a_redis_ledger(tmp_path: Path, redis_server: RedisServer) -> None:
    """``routeproof cost`` on a [ledger] redis table shows that namespace's (empty) totals and the limits."""
    path = _agent_toml(tmp_path, f'backend = "redis"\nurl = "{redis_server.url}"\nnamespace = "{new_namespace()}"')
    out = io.StringIO()
    assert run_cost(path, out=out, err=io.StringIO()) == 0
    assert "anthropic" in out.getvalue()
    assert redis_server.url.removesuffix("/0") in out.getvalue()
