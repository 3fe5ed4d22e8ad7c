"""Provider health: consecutive failures, cooldowns, resets, and a reference model."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from routeproof.core.health import (
    HealthConfig,
    HealthState,
    earliest_return_ms,
    filter_healthy,
    is_available,
    new_health,
    record_failure,
    record_success,
)
from routeproof.core.identity import ProviderName
from routeproof.core.types import ChainEntry, ProviderKind

A, OAI, L = ProviderKind.ANTHROPIC, ProviderKind.OPENAI, ProviderKind.LOCAL
CFG = HealthConfig(failure_threshold=2, cooldown_ms=1_000)


def _chain(*kinds: ProviderKind) -> tuple[ChainEntry, ...]:
    return tuple(ChainEntry(provider=k, model="m", fallback_position=i) for i, k in enumerate(kinds))


def test_defaults_follow_the_contract() -> None:
    """The default threshold is FAILURE_THRESHOLD = 2."""
    assert HealthConfig().failure_threshold == 2
    assert new_health().config == HealthConfig()


def test_bad_config_is_refused() -> None:
    """A threshold below 1 or a negative cooldown is a ValueError naming the value."""
    with pytest.raises(ValueError, match="0"):
        HealthConfig(failure_threshold=0)
    with pytest.raises(ValueError, match="-1"):
        HealthConfig(cooldown_ms=-1)


def test_one_failure_keeps_provider_two_skip_it() -> None:
    """FALSIFY-MPA-002 at the core: after 2 failures A is skipped and the next call goes to B."""
    state = record_failure(new_health(CFG), A, 0)
    assert is_available(state, A, 1)
    state = record_failure(state, A, 10)
    assert not is_available(state, A, 11)
    kept, skipped = filter_healthy(_chain(A, OAI), state, 11)
    assert [e.provider for e in kept] == [OAI]
    assert [e.provider for e in skipped] == [A]


def test_cooldown_ends_and_next_failure_restarts_it() -> None:
    """A provider returns when its cooldown ends; one more failure cools it again at once."""
    state = record_failure(record_failure(new_health(CFG), A, 0), A, 0)
    assert not is_available(state, A, 999)
    assert is_available(state, A, 1_000)
    state = record_failure(state, A, 1_500)
    assert not is_available(state, A, 2_499)
    assert is_available(state, A, 2_500)


def test_later_failure_never_shortens_cooldown() -> None:
    """A failure reported late (an earlier now_ms) keeps the later cooldown end."""
    state = record_failure(record_failure(new_health(CFG), A, 5_000), A, 5_000)
    state = record_failure(state, A, 100)
    assert not is_available(state, A, 5_999)
    assert earliest_return_ms(state, (A,), 0) == 6_000


def test_success_resets() -> None:
    """A success resets the count and ends the cooldown."""
    state = record_failure(record_failure(new_health(CFG), A, 0), A, 0)
    state = record_success(state, A)
    assert is_available(state, A, 1)
    assert is_available(record_failure(state, A, 2), A, 3)


def test_earliest_return_when_all_cooling() -> None:
    """When every provider cools, earliest_return_ms is the soonest cooldown end."""
    state = new_health(CFG)
    for when, kind in ((0, A), (300, OAI)):
        state = record_failure(record_failure(state, kind, when), kind, when)
    kept, skipped = filter_healthy(_chain(A, OAI), state, 500)
    assert kept == ()
    assert earliest_return_ms(state, tuple(e.provider for e in skipped), 500) == 1_000
    assert earliest_return_ms(state, (A, L), 500) == 500
    assert earliest_return_ms(state, (), 500) is None


# --- reference model ------------------------------------------------------------------------------

events = st.lists(
    st.tuples(
        st.sampled_from(("fail", "ok", "tick")),
        st.sampled_from((A, OAI, L)),
        st.integers(0, 1_500),
        st.integers(0, 800),
    ),
    max_size=40,
)


@given(st.integers(1, 4), st.integers(0, 2_000), events)
@example(1, 0, [("fail", A, 1, 0), ("fail", A, 0, 1)])  # a late failure must not shorten the cooldown
def test_skip_set_matches_reference_model(
    threshold: int, cooldown: int, history: list[tuple[str, ProviderKind, int, int]]
) -> None:
    """Over random histories (failures may be reported late) the skipped set equals a plain dict model."""
    state: HealthState = new_health(HealthConfig(failure_threshold=threshold, cooldown_ms=cooldown))
    count: dict[ProviderKind, int] = {}
    until: dict[ProviderKind, int] = {}
    now = 0
    chain = _chain(A, OAI, L)
    for kind, provider, step, lag in history:
        now += step
        if kind == "fail":
            failed_at = max(0, now - lag)  # a slow call's failure is stamped when it started
            state = record_failure(state, provider, failed_at)
            count[provider] = count.get(provider, 0) + 1
            if count[provider] >= threshold:
                until[provider] = max(until.get(provider, failed_at + cooldown), failed_at + cooldown)
        elif kind == "ok":
            state = record_success(state, provider)
            count.pop(provider, None)
            until.pop(provider, None)
        for p, end in until.items():  # the state's cooldown ends exactly where the model's does
            assert is_available(state, p, end)
            assert end <= now or not is_available(state, p, end - 1)
        expected_skip = {p for p in (A, OAI, L) if p in until and now < until[p]}
        _, skipped = filter_healthy(chain, state, now)
        assert {e.provider for e in skipped} == expected_skip
        cooling_ends = [until[p] for p in expected_skip]
        if len(expected_skip) == 3:
            assert earliest_return_ms(state, (A, OAI, L), now) == min(cooling_ends)
        else:
            assert earliest_return_ms(state, (A, OAI, L), now) == now


def test_an_equal_name_that_is_another_object_updates_its_entry() -> None:
    """A provider name read back from a store or a config is equal to, not the same object as, the one in
    the state: it updates that entry, never adds a second (CrossHair found the identity test in _with)."""
    held = ProviderName("vllm-a", kind=ProviderKind.VLLM)
    state = record_failure(new_health(HealthConfig(failure_threshold=1, cooldown_ms=0)), held, 0)
    again = record_failure(state, ProviderName("vllm-a", kind=ProviderKind.VLLM), 0)
    assert [(str(k), h.consecutive_failures) for k, h in again.providers] == [("vllm-a", 2)]
    healed = record_success(again, ProviderName("vllm-a", kind=ProviderKind.VLLM))
    assert [(str(k), h.consecutive_failures) for k, h in healed.providers] == [("vllm-a", 0)]
