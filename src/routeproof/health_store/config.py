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
from routeproof.config.read import read_store_table
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


def parse_health_table(raw: object, *, environ: Mapping[str, str]) -> HealthStoreConfig:
    """Validate a parsed ``[health]`` table (None: the memory store)."""
    if raw is None:
        return HealthStoreConfig()
    store = read_store_table(raw, "health", keys=_HEALTH_KEYS, backends=_BACKENDS, environ=environ)
    return HealthStoreConfig(backend=store.backend, url=store.url, namespace=store.namespace)


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
