"""The ``[health]`` and ``[ledger]`` tables share one reader (``config.read.read_store_table``): a
bad value fails at load time, naming the table, the key and the value, and never a URL's password."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from routeproof.config.read import shown_url
from routeproof.errors import ConfigError
from routeproof.health_store import parse_health_table
from routeproof.ledger_store.table import parse_ledger_table


def _health(table: dict[str, object], environ: dict[str, str]) -> object:
    return parse_health_table(table, environ=environ)


def _ledger(table: dict[str, object], environ: dict[str, str]) -> object:
    return parse_ledger_table(table, base_dir=Path("/"), environ=environ)


STORES: list[tuple[str, Callable[[dict[str, object], dict[str, str]], object]]] = [
    ("health", _health),
    ("ledger", _ledger),
]


def _refusal(parse: Callable[[dict[str, object], dict[str, str]], object], table: dict[str, object]) -> str:
    with pytest.raises(ConfigError) as refused:
        parse(table, {"STORE_URL": "http://admin:hunter2@cache:6379/0?password=sesame"})
    return str(refused.value)


@pytest.mark.parametrize(("where", "parse"), STORES, ids=[where for where, _ in STORES])
def test_a_bad_store_kind_names_the_value(
    where: str, parse: Callable[[dict[str, object], dict[str, str]], object]
) -> None:
    """An unknown backend is refused at load, naming the table's key and the kind that was asked for."""
    assert _refusal(parse, {"backend": "etcd"}).startswith(f"{where}.backend = 'etcd': must be one of ['memory', ")


@pytest.mark.parametrize(("where", "parse"), STORES, ids=[where for where, _ in STORES])
def test_a_bad_url_names_the_value_but_not_its_password(
    where: str, parse: Callable[[dict[str, object], dict[str, str]], object]
) -> None:
    """A URL of the wrong scheme is refused naming the URL, with its user:password and query masked."""
    message = _refusal(parse, {"backend": "redis", "url": "http://admin:hunter2@cache:6379/0?password=sesame"})
    assert message == f"{where}.url = 'http://***@cache:6379/0?***': must start with redis://, rediss:// or unix://"


@pytest.mark.parametrize(("where", "parse"), STORES, ids=[where for where, _ in STORES])
def test_a_bad_url_from_the_environment_names_the_variable(
    where: str, parse: Callable[[dict[str, object], dict[str, str]], object]
) -> None:
    """A url_env whose variable holds a bad URL is refused naming the variable and the masked URL."""
    message = _refusal(parse, {"backend": "redis", "url_env": "STORE_URL"})
    assert message == (
        f"{where}.url_env = 'STORE_URL': its URL 'http://***@cache:6379/0?***' must start with "
        "redis://, rediss:// or unix://"
    )
    assert "hunter2" not in message
    assert "sesame" not in message


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("redis://cache:6379/0", "redis://cache:6379/0"),
        ("http://x", "http://x"),
        ("redis://:pw@cache/0", "redis://***@cache/0"),
        ("user:p@ss@cache", "***@cache"),
        ("cache?password=pw", "cache?***"),
        (5, "<hidden>"),
    ],
)
def test_a_url_is_shown_without_its_secrets(value: object, shown: str) -> None:
    """shown_url keeps the scheme, host and path, masks user:password and the query, hides non-strings."""
    assert shown_url(value) == shown


@pytest.mark.parametrize(
    ("table", "named"),
    [
        ('[health]\nbackend = "etcd"\n', "health.backend = 'etcd'"),
        ('[ledger]\nbackend = "postgres"\n', "ledger.backend = 'postgres'"),
        ('[health]\nbackend = "redis"\nurl = "http://cache:6379"\n', "health.url = 'http://cache:6379'"),
        ('[ledger]\nbackend = "redis"\nurl = "http://cache:6379"\n', "ledger.url = 'http://cache:6379'"),
    ],
)
def test_a_bad_store_table_fails_when_agent_toml_loads(tmp_path: Path, table: str, named: str) -> None:
    """load_router refuses a bad [health]/[ledger] table before any Router exists, naming the value."""
    from routeproof.factory import load_router

    config = tmp_path / "agent.toml"
    config.write_text(
        f'[driver]\ntype = "routing"\n[driver.providers.local]\nkind = "local"\nmodel = "m"\n{table}', encoding="utf-8"
    )
    with pytest.raises(ConfigError) as refused:
        load_router(config, environ={})
    assert named in str(refused.value)
