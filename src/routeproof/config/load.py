"""Configuration: a TOML file (seed 003's ``agent.toml`` shape) plus the environment.

Everything is validated when it is loaded: a bad value raises :class:`~routeproof.errors.ConfigError`
naming the offending key and value (``!r``). Secrets come only from the environment (the
``environ`` argument, so tests are hermetic); they are never in an error message or a repr.
Money is :class:`~decimal.Decimal` (TOML floats are parsed as Decimal, never as float).

See ``config/agent.example.toml`` for every key. The modules by role (every name re-exported here):
:mod:`routeproof.config.types` (the frozen values), :mod:`routeproof.config.read` (value readers),
:mod:`routeproof.config.providers` (one provider table; the provider clients); this module reads
the file and the driver's other tables.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from routeproof.config.providers import provider_config
from routeproof.config.read import Missing, fail, read_int, read_micro, read_str, read_table, read_usd
from routeproof.config.types import (
    DEFAULT_PROVIDER_ENV,
    SESSION_BUDGET_ENV,
    AdmissionConfig,
    BackoffConfig,
    BackoffKind,
    BudgetConfig,
    FailoverConfig,
    ProviderConfig,
    RoutingConfig,
    TrafficSettings,
)
from routeproof.core.balance import Strategy
from routeproof.core.constants import (
    FAILURE_THRESHOLD,
    FULL_JITTER_BASE_MS,
    FULL_JITTER_CAP_MS,
    FULL_JITTER_MAX_RETRIES,
    PROVIDER_DEFAULT_TIMEOUT_MS,
)
from routeproof.core.health import DEFAULT_COOLDOWN_MS
from routeproof.core.identity import instance_ids
from routeproof.core.retry_budget import DEFAULT_MAX_TOKENS, DEFAULT_TOKEN_RATIO_MILLI, RetryBudgetConfig
from routeproof.errors import ConfigError
from routeproof.hedge_config import parse_aliases

if TYPE_CHECKING:
    from routeproof.ledger_store.table import LedgerConfig


_TOP_KEYS = frozenset({"driver", "pricing", "gateway", "ledger", "health"}) | {
    "traffic",  # [traffic]: traffic_store/config.py
    "aliases",  # [aliases.NAME]: hedge_config.py
}  # [health]: health_store/config.py
_DRIVER_KEYS = frozenset({"type", "providers", "failover", "backoff", "private_hosts", "budget", "admission"}) | {
    "traffic"
}
_TRAFFIC_KEYS = frozenset({"strategy", "retry_budget", "wait_for_capacity", "cache_affinity_ttl_s"})
_RETRY_BUDGET_KEYS = frozenset({"max_tokens", "token_ratio"})
_FAILOVER_KEYS = frozenset({"failure_threshold", "latency_sla_ms", "cooldown_ms"})
_BACKOFF_KEYS = frozenset({"policy", "base_ms", "cap_ms", "max_retries"})
_BUDGET_KEYS = frozenset({"turn_warning_usd", "session_usd", "monthly_usd"})


def _failover(raw: object) -> FailoverConfig:
    table = read_table(raw, "driver.failover", _FAILOVER_KEYS)
    where = "driver.failover"
    return FailoverConfig(
        failure_threshold=read_int(table, "failure_threshold", where, FAILURE_THRESHOLD, minimum=1),
        latency_sla_ms=read_int(table, "latency_sla_ms", where, PROVIDER_DEFAULT_TIMEOUT_MS, minimum=1),
        cooldown_ms=read_int(table, "cooldown_ms", where, DEFAULT_COOLDOWN_MS, minimum=0),
    )


def _admission(raw: object) -> AdmissionConfig:
    where = "driver.admission"
    table = read_table(raw, where, frozenset({"max_in_flight", "max_in_flight_per_provider", "transport"}))
    transport = read_str(table, "transport", where)
    if transport is not None and transport not in ("aiohttp", "httpx"):
        raise fail(f"{where}.transport", transport, "must be 'aiohttp' or 'httpx'")
    return AdmissionConfig(
        max_in_flight=read_int(table, "max_in_flight", where, 100, minimum=0),
        max_in_flight_per_provider=read_int(table, "max_in_flight_per_provider", where, 100, minimum=0),
        transport=transport,
    )


def _traffic(raw: object) -> TrafficSettings:
    where = "driver.traffic"
    table = read_table(raw, where, _TRAFFIC_KEYS)
    strategy_raw = table.get("strategy", Strategy.ORDERED.value)
    strategies = {s.value: s for s in Strategy}
    if strategy_raw not in strategies:
        raise fail(f"{where}.strategy", strategy_raw, f"must be one of {sorted(strategies)}")
    wait = table.get("wait_for_capacity", True)
    if not isinstance(wait, bool):
        raise fail(f"{where}.wait_for_capacity", wait, "must be true or false")
    budget = None
    if "retry_budget" in table:
        inner = f"{where}.retry_budget"
        budget_table = read_table(table["retry_budget"], inner, _RETRY_BUDGET_KEYS)
        budget = RetryBudgetConfig(
            max_tokens=read_int(budget_table, "max_tokens", inner, DEFAULT_MAX_TOKENS, minimum=1),
            token_ratio_milli=read_micro(
                budget_table, "token_ratio", inner, DEFAULT_TOKEN_RATIO_MILLI * 1000, maximum=1_000_000
            )
            // 1000,
        )
        if budget.token_ratio_milli == 0:
            raise fail(f"{inner}.token_ratio", budget_table.get("token_ratio"), "must be at least 0.001")
    ttl_s = table.get("cache_affinity_ttl_s")
    affinity_ttl_ms = None
    if ttl_s is not None:
        affinity_ttl_ms = read_int(table, "cache_affinity_ttl_s", where, 0, minimum=1) * 1000
    return TrafficSettings(
        strategy=strategies[str(strategy_raw)],
        retry_budget=budget,
        wait_for_capacity=wait,
        affinity_ttl_ms=affinity_ttl_ms,
    )


def _backoff(raw: object) -> BackoffConfig:
    where = "driver.backoff"
    table = read_table(raw, where, _BACKOFF_KEYS)
    policy_raw = table.get("policy", BackoffKind.BAND.value)
    if policy_raw not in {p.value for p in BackoffKind}:
        raise fail(f"{where}.policy", policy_raw, f"must be one of {sorted(p.value for p in BackoffKind)}")
    base_ms = read_int(table, "base_ms", where, FULL_JITTER_BASE_MS, minimum=1)
    cap_ms = read_int(table, "cap_ms", where, FULL_JITTER_CAP_MS, minimum=1)
    if cap_ms < base_ms:
        raise fail(f"{where}.cap_ms", cap_ms, f"must be >= base_ms ({base_ms!r})")
    return BackoffConfig(
        policy=BackoffKind(policy_raw),
        base_ms=base_ms,
        cap_ms=cap_ms,
        max_retries=read_int(table, "max_retries", where, FULL_JITTER_MAX_RETRIES, minimum=1),
    )


def _env_usd(environ: Mapping[str, str], names: tuple[str, ...]) -> tuple[str, Decimal] | None:
    for name in names:
        raw = environ.get(name)
        if raw is None or raw == "":
            continue
        try:
            amount = Decimal(raw.strip())
        except ArithmeticError as exc:
            raise fail(name, raw, "must be a USD amount such as 2.50") from exc
        if not amount.is_finite() or amount < 0:
            raise fail(name, raw, "must be a finite USD amount >= 0")
        return name, amount
    return None


DEFAULT_PRICING_PATH = Path(".config") / "batuta" / "pricing.toml"
"""Seed 003's pricing location, under ``$HOME``: read when ``agent.toml`` names no ``pricing`` file."""


