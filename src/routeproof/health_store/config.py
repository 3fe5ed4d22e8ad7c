"""The ``[health]`` table of ``agent.toml``: where provider health (cooling state) lives.

.. code-block:: toml

    [health]
    backend = "redis"                  # "memory" (default: this process only) | "redis" (shared)
    url = "redis://127.0.0.1:6379/0"   # redis: the server (a password may come from url_env)
    url_env = "ROUTEPROOF_HEALTH_URL"  # redis: read the URL from this variable instead
    namespace = "default"              # redis: key prefix; replicas sharing health use the same one

The thresholds and cooldown stay in ``[driver.failover]``: every replica must load the same ones.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from routeproof.config import read_toml
from routeproof.core.health import HealthConfig
from routeproof.errors import ConfigError
from routeproof.health_store.memory import MemoryHealthStore
from routeproof.health_store.protocol import HealthStore

__all__ = ["HealthStoreConfig", "load_health_config", "open_health_store", "parse_health_table"]

_HEALTH_KEYS = frozenset({"backend", "url", "url_env", "namespace"})
_BACKENDS = ("memory", "redis")


@dataclass(frozen=True, slots=True, kw_only=True)
class HealthStoreConfig:
    """Where provider health lives. ``url`` may hold a password: it is never printed."""

    backend: str = "memory"
    url: str | None = None
    namespace: str = "default"


def _fail(key: str, value: object, why: str) -> ConfigError:
    return ConfigError(f"health.{key} = {value!r}: {why}")


def parse_health_table(raw: object, *, environ: Mapping[str, str]) -> HealthStoreConfig:
    """Validate a parsed ``[health]`` table (None: the memory store)."""
    if raw is None:
        return HealthStoreConfig()
    if not isinstance(raw, dict):
        raise ConfigError(f"health = {raw!r}: must be a table")
    unknown = sorted(set(raw) - _HEALTH_KEYS)
    if unknown:
        raise _fail(unknown[0], raw[unknown[0]], f"unknown key (known: {sorted(_HEALTH_KEYS)})")
    backend = raw.get("backend", "memory")
    if backend not in _BACKENDS:
        raise _fail("backend", backend, f"must be one of {list(_BACKENDS)}")
    for key in ("url", "url_env", "namespace"):
        value = raw.get(key)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise _fail(key, "<hidden>" if key == "url" else value, "must be a non-empty string")
    namespace = str(raw.get("namespace", "default"))
    if "{" in namespace or "}" in namespace:
        raise _fail("namespace", namespace, "must not contain braces")
    url = None
    if backend == "redis":
        variable = raw.get("url_env")
        url = environ.get(str(variable), "") if variable is not None else raw.get("url")
        if not url:
            why = f"environment variable {variable!r} is not set" if variable else "the redis backend needs url"
            raise _fail("url_env" if variable else "url", variable, why)
        if not str(url).startswith(("redis://", "rediss://", "unix://")):
            raise _fail("url", "<hidden>", "must start with redis://, rediss:// or unix://")
    return HealthStoreConfig(backend=str(backend), url=None if url is None else str(url), namespace=namespace)


def load_health_config(path: str | os.PathLike[str], *, environ: Mapping[str, str] | None = None) -> HealthStoreConfig:
    """Read ``agent.toml``'s ``[health]`` table."""
    return parse_health_table(read_toml(path).get("health"), environ=os.environ if environ is None else environ)


def open_health_store(config: HealthStoreConfig, health: HealthConfig) -> HealthStore:
    """The store ``config`` names, with ``health``'s threshold and cooldown (Redis needs the ``ledger`` extra)."""
    if config.backend == "redis":
        try:
            from routeproof.health_store.redis_store import RedisHealthStore
        except ImportError as exc:
            raise ConfigError(
                "health.backend = 'redis' needs the redis package: pip install 'routeproof[ledger]'"
            ) from exc
        assert config.url is not None
        return RedisHealthStore(config.url, health, namespace=config.namespace)
    return MemoryHealthStore(health)
