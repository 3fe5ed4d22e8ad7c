"""The ``[ledger]`` table of ``agent.toml``, parsed and checked: which store holds the budget ledger.

Apart from :mod:`routeproof.ledger_store.config` (which opens the store) so that
:mod:`routeproof.config.load` can check the table when the file is loaded without an import circle.

.. code-block:: toml

    [ledger]
    backend = "sqlite"                 # "memory" (default) | "sqlite" | "redis"
    path = "ledger.sqlite3"            # sqlite: the file, relative to agent.toml
    url = "redis://127.0.0.1:6379/0"   # redis: the server (a password may come from url_env)
    url_env = "ROUTEPROOF_LEDGER_URL"  # redis: read the URL from this variable instead
    namespace = "default"              # redis: key prefix, so several ledgers can share a server
    lease_s = 300                      # how long a dead process's reservation is held (crash rule)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from routeproof.config.read import fail, read_store_table
from routeproof.ledger_store.protocol import DEFAULT_LEASE_MS

__all__ = ["LedgerConfig", "parse_ledger_table"]

_LEDGER_KEYS = frozenset({"backend", "path", "url", "url_env", "namespace", "lease_s"})
_BACKENDS = ("memory", "sqlite", "redis")


@dataclass(frozen=True, slots=True, kw_only=True)
class LedgerConfig:
    """Where the ledger lives. ``url`` may hold a password: it is never printed."""

    backend: str = "memory"
    path: Path | None = None
    url: str | None = None
    namespace: str = "default"
    lease_ms: int = DEFAULT_LEASE_MS


def parse_ledger_table(raw: object, *, base_dir: Path, environ: Mapping[str, str]) -> LedgerConfig:
    """Validate a parsed ``[ledger]`` table; a relative ``path`` resolves against ``base_dir``."""
    if raw is None:
        return LedgerConfig()
    store = read_store_table(
        raw, "ledger", keys=_LEDGER_KEYS, backends=_BACKENDS, environ=environ, string_keys=("path",)
    )
    lease_s = store.table.get("lease_s", Decimal(DEFAULT_LEASE_MS) / 1000)
    if isinstance(lease_s, bool) or not isinstance(lease_s, int | float | Decimal) or not 0 < lease_s < 10**7:
        raise fail("ledger.lease_s", lease_s, "must be a number of seconds > 0")
    path = None
    if store.backend == "sqlite":
        if store.table.get("path") is None:
            raise fail("ledger.path", None, "the sqlite backend needs the file's path")
        path = (base_dir / str(store.table["path"])).resolve()
    return LedgerConfig(
        backend=store.backend,
        path=path,
        url=store.url,
        namespace=store.namespace,
        lease_ms=max(1, round(Decimal(str(lease_s)) * 1000)),
    )
