"""Provider health across calls: consecutive failures and cooldowns (seed 003 "Failover triggers",
``failover_cascade``'s ``p.failures < threshold``; FALSIFY-MPA-002).

A provider whose consecutive failures reach ``failure_threshold`` (default 2) is cooling until
``now + cooldown_ms``; later calls skip it until then. A further failure sets the end to
``max(old end, now + cooldown_ms)``, so it never moves earlier. A success resets the count and
ends any cooldown (a call that was already in flight proved the provider works). When a cooldown
has ended the count is kept: the next call is a probe, and one more failure starts a new cooldown
at once (half-open).

All times are integer milliseconds on the caller's clock, passed in; nothing here reads a clock.
"""

from __future__ import annotations

from dataclasses import dataclass

import icontract

from routeproof.core.constants import FAILURE_THRESHOLD
from routeproof.core.types import ChainEntry, ProviderId

__all__ = [
    "DEFAULT_COOLDOWN_MS",
    "HealthConfig",
    "HealthState",
    "ProviderHealth",
    "earliest_return_ms",
    "filter_healthy",
    "health_well_formed",
    "is_available",
    "new_health",
    "record_failure",
    "record_success",
]

DEFAULT_COOLDOWN_MS = 30_000
"""How long a provider is skipped after reaching the threshold (the contract's 30 s latency SLA)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class HealthConfig:
    """``failure_threshold`` consecutive failures start a cooldown of ``cooldown_ms``."""

    failure_threshold: int = FAILURE_THRESHOLD
    cooldown_ms: int = DEFAULT_COOLDOWN_MS

    def __post_init__(self) -> None:
        if self.failure_threshold < 1:
            raise ValueError(f"failure_threshold must be >= 1, got {self.failure_threshold!r}")
        if self.cooldown_ms < 0:
            raise ValueError(f"cooldown_ms must be >= 0, got {self.cooldown_ms!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class ProviderHealth:
    """One provider's record: consecutive failures, and when its cooldown ends (None: not cooling)."""

    consecutive_failures: int = 0
    cooldown_until_ms: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class HealthState:
    """Health of every provider seen so far; a provider never seen is healthy."""

    config: HealthConfig = HealthConfig()
    providers: tuple[tuple[ProviderId, ProviderHealth], ...] = ()


def health_well_formed(state: HealthState) -> bool:
    """Counts are non-negative, each provider appears once, and only a provider that reached the
    threshold has a cooldown."""
    kinds = [kind for kind, _ in state.providers]
    return len(set(kinds)) == len(kinds) and all(
        h.consecutive_failures >= 0
        and (h.cooldown_until_ms is None or h.consecutive_failures >= state.config.failure_threshold)
        for _, h in state.providers
    )


def _health_of(state: HealthState, provider: ProviderId) -> ProviderHealth:
    for kind, health in state.providers:
        if kind == provider:
            return health
    return ProviderHealth()


def _with(state: HealthState, provider: ProviderId, health: ProviderHealth) -> HealthState:
    providers = state.providers
    if providers and providers[-1][0] == provider and (providers[-1][1] is health or providers[-1][1] == health):
        return state  # listed last (and once: health_well_formed) with this record already: the same value
    others = tuple((k, h) for k, h in providers if k != provider)  # equal names, not one object
    return HealthState(config=state.config, providers=(*others, (provider, health)))


_RESET = ProviderHealth()
"""A reset record (frozen: one shared value, so a repeated success is recognised by identity)."""


@icontract.ensure(lambda result: health_well_formed(state=result))
def new_health(config: HealthConfig = HealthConfig()) -> HealthState:  # frozen: safe as a default
    """A state in which every provider is healthy."""
    return HealthState(config=config)


def _record_failure(state: HealthState, provider: ProviderId, now_ms: int) -> HealthState:
    old = _health_of(state, provider)
    count = old.consecutive_failures + 1
    until = old.cooldown_until_ms
    if count >= state.config.failure_threshold:
        fresh = now_ms + state.config.cooldown_ms
        until = fresh if until is None else max(until, fresh)
    return _with(state, provider, ProviderHealth(consecutive_failures=count, cooldown_until_ms=until))


def _cooldown_end(state: HealthState, provider: ProviderId) -> int | None:
    return _health_of(state, provider).cooldown_until_ms


