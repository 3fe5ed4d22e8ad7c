"""The ``[health]`` table: validated at load (the offending value named, never a URL's password), and
wired through the factory into the Router."""

from __future__ import annotations

from pathlib import Path

import pytest

from routeproof.core.health import HealthConfig
from routeproof.errors import ConfigError
from routeproof.health_store import HealthStoreConfig, MemoryHealthStore, open_health_store, parse_health_table


def test_no_table_is_the_memory_store() -> None:
    """Without a [health] table health stays in the process (today's behaviour)."""
    assert parse_health_table(None, environ={}) == HealthStoreConfig()
    assert isinstance(open_health_store(HealthStoreConfig(), HealthConfig()), MemoryHealthStore)


@pytest.mark.parametrize(
    ("table", "named"),
    [
        ({"backend": "etcd"}, "health.backend = 'etcd'"),
        ({"backend": "redis"}, "health.url = None"),
        ({"backend": "redis", "url_env": "NOT_SET_ANYWHERE"}, "health.url_env = 'NOT_SET_ANYWHERE'"),
        ({"backend": "redis", "url": "http://x"}, "health.url = 'http://x'"),
        ({"backend": "memory", "namespace": "a{b}"}, "health.namespace = 'a{b}'"),
        ({"backend": "memory", "colour": "red"}, "health.colour = 'red'"),
        ({"backend": "memory", "url": 5}, "health.url = '<hidden>'"),
    ],
)
def test_a_bad_table_is_refused_naming_the_value(table: dict[str, object], named: str) -> None:
    """Each bad [health] value is refused at load, and the message names it (a URL password never)."""
    with pytest.raises(ConfigError) as refused:
        parse_health_table(table, environ={})
    assert named in str(refused.value)


def test_the_url_may_come_from_the_environment() -> None:
    """url_env reads the Redis URL (with its password) from a variable; the password is never printed."""
    config = parse_health_table(
        {"backend": "redis", "url_env": "HEALTH_URL", "namespace": "prod"},
        environ={"HEALTH_URL": "redis://:hunter2@127.0.0.1:6379/0"},
    )
    assert config == HealthStoreConfig(backend="redis", url="redis://:hunter2@127.0.0.1:6379/0", namespace="prod")
    store = open_health_store(config, HealthConfig())
    assert "hunter2" not in store.description


def test_agent_toml_health_table_reaches_the_router(tmp_path: Path) -> None:
    """load_router builds the Router on the store [health] names, with [driver.failover]'s threshold."""
    from routeproof.factory import load_router

    config = tmp_path / "agent.toml"
    config.write_text(
        '[driver]\ntype = "routing"\n[driver.providers.local]\nkind = "local"\nmodel = "m"\n'
        "[driver.failover]\nfailure_threshold = 3\n"
        '[health]\nbackend = "redis"\nurl = "redis://127.0.0.1:1/0"\nnamespace = "n1"\n',
        encoding="utf-8",
    )
    router = load_router(config, environ={})
    assert router.health_store.description == "redis://127.0.0.1:1/0"
    assert router.health.config.failure_threshold == 3
    bad = tmp_path / "bad.toml"
    bad.write_text(config.read_text(encoding="utf-8").replace('"redis"', '"zookeeper"'), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"health\.backend = 'zookeeper'"):
        load_router(bad, environ={})


def test_routeproof_serve_builds_its_router_with_the_health_table(tmp_path: Path) -> None:
    """The gateway (Backend.load, what `routeproof serve` runs) uses the [health] store agent.toml names."""
    from routeproof.gateway.backend import Backend

    example = Path(__file__).resolve().parents[2] / "config" / "gateway.example.toml"
    config = tmp_path / "agent.toml"
    config.write_text(
        example.read_text(encoding="utf-8")
        + '\n[health]\nbackend = "redis"\nurl = "redis://127.0.0.1:1/0"\nnamespace = "gw"\n',
        encoding="utf-8",
    )
    environ = {
        "ANTHROPIC_API_KEY": "sk-ant-test-not-a-secret",
        "OPENAI_API_KEY": "sk-test-not-a-secret",
        "ROUTEPROOF_KEY_TEAM_A": "gw-key-a-not-a-secret",
        "ROUTEPROOF_KEY_LAB": "gw-key-lab-not-a-secret",
    }
    backend = Backend.load(config, environ=environ)
    assert backend.router.health_store.description == "redis://127.0.0.1:1/0"
