"""The Router's grouped options (routeproof.router_options): units in the names, checked when made, and the
old flat keywords still accepted for this release with a DeprecationWarning naming the new spelling."""

from __future__ import annotations

import dataclasses

import pytest

from routeproof import BudgetOptions, ConfigError, CoolingPolicy, HealthOptions, LimitOptions, Router
from routeproof.core.pricing import PricingTable
from routeproof.stores import BudgetLimits, HealthConfig, LatencyConfig, MemoryHealthStore
from routeproof.testing import ScriptedProvider

PROVIDER = ScriptedProvider(name="local")


def test_the_three_values_are_frozen_and_hashable() -> None:
    """Values, not builders: frozen (an assignment raises) and usable as dict keys."""
    limits = LimitOptions(attempt_timeout_ms=500, provider_timeouts_ms={"openai": 200})
    with pytest.raises(dataclasses.FrozenInstanceError):
        limits.attempt_timeout_ms = 1  # type: ignore[misc]  # the point: it is frozen
    assert hash(limits) == hash(LimitOptions(attempt_timeout_ms=500, provider_timeouts_ms={"openai": 200}))
    assert {BudgetOptions(), HealthOptions()}  # hashable


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"attempt_timeout_ms": 0}, "attempt_timeout_ms"),
        ({"attempt_timeout_ms": 30_001}, "attempt_timeout_ms"),
        ({"attempt_timeout_ms": 2.5}, "attempt_timeout_ms"),
        ({"attempt_timeout_ms": True}, "attempt_timeout_ms"),
        ({"stream_idle_timeout_ms": 0}, "stream_idle_timeout_ms"),
        ({"max_attempts_per_provider": 4}, "max_attempts_per_provider"),
        ({"provider_timeouts_ms": [("openai", 5)]}, "provider_timeouts_ms"),
    ],
)
def test_bad_limits_fail_when_made_naming_the_field(fields: dict[str, object], named: str) -> None:
    """A bad limit is a ConfigError when the value is made, naming the field and the value."""
    with pytest.raises(ConfigError, match=named):
        LimitOptions(**fields)  # type: ignore[arg-type]  # the point: bad values


def test_new_spelling_reaches_the_router_unchanged() -> None:
    """The grouped values set what the flat keywords used to: timeouts in ms, attempts, cooling, health."""
    store = MemoryHealthStore(HealthConfig(failure_threshold=5))
    router = Router(
        [PROVIDER],
        limits=LimitOptions(attempt_timeout_ms=1_500, stream_idle_timeout_ms=2_000, max_attempts_per_provider=2),
        budgets=BudgetOptions(pricing=PricingTable(prices={}), limits=BudgetLimits(session_limit_pico_usd=10)),
        health=HealthOptions(cooling=CoolingPolicy.SKIP, health_store=store, latency=LatencyConfig()),
    )
    assert (router._attempt_timeout_ms, router._stream_idle_timeout_s) == (1_500, 2.0)
    assert router._max_attempts_per_provider == 2
    assert router._cooling is CoolingPolicy.SKIP
    assert router._health_store is store
    assert router.ledger is not None


def test_old_keywords_still_work_and_warn_with_the_new_spelling() -> None:
    """Each group's old keywords give the same router, with one DeprecationWarning naming the new field."""
    with pytest.warns(DeprecationWarning, match=r"limits=LimitOptions\(attempt_timeout_ms=, max_in_flight=\)"):
        old = Router([PROVIDER], attempt_timeout_s=1.5, max_in_flight=4)
    assert old._attempt_timeout_ms == 1_500
    with pytest.warns(DeprecationWarning, match=r"budgets=BudgetOptions\(pricing=, limits=\)"):
        Router([PROVIDER], pricing=PricingTable(prices={}), budget=BudgetLimits(session_limit_pico_usd=10))
    with pytest.warns(DeprecationWarning, match=r"health=HealthOptions\(cooling=, config=\)"):
        skip = Router([PROVIDER], health=HealthConfig(failure_threshold=5), cooling=CoolingPolicy.SKIP)
    assert skip._cooling is CoolingPolicy.SKIP


def test_an_old_keyword_beside_its_new_group_is_refused() -> None:
    """``limits=`` and ``attempt_timeout_s=`` together would leave one of them unused: refused."""
    with pytest.raises(ConfigError, match="attempt_timeout_s"):
        Router([PROVIDER], limits=LimitOptions(), attempt_timeout_s=1.0)


def test_an_unknown_keyword_is_a_type_error_and_a_wrong_group_type_names_it() -> None:
    """A typo is not swallowed by the deprecated keywords; a group of the wrong type is named."""
    with pytest.raises(TypeError, match="attempt_timeout"):
        Router([PROVIDER], attempt_timeout=1.0)  # type: ignore[call-arg]  # the point: a typo
    with pytest.raises(ConfigError, match="limits must be a LimitOptions"):
        Router([PROVIDER], limits={"attempt_timeout_ms": 5})  # type: ignore[arg-type]  # the point: a dict