@icontract.require(health_well_formed)
@icontract.ensure(lambda result: health_well_formed(state=result))
@icontract.ensure(
    lambda state, provider, result: (
        _health_of(result, provider).consecutive_failures == _health_of(state, provider).consecutive_failures + 1
    )
)
@icontract.ensure(
    lambda state, provider, result: (
        _cooldown_end(state, provider) is None
        or (_cooldown_end(result, provider) or 0) >= (_cooldown_end(state, provider) or 0)
    ),
    "a new failure never moves a cooldown's end earlier",
)
@icontract.ensure(
    lambda state, provider, now_ms, result: (
        _health_of(result, provider).consecutive_failures < state.config.failure_threshold
        or not _is_available(result, provider, now_ms)
        or state.config.cooldown_ms == 0
    ),
    "reaching the threshold starts a cooldown",
)
def record_failure(state: HealthState, provider: ProviderId, now_ms: int) -> HealthState:
    """Count one more consecutive failure of ``provider`` at ``now_ms``; at the threshold, cool it
    down until ``max(current end, now_ms + cooldown_ms)``."""
    return _record_failure(state, provider, now_ms)


@icontract.require(health_well_formed)
@icontract.ensure(
    lambda provider, result: health_well_formed(state=result) and _health_of(result, provider) == ProviderHealth(),
    "well formed, the provider's count reset and its cooldown ended",
)  # one condition, not two: each costs icontract about ten Python calls per call (issue 25)
def record_success(state: HealthState, provider: ProviderId) -> HealthState:
    """A success resets ``provider``'s count and ends its cooldown."""
    return _with(state, provider, _RESET)


def _is_available(state: HealthState, provider: ProviderId, now_ms: int) -> bool:
    until = _health_of(state, provider).cooldown_until_ms
    return until is None or now_ms >= until


@icontract.require(health_well_formed)
@icontract.ensure(
    lambda state, provider, result: result or _health_of(state, provider).consecutive_failures > 0,
    "a provider with no failures is always available",
)
def is_available(state: HealthState, provider: ProviderId, now_ms: int) -> bool:
    """Whether later calls may use ``provider`` at ``now_ms`` (no cooldown, or it has ended)."""
    return _is_available(state, provider, now_ms)


def _earliest_return_ms(state: HealthState, providers: tuple[ProviderId, ...], now_ms: int) -> int | None:
    times = [max(now_ms, _health_of(state, p).cooldown_until_ms or now_ms) for p in providers]
    return min(times) if times else None


@icontract.require(health_well_formed)
@icontract.ensure(lambda providers, result: (result is None) == (len(providers) == 0))
@icontract.ensure(lambda now_ms, result: result is None or result >= now_ms)
@icontract.ensure(
    lambda state, providers, result: result is None or any(_is_available(state, p, result) for p in providers),
    "at the instant returned, one of the providers is available",
)
def earliest_return_ms(state: HealthState, providers: tuple[ProviderId, ...], now_ms: int) -> int | None:
    """The earliest instant ``>= now_ms`` at which one of ``providers`` is available: ``now_ms`` if one
    is available now, else the soonest cooldown end; None when ``providers`` is empty. This is the
    ``earliest_at`` of the NoEligibleProvider the router raises when every provider is cooling."""
    return _earliest_return_ms(state, providers, now_ms)


def _filter_healthy(
    chain: tuple[ChainEntry, ...], state: HealthState, now_ms: int
) -> tuple[tuple[ChainEntry, ...], tuple[ChainEntry, ...]]:
    kept: list[ChainEntry] = []
    skipped: list[ChainEntry] = []
    for entry in chain:  # one pass, each entry judged once (it runs per routed call)
        (kept if _is_available(state, entry.provider, now_ms) else skipped).append(entry)
    return tuple(kept), tuple(skipped)


@icontract.require(health_well_formed)
@icontract.ensure(lambda chain, result: len(result[0]) + len(result[1]) == len(chain))
@icontract.ensure(lambda state, now_ms, result: all(_is_available(state, e.provider, now_ms) for e in result[0]))
@icontract.ensure(lambda state, now_ms, result: not any(_is_available(state, e.provider, now_ms) for e in result[1]))
@icontract.ensure(lambda chain, result: result[0] == tuple(e for e in chain if e in result[0]), "keeps chain order")
def filter_healthy(
    chain: tuple[ChainEntry, ...], state: HealthState, now_ms: int
) -> tuple[tuple[ChainEntry, ...], tuple[ChainEntry, ...]]:
    """Split ``chain`` into (available, cooling), both in chain order. When ``kept`` is empty the
    router raises NoEligibleProvider with ``earliest_at`` from :func:`earliest_return_ms` over the
    skipped providers (converted to its clock)."""
    return _filter_healthy(chain, state, now_ms)