def default_pricing_path(environ: Mapping[str, str]) -> Path | None:
    """``$HOME/.config/batuta/pricing.toml`` when that file exists (seed 003's default), else None."""
    home = environ.get("HOME")
    if not home:
        return None
    path = Path(home) / DEFAULT_PRICING_PATH
    return path.resolve() if path.is_file() else None


def budget_config(raw: object, environ: Mapping[str, str]) -> BudgetConfig:
    """``[driver.budget]`` validated, the session limit overridden by ``SESSION_BUDGET_ENV`` when set."""
    where = "driver.budget"
    table = read_table(raw, where, _BUDGET_KEYS)
    session = read_usd(table, where, "session_usd")
    override = _env_usd(environ, SESSION_BUDGET_ENV)
    if override is not None:
        session = override[1]
    return BudgetConfig(
        turn_warning_usd=read_usd(table, where, "turn_warning_usd"),
        session_usd=session,
        monthly_usd=read_usd(table, where, "monthly_usd"),
    )


def _default_provider(providers: list[ProviderConfig], environ: Mapping[str, str]) -> list[ProviderConfig]:
    """Move the provider the environment names to the front (seed 003's ``BATUTA_LLM_PROVIDER``)."""
    for variable in DEFAULT_PROVIDER_ENV:
        name = environ.get(variable)
        if not name:
            continue
        chosen = [p for p in providers if name in {p.name, p.kind.value}]
        if not chosen:
            raise fail(variable, name, f"names no configured provider (configured: {[p.name for p in providers]})")
        return [chosen[0], *(p for p in providers if p is not chosen[0])]
    return providers


