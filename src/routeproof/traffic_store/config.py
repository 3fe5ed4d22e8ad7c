"""The ``[traffic]`` table of ``agent.toml``: where rate-limit windows and retry buckets live.

.. code-block:: toml

    [traffic]
    backend = "redis"                   # "memory" (default: this process) | "sqlite" | "redis" (shared)
    url = "redis://127.0.0.1:6379/0"    # redis: the server (or url_env = "VARIABLE")
    namespace = "default"               # redis: replicas sharing limits use the same one
    path = "traffic.db"                 # sqlite: the file, relative to agent.toml

The limits themselves (``rpm``, ``tpm``, ``weight``) and ``[driver.traffic]`` stay with the
providers: every replica must load the same ones.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from routeproof.config import read_toml
from routeproof.config.read import fail, read_store_table
from routeproof.errors import ConfigError
from routeproof.traffic_store.memory import MemoryTrafficStore
from routeproof.traffic_store.protocol import TrafficStore

__all__ = ["TrafficStoreConfig", "load_traffic_config", "open_traffic_store", "parse_traffic_table"]

_KEYS = frozenset({"backend", "url", "url_env", "namespace", "path"})
_BACKENDS = ("memory", "sqlite", "redis")


@dataclass(frozen=True, slots=True, kw_only=True)
class TrafficStoreConfig:
    """Where the traffic state lives. ``url`` may hold a password: it is never printed."""

    backend: str = "memory"
    url: str | None = None
    namespace: str = "default"
    path: Path | None = None


def parse_traffic_table(raw: object, *, base_dir: Path, environ: Mapping[str, str]) -> TrafficStoreConfig:
    """Validate a parsed ``[traffic]`` table (None: the memory store)."""
    if raw is None:
        return TrafficStoreConfig()
    store = read_store_table(raw, "traffic", keys=_KEYS, backends=_BACKENDS, environ=environ, string_keys=("path",))
    path = None
    if store.backend == "sqlite":
        raw_path = store.table.get("path")
        if raw_path is None:
            raise fail("traffic.path", raw_path, "the sqlite backend needs the file's path")
        path = (base_dir / str(raw_path)).resolve()
    return TrafficStoreConfig(backend=store.backend, url=store.url, namespace=store.namespace, path=path)


def load_traffic_config(
    path: str | os.PathLike[str], *, environ: Mapping[str, str] | None = None
) -> TrafficStoreConfig:
    """Read ``agent.toml``'s ``[traffic]`` table."""
    return parse_traffic_table(
        read_toml(path).get("traffic"), base_dir=Path(path).parent, environ=os.environ if environ is None else environ
    )


def open_traffic_store(config: TrafficStoreConfig) -> TrafficStore:
    """The store ``config`` names (Redis needs the ``ledger`` extra's redis package)."""
    if config.backend == "redis":
        try:
            from routeproof.traffic_store.redis_store import RedisTrafficStore
        except ImportError as exc:
            raise ConfigError(
                "traffic.backend = 'redis' needs the redis package: pip install 'routeproof[ledger]'"
            ) from exc
        assert config.url is not None
        return RedisTrafficStore(config.url, namespace=config.namespace)
    if config.backend == "sqlite":
        from routeproof.traffic_store.sqlite import SqliteTrafficStore

        assert config.path is not None
        return SqliteTrafficStore(config.path)
    return MemoryTrafficStore()
