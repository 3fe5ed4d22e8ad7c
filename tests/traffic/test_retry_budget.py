"""The retry budget (core/retry_budget.py, gRPC A6): the bucket's arithmetic, and a spent bucket
turning a retry into a recorded failover through the kernel."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given
from hypothesis import strategies as st

from routeproof.core.retry_budget import (
    MILLI,
    RetryBudgetConfig,
    after_failure,
    after_success,
    costs_token,
    retry_allowed,
)
from routeproof.core.types import AttemptFailure, AttemptFailureKind, AttemptStatus
from routeproof.errors import AllProvidersFailed
from routeproof.testing import Failure, ScriptedProvider
from routeproof.traffic import TrafficConfig
from routeproof.traffic_store.memory import MemoryTrafficStore
from tests.traffic.support import policy, request, resolved, router

pytestmark = [pytest.mark.looptime(end=600)]

DEFAULT = RetryBudgetConfig()
FIVE_OH_THREE = AttemptFailure(kind=AttemptFailureKind.HTTP_STATUS, http_status=503, message="busy")


def test_defaults_are_grpc_a6s() -> None:
    """max_tokens 10, token_ratio 0.1: the stated defaults."""
    assert (DEFAULT.max_tokens, DEFAULT.token_ratio_milli) == (10, 100)


def test_retries_stop_after_half_the_bucket() -> None:
    """From a full bucket of 10, the 5th consecutive failure leaves 5 tokens: no more retries."""
    tokens = DEFAULT.capacity_milli
    allowed = []
    for _ in range(6):
        tokens = after_failure(DEFAULT, tokens)
        allowed.append(retry_allowed(DEFAULT, tokens))
    assert allowed == [True, True, True, True, False, False]


@given(st.integers(0, 10 * MILLI), st.lists(st.booleans(), max_size=50))
def test_the_bucket_stays_in_range(start: int, outcomes: list[bool]) -> None:
    """Any run of successes and failures keeps the level within [0, capacity]."""
    tokens = start
    for ok in outcomes:
        tokens = after_success(DEFAULT, tokens) if ok else after_failure(DEFAULT, tokens)
        assert 0 <= tokens <= DEFAULT.capacity_milli


def test_rare_failures_never_drain_the_bucket() -> None:
    """One failure in a hundred attempts (1 %) keeps every retry allowed."""
    tokens = DEFAULT.capacity_milli
    for i in range(10_000):
        if i % 100 == 0:
            tokens = after_failure(DEFAULT, tokens)
            assert retry_allowed(DEFAULT, tokens)
        else:
            tokens = after_success(DEFAULT, tokens)


def test_terminal_failures_cost_nothing() -> None:
    """A 400 is never retried, so it never costs a token; a 503 does."""
    bad = AttemptFailure(kind=AttemptFailureKind.HTTP_STATUS, http_status=400, message="bad")
    assert (costs_token(bad), costs_token(FIVE_OH_THREE)) == (False, True)


def test_bad_config_names_the_value() -> None:
    """A ratio above 1 is refused at construction, naming it."""
    with pytest.raises(ValueError, match="got 1500"):
        RetryBudgetConfig(token_ratio_milli=1500)


@pytest.mark.asyncio
async def test_a_spent_budget_fails_over_with_the_reason_recorded() -> None:
    """With the bucket spent, a 503 on the primary is not retried: the record says throttled and
    the call fails over to the second deployment at once."""
    down = ScriptedProvider(name="a", default=Failure(failure=FIVE_OH_THREE))
    spare = ScriptedProvider(name="b")
    traffic = TrafficConfig(retry_budget=RetryBudgetConfig(max_tokens=2))
    async with router([down, spare], traffic) as r:
        deadline = asyncio.get_running_loop().time() + 20
        tenant = policy(["a", "b"])
        second = await r.call_provider(request(), resolved(tenant), deadline, tenant)  # 2 tokens: 1 left, <= half
        a_records = [x for x in second.attempts if x.provider.value == "a"]
        assert len(a_records) == 1
        assert a_records[0].status is AttemptStatus.FAILED_OVER
        assert a_records[0].retry_throttled
        assert second.provider is not None
        assert second.provider.value == "b"


@pytest.mark.asyncio
async def test_without_a_budget_retries_are_unchanged() -> None:
    """No retry budget: a down provider gets its three attempts per call, every call."""
    down = ScriptedProvider(name="a", default=Failure(failure=FIVE_OH_THREE))
    async with router([down], TrafficConfig()) as r:
        tenant = policy(["a"])
        for _ in range(3):
            with pytest.raises(AllProvidersFailed) as caught:
                await r.call_provider(request(), resolved(tenant), asyncio.get_running_loop().time() + 20, tenant)
            assert len(caught.value.attempts) == 3


@pytest.mark.asyncio
async def test_a_routed_success_refunds_the_providers_bucket() -> None:
    """A 503 then a success through the router: the bucket is charged one token and refunded the
    ratio (Call only awaits the refund when a budget is configured; issue 25)."""
    config = RetryBudgetConfig(max_tokens=10)
    flaky = ScriptedProvider([Failure(failure=FIVE_OH_THREE)], name="a")
    store = MemoryTrafficStore()
    async with router([flaky], TrafficConfig(retry_budget=config), store=store) as r:
        tenant = policy(["a"])
        answer = await r.call_provider(request(), resolved(tenant), asyncio.get_running_loop().time() + 20, tenant)
        assert [x.status for x in answer.attempts] == [AttemptStatus.RETRIED_AFTER_5XX, AttemptStatus.SUCCEEDED]
        level = await store.retry_tokens_milli(answer.attempts[0].provider.value, config)  # its instance's name
    assert level == after_success(config, after_failure(config, config.capacity_milli))
    assert level != after_failure(config, config.capacity_milli)  # the refund is seen