def _private_hosts(driver: Mapping[str, object]) -> frozenset[str]:
    raw = driver.get("private_hosts", [])
    if not isinstance(raw, list) or not all(isinstance(h, str) and h for h in raw):
        raise fail("driver.private_hosts", raw, "must be a list of host names")
    return frozenset(str(h).lower() for h in raw)


def parse_config(data: Mapping[str, object], *, environ: Mapping[str, str], base_dir: Path) -> RoutingConfig:
    """Validate parsed TOML (floats as Decimal); relative paths resolve against ``base_dir``."""
    top = read_table(dict(data), "<top level>", _TOP_KEYS)
    driver = read_table(top.get("driver", {}), "driver", _DRIVER_KEYS)
    if driver.get("type", "routing") != "routing":
        raise fail("driver.type", driver.get("type"), "only 'routing' is supported")
    private_hosts = _private_hosts(driver)
    providers_raw = driver.get("providers", {})
    if not isinstance(providers_raw, dict) or not providers_raw:
        raise fail("driver.providers", providers_raw, "configure at least one [driver.providers.NAME] table")
    missing = Missing()
    providers = [
        provider_config(name, raw, position, environ, private_hosts, missing=missing)
        for position, (name, raw) in enumerate(providers_raw.items(), start=1)
    ]
    missing.raise_if_any()
    try:  # providers are addressed by name; a kind is a property of an instance (core/identity.py)
        instance_ids((p.name, p.kind) for p in providers)
    except ValueError as exc:
        raise ConfigError(f"driver.providers: {exc}") from exc
    providers.sort(key=lambda p: p.priority)  # stable: ties keep file order
    providers = _default_provider(providers, environ)
    pricing_path = None
    pricing_raw = read_str(top, "pricing", "<top level>")
    if pricing_raw is not None:
        pricing_path = (base_dir / pricing_raw).resolve()
        if not pricing_path.is_file():
            raise fail("pricing", pricing_raw, f"no such file: {str(pricing_path)!r}")
    else:
        pricing_path = default_pricing_path(environ)
    return RoutingConfig(
        providers=tuple(providers),
        failover=_failover(driver.get("failover", {})),
        backoff=_backoff(driver.get("backoff", {})),
        pricing_path=pricing_path,
        private_hosts=private_hosts,
        budget=budget_config(driver.get("budget", {}), environ),
        admission=_admission(driver.get("admission", {})),
        traffic=replace(_traffic(driver.get("traffic", {})), hedges=parse_aliases(top.get("aliases"))),
        ledger=_ledger(top.get("ledger"), base_dir, environ),
    )


def _ledger(raw: object, base_dir: Path, environ: Mapping[str, str]) -> LedgerConfig | None:
    """The ``[ledger]`` table validated at load time, so ``router_from_config`` honours it (issue 26)."""
    if raw is None:
        return None
    # imported here: the ledger_store package's front imports ledger_store.config, which reads agent.toml
    # through this package (ledger_store/table.py itself needs only config.read)
    from routeproof.ledger_store.table import parse_ledger_table

    return parse_ledger_table(raw, base_dir=base_dir, environ=environ)


def read_toml(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The TOML file at ``path`` parsed (floats as Decimal); ConfigError naming the file otherwise.
    The one reader for agent.toml, whichever table a caller wants from it."""
    file = Path(path)
    try:
        with file.open("rb") as handle:
            return tomllib.load(handle, parse_float=Decimal)
    except OSError as exc:
        raise ConfigError(f"cannot read config file {str(file)!r}: {exc.strerror}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {str(file)!r} is not valid TOML: {exc}") from exc


def load_config(path: str | os.PathLike[str], *, environ: Mapping[str, str] | None = None) -> RoutingConfig:
    """Read and validate the TOML file at ``path``; secrets come from ``environ`` (default os.environ)."""
    file = Path(path)
    data = read_toml(file)
    return parse_config(data, environ=os.environ if environ is None else environ, base_dir=file.parent)
