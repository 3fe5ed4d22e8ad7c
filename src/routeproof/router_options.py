"""The Router's options, grouped: three frozen values with the units in their field names.

``Router(providers, limits=LimitOptions(...), budgets=BudgetOptions(...), health=HealthOptions(...))``:

- :class:`LimitOptions`: how long an attempt or a silent stream may take (integer milliseconds), how
  many attempts a provider gets, how many calls may be in flight;
- :class:`BudgetOptions`: the prices calls are booked at, the spending limits, the ledger store;
- :class:`HealthOptions`: provider health (circuit breaking), what a cooling provider gets, the
  latency tracking, the health store.

Each value checks what it can check alone when it is made (a :class:`~routeproof.errors.ConfigError`
naming the offending value); the Router checks what needs the providers (timeouts by provider name,
a budget without prices). The Router's older flat keywords (``attempt_timeout_s=``, ``pricing=``,
``budget=``, ``cooling=``, ...) still work for this release, with a ``DeprecationWarning`` that names
the new spelling: :func:`from_legacy` maps them.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TypedDict

from routeproof.admission import DEFAULT_MAX_IN_FLIGHT_PER_PROVIDER
from routeproof.clock import ms_of_s
from routeproof.core.constants import MAX_ATTEMPTS_PER_PROVIDER, PROVIDER_DEFAULT_TIMEOUT_MS
from routeproof.core.frozen import FrozenMap
from routeproof.core.health import HealthConfig
from routeproof.core.latency import LatencyConfig
from routeproof.core.ledger import BudgetLimits
from routeproof.core.pricing import PricingTable
from routeproof.core.routing import CoolingPolicy
from routeproof.errors import ConfigError
from routeproof.health_store import HealthStore
from routeproof.ledger_store import LedgerStore

__all__ = ["BudgetOptions", "HealthOptions", "LegacyRouterOptions", "LimitOptions", "from_legacy"]

DEFAULT_STREAM_IDLE_TIMEOUT_MS = 30_000
"""How long a stream may send nothing after its first event before it counts as interrupted."""


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True, slots=True, kw_only=True)
class LimitOptions:
    """Time and concurrency limits: attempt and stream-idle timeouts in ms, attempts per provider,
    calls in flight (in total, None: unbounded; and per provider, None: unbounded)."""

    attempt_timeout_ms: int = PROVIDER_DEFAULT_TIMEOUT_MS
    stream_idle_timeout_ms: int | None = DEFAULT_STREAM_IDLE_TIMEOUT_MS
    provider_timeouts_ms: Mapping[str, int] = field(default_factory=FrozenMap)
    max_attempts_per_provider: int = MAX_ATTEMPTS_PER_PROVIDER
    max_in_flight: int | None = None
    max_in_flight_per_provider: int | None = DEFAULT_MAX_IN_FLIGHT_PER_PROVIDER

    def __post_init__(self) -> None:
        if not _is_int(self.attempt_timeout_ms) or not 0 < self.attempt_timeout_ms <= PROVIDER_DEFAULT_TIMEOUT_MS:
            raise ConfigError(
                f"attempt_timeout_ms must be an int in 1..{PROVIDER_DEFAULT_TIMEOUT_MS}, "
                f"got {self.attempt_timeout_ms!r}"
            )
        idle = self.stream_idle_timeout_ms
        if idle is not None and (not _is_int(idle) or idle <= 0):
            raise ConfigError(f"stream_idle_timeout_ms must be an int > 0 or None, got {idle!r}")
        attempts = self.max_attempts_per_provider
        if not _is_int(attempts) or not 1 <= attempts <= MAX_ATTEMPTS_PER_PROVIDER:
            raise ConfigError(
                f"max_attempts_per_provider must be an int in 1..{MAX_ATTEMPTS_PER_PROVIDER}, got {attempts!r}"
            )
        if not isinstance(self.provider_timeouts_ms, Mapping):
            raise ConfigError(
                f"provider_timeouts_ms must be a mapping of name to ms, got {self.provider_timeouts_ms!r}"
            )
        object.__setattr__(self, "provider_timeouts_ms", FrozenMap(self.provider_timeouts_ms))


@dataclass(frozen=True, slots=True, kw_only=True)
class BudgetOptions:
    """Money: the pricing table calls are booked at, the spending limits (kept in memory), or a
    ledger store that holds the limits itself (shared between processes)."""

    pricing: PricingTable | None = None
    limits: BudgetLimits | None = None
    ledger_store: LedgerStore | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class HealthOptions:
    """Provider health: the circuit-breaker config (kept in memory), or a health store that holds
    it itself (shared between processes); what a cooling provider gets; latency tracking."""

    config: HealthConfig | None = None
    cooling: CoolingPolicy = CoolingPolicy.DEMOTE
    latency: LatencyConfig | None = None
    health_store: HealthStore | None = None


class LegacyRouterOptions(TypedDict, total=False):
    """The Router's flat keywords before the grouping (deprecated; removed in the next release)."""

    attempt_timeout_s: float
    stream_idle_timeout_s: float | None
    provider_timeouts_ms: Mapping[str, int] | None
    max_attempts_per_provider: int
    max_in_flight: int | None
    max_in_flight_per_provider: int | None
    pricing: PricingTable | None
    budget: BudgetLimits | None
    ledger_store: LedgerStore | None
    cooling: CoolingPolicy
    latency: LatencyConfig | None
    health_store: HealthStore | None


