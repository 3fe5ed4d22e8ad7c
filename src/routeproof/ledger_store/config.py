"""Open the store the ``[ledger]`` table of ``agent.toml`` names (the table itself, its keys and checks:
:mod:`routeproof.ledger_store.table`)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from decimal import Decimal
from pathlib import Path

from routeproof.config import budget_config, read_toml
from routeproof.core.identity import instance_ids
from routeproof.core.ledger import BudgetLimits
from routeproof.core.pricing import parse_usd
from routeproof.core.types import ProviderId, ProviderKind
from routeproof.errors import ConfigError
from routeproof.ledger_store.protocol import LedgerStore
from routeproof.ledger_store.table import LedgerConfig, parse_ledger_table

__all__ = ["load_ledger_config", "open_store"]


def load_ledger_config(
    path: str | os.PathLike[str], *, environ: Mapping[str, str] | None = None
) -> tuple[LedgerConfig, BudgetLimits]:
    """Read ``agent.toml``'s ``[ledger]`` table and the budget limits it configures (the providers'
    ``daily_budget_usd`` and ``[driver.budget]``'s session and monthly limits, the session one
    overridable from the environment as the router's is), without needing any provider's API key."""
    data = read_toml(path)
    config = parse_ledger_table(
        data.get("ledger"), base_dir=Path(path).parent, environ=os.environ if environ is None else environ
    )
    providers = data.get("driver", {}).get("providers", {}) if isinstance(data.get("driver"), dict) else {}
    tables = {n: t for n, t in providers.items() if isinstance(t, dict)} if isinstance(providers, dict) else {}
    kinds: list[tuple[str, ProviderKind]] = []
    for name, table in tables.items():
        kind_name = str(table.get("kind", "local" if name == "realizar" else name))
        try:
            kinds.append((name, ProviderKind(kind_name)))
        except ValueError as exc:
            raise ConfigError(f"driver.providers.{name}.kind = {kind_name!r}: unknown kind") from exc
    try:
        ids = instance_ids(kinds)  # the ledger's per-provider scope is per instance, as the Router's
    except ValueError as exc:
        raise ConfigError(f"driver.providers: {exc}") from exc
    daily: list[tuple[ProviderId, int]] = [
        (ids[name], parse_usd(table["daily_budget_usd"], what=f"driver.providers.{name}.daily_budget_usd"))
        for name, table in tables.items()
        if table.get("daily_budget_usd") is not None
    ]
    driver = data.get("driver")
    budget = budget_config(
        driver.get("budget", {}) if isinstance(driver, dict) else {}, os.environ if environ is None else environ
    )

    def usd(value: Decimal | None, key: str) -> int | None:
        return None if value is None else parse_usd(value, what=f"driver.budget.{key}")

    return config, BudgetLimits(
        turn_warning_pico_usd=usd(budget.turn_warning_usd, "turn_warning_usd"),
        session_limit_pico_usd=usd(budget.session_usd, "session_usd"),
        monthly_limit_pico_usd=usd(budget.monthly_usd, "monthly_usd"),
        provider_daily_pico_usd=tuple(daily),
    )


def open_store(config: LedgerConfig, limits: BudgetLimits) -> LedgerStore:
    """The store ``config`` names, enforcing ``limits`` (Redis needs the ``ledger`` extra)."""
    if config.backend == "sqlite":
        from routeproof.ledger_store.sqlite import SqliteLedgerStore

        assert config.path is not None
        return SqliteLedgerStore(config.path, limits, lease_ms=config.lease_ms)
    if config.backend == "redis":
        try:
            from routeproof.ledger_store.redis_store import RedisLedgerStore
        except ImportError as exc:
            raise ConfigError(
                "ledger.backend = 'redis' needs the redis package: pip install 'routeproof[ledger]'"
            ) from exc
        assert config.url is not None
        return RedisLedgerStore(config.url, limits, namespace=config.namespace, lease_ms=config.lease_ms)
    from routeproof.ledger_store.memory import MemoryLedgerStore

    return MemoryLedgerStore(limits)
