"""``router_from_config`` honours the file's ``[ledger]`` table without an explicit ``ledger=`` (issue 26).

Before, only ``load_router`` passed it: a Router built from ``load_config(path)`` kept its budget in
memory while ``routeproof cost`` read the configured SQLite file or Redis namespace.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from routeproof.config import load_config
from routeproof.errors import ConfigError
from routeproof.factory import router_from_config
from routeproof.ledger_store import SqliteLedgerStore

AGENT = """
pricing = "pricing.toml"
[driver.providers.anthropic]
model = "claude-sonnet-4-20250514"
{ledger}
"""

PRICING = """
[anthropic."claude-sonnet-4-20250514"]
input_per_mtok = 3
output_per_mtok = 15
"""


def _agent(tmp_path: Path, ledger: str) -> Path:
    (tmp_path / "pricing.toml").write_text(PRICING, encoding="utf-8")
    agent = tmp_path / "agent.toml"
    agent.write_text(AGENT.format(ledger=ledger), encoding="utf-8")
    return agent


@pytest.mark.asyncio
async def test_the_ledger_table_is_honoured_without_an_explicit_argument(tmp_path: Path) -> None:
    """A ``[ledger]`` sqlite table in agent.toml puts the Router's ledger in that file."""
    agent = _agent(tmp_path, '[ledger]\nbackend = "sqlite"\npath = "books.sqlite3"\n')
    config = load_config(agent, environ={"ANTHROPIC_API_KEY": "k"})
    assert config.ledger is not None
    assert config.ledger.path == (tmp_path / "books.sqlite3").resolve()
    router = router_from_config(config)
    try:
        assert isinstance(router.ledger_store, SqliteLedgerStore), router.ledger_store
    finally:
        await router.aclose()


@pytest.mark.asyncio
async def test_no_ledger_table_keeps_the_ledger_in_memory(tmp_path: Path) -> None:
    """Without ``[ledger]`` nothing changes: the in-memory ledger."""
    config = load_config(_agent(tmp_path, ""), environ={"ANTHROPIC_API_KEY": "k"})
    assert config.ledger is None
    router = router_from_config(config)
    try:
        assert not isinstance(router.ledger_store, SqliteLedgerStore)
    finally:
        await router.aclose()


def test_a_bad_ledger_table_fails_at_load_naming_the_key(tmp_path: Path) -> None:
    """A redis ledger whose url_env is unset fails when the file is loaded, naming the variable."""
    agent = _agent(tmp_path, '[ledger]\nbackend = "redis"\nurl_env = "NO_SUCH_LEDGER_URL"\n')
    with pytest.raises(ConfigError, match="NO_SUCH_LEDGER_URL"):
        load_config(agent, environ={"ANTHROPIC_API_KEY": "k"})