_LIMIT_KEYS = ("provider_timeouts_ms", "max_attempts_per_provider", "max_in_flight", "max_in_flight_per_provider")
_SECONDS_KEYS = {"attempt_timeout_s": "attempt_timeout_ms", "stream_idle_timeout_s": "stream_idle_timeout_ms"}
_BUDGET_KEYS = {"pricing": "pricing", "budget": "limits", "ledger_store": "ledger_store"}
_HEALTH_KEYS = {"cooling": "cooling", "latency": "latency", "health_store": "health_store"}


def _seconds_as_ms(key: str, seconds: object) -> int | None:
    """An old seconds keyword as the new ms field (None stays None, for the stream-idle timeout)."""
    if seconds is None and key == "stream_idle_timeout_s":
        return None
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not seconds > 0:
        raise ConfigError(f"{key} must be a number of seconds > 0, got {seconds!r}")
    return max(1, ms_of_s(seconds))


def _warn(old: list[str], new: str) -> None:
    if old:
        warnings.warn(
            f"Router({', '.join(f'{k}=' for k in old)}) is deprecated: pass {new} instead",
            DeprecationWarning,
            stacklevel=4,
        )


def from_legacy(
    legacy: LegacyRouterOptions,
    limits: LimitOptions | None,
    budgets: BudgetOptions | None,
    health: HealthOptions | HealthConfig | None,
) -> tuple[LimitOptions, BudgetOptions, HealthOptions]:
    """The three option values, from the new keywords and any old flat ones (each old one warns,
    naming its new spelling; an old keyword given together with its new group is an error)."""
    given: dict[str, object] = dict(legacy)
    unknown = sorted(set(given) - {*_LIMIT_KEYS, *_SECONDS_KEYS, *_BUDGET_KEYS, *_HEALTH_KEYS})
    if unknown:
        raise TypeError(f"Router() got unexpected keyword arguments {unknown!r}")
    limit_old = [k for k in (*_SECONDS_KEYS, *_LIMIT_KEYS) if k in given]
    budget_old = [k for k in _BUDGET_KEYS if k in given]
    health_old = [k for k in _HEALTH_KEYS if k in given] + (["health"] if isinstance(health, HealthConfig) else [])
    for old, group, name in ((limit_old, limits, "limits"), (budget_old, budgets, "budgets")):
        if old and group is not None:
            raise ConfigError(f"give {old!r} inside {name}=, not beside it")
    if health_old and health is not None and not isinstance(health, HealthConfig):
        raise ConfigError(f"give {health_old!r} inside health=, not beside it")
    _warn(limit_old, f"limits=LimitOptions({', '.join(_SECONDS_KEYS.get(k, k) + '=' for k in limit_old)})")
    _warn(budget_old, f"budgets=BudgetOptions({', '.join(_BUDGET_KEYS[k] + '=' for k in budget_old)})")
    health_fields = [_HEALTH_KEYS.get(k, "config") for k in health_old]
    _warn(health_old, f"health=HealthOptions({', '.join(f + '=' for f in health_fields)})")
    limit_fields: dict[str, object] = {k: given[k] for k in _LIMIT_KEYS if k in given}
    limit_fields.update({new: _seconds_as_ms(old, given[old]) for old, new in _SECONDS_KEYS.items() if old in given})
    if limit_fields.get("provider_timeouts_ms", 0) is None:
        del limit_fields["provider_timeouts_ms"]
    health_fields_given: dict[str, object] = {new: given[old] for old, new in _HEALTH_KEYS.items() if old in given}
    if isinstance(health, HealthConfig):
        health_fields_given["config"] = health
    return (
        limits if limits is not None else LimitOptions(**limit_fields),  # type: ignore[arg-type]  # checked in __post_init__
        budgets
        if budgets is not None
        else BudgetOptions(**{new: given[old] for old, new in _BUDGET_KEYS.items() if old in given}),  # type: ignore[arg-type]  # the old keywords' types
        health if isinstance(health, HealthOptions) else HealthOptions(**health_fields_given),  # type: ignore[arg-type]  # the old keywords' types
    )
