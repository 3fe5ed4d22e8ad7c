"""Seed 003's Kani harnesses, enumerated exhaustively at their bounds (CrossHair/Hypothesis go beyond).

Kani checks a harness over *every* input up to a bound. Where that space is finite here, these tests
walk all of it and assert the harness's property in the test body. The backoff and kernel walks go
through the contract-decorated public functions (every icontract condition is checked on every input
too); the tier and ledger walks, a million and a few hundred thousand calls, go through the
undecorated ``_impl`` the public function wraps (the same code, without icontract's per-call cost:
the decorated walk of KANI-MPA-001 took 271 s) and check the contract's conditions in the body:

* KANI-MPA-001 (bound 4, exhaustive): every chain of 0..4 entries over every ``ProviderKind``, for
  every ``PrivacyTier``, and every endpoint class of the chain's kinds (absent, or each tier: an
  endpoint that lies about being Sovereign included).
* KANI-MPA-002 (bound 8): every sequence of up to 8 ledger operations (reserve 1/2/3, settle the
  oldest open reservation at its full amount or at 0: ``commit`` and ``release`` are both
  ``_settle``) on a session limit of 4.
* KANI-MPA-003 (bound 16): every attempt 0..16, base 1..16, cap base..40, for the draws u in
  {0, 2^-53, 0.5, 1 - 2^-53, 1} (u is a float: the result is monotone in u, so 1 is the worst case).
* KANI-MPA-005 (bound 8 steps per provider chain of up to 3): every sequence of attempt outcomes from
  {success, 400, 503, 429 with Retry-After, hang past the attempt timeout} the kernel can meet.

KANI-MPA-004 (translation round trip) has no finite space at any bound (message trees hold strings),
so it stays with Hypothesis' round-trip laws.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest

from routeproof.core.backoff import full_jitter_ms
from routeproof.core.constants import MAX_ATTEMPTS_PER_PROVIDER
from routeproof.core.kernel import (
    Action,
    AttemptFailed,
    AttemptSucceeded,
    CallProvider,
    Event,
    Fail,
    KernelState,
    Sleep,
    SleepDone,
    Succeed,
    start,
    step,
)
from routeproof.core.ledger import (  # the undecorated impls: see the module docstring
    BudgetLimits,
    LedgerState,
    Reservation,
    _settle,
    _try_reserve,
    new_ledger,
    well_formed,
)
from routeproof.core.tiers import NETWORK_KINDS, _filter_chain, allowed_kinds
from routeproof.core.types import AttemptFailure, AttemptFailureKind, ChainEntry, PrivacyTier, ProviderKind
from tests.core.kernel_sim import chain, plan

pytestmark = pytest.mark.exhaustive

# --- KANI-MPA-001: Sovereign blocks egress, bound 4 ---------------------------------------------


def _endpoint_maps(kinds: set[ProviderKind]) -> Iterator[dict[ProviderKind, PrivacyTier]]:
    ordered = sorted(kinds, key=lambda k: k.value)
    for classes in itertools.product([None, *PrivacyTier], repeat=len(ordered)):
        yield {k: c for k, c in zip(ordered, classes, strict=True) if c is not None}


def test_kani_mpa_001_sovereign_blocks_egress_exhaustive_to_bound_4() -> None:
    """KANI-MPA-001, exhaustive: no chain of <= 4 entries, tier or endpoint class lets a kept entry egress."""
    checked = 0
    for length in range(5):
        for kinds in itertools.product(list(ProviderKind), repeat=length):
            entries = tuple(ChainEntry(provider=k, model="m", fallback_position=i) for i, k in enumerate(kinds))
            for endpoints in _endpoint_maps(set(kinds)):
                for tier in PrivacyTier:
                    kept, skipped = _filter_chain(entries, tier, endpoints)
                    checked += 1
                    assert len(kept) + len(skipped) == len(entries)
                    assert all(any(k is e for e in entries) for k in kept)
                    for entry in kept:
                        assert isinstance(entry.provider, ProviderKind)  # a chain of kinds
                        assert entry.provider in allowed_kinds(tier)
                        assert endpoints.get(entry.provider, PrivacyTier.SOVEREIGN) <= tier
                        if tier is PrivacyTier.SOVEREIGN:
                            assert entry.provider not in NETWORK_KINDS
    assert checked == 3 * sum(
        4 ** len(set(kinds)) for length in range(5) for kinds in itertools.product(list(ProviderKind), repeat=length)
    )


# --- KANI-MPA-002: cumulative cost bounded, bound 8 ----------------------------------------------

LIMIT = 4
SESSION = "s"
PROVIDER = ProviderKind.ANTHROPIC


def _ops(state: LedgerState) -> Iterator[tuple[str, LedgerState]]:
    for amount in (1, 2, 3):
        new_state, outcome = _try_reserve(
            state, session_id=SESSION, provider=PROVIDER, amount_pico_usd=amount, day_index=0, month_index=0
        )
        yield f"reserve {amount} -> {'ok' if isinstance(outcome, Reservation) else 'refused'}", new_state
    if state.open_reservations:
        oldest = state.open_reservations[0]
        yield f"commit {oldest.amount_pico_usd}", _settle(state, oldest, oldest.amount_pico_usd)
        yield "commit 0", _settle(state, oldest, 0)


def _session(state: LedgerState) -> tuple[int, int]:
    for session_id, account in state.sessions:
        if session_id == SESSION:
            return account.spent_pico_usd, account.reserved_pico_usd
    return 0, 0


def test_kani_mpa_002_cost_never_exceeds_budget_exhaustive_to_bound_8() -> None:
    """KANI-MPA-002, exhaustive: every <= 8-step reserve/settle sequence keeps spent + reserved <= limit."""
    frontier = [new_ledger(BudgetLimits(session_limit_pico_usd=LIMIT, monthly_limit_pico_usd=LIMIT + 1))]
    sequences = 0
    for _depth in range(8):
        successors: list[LedgerState] = []
        for state in frontier:
            for _label, new_state in _ops(state):
                sequences += 1
                spent, reserved = _session(new_state)
                assert well_formed(new_state)
                assert spent + reserved <= LIMIT  # commits never exceed their reservation here
                assert new_state.monthly.spent_pico_usd + new_state.monthly.reserved_pico_usd <= LIMIT + 1
                assert new_state.overrun_pico_usd == 0
                successors.append(new_state)
        frontier = successors
    assert sequences > 100_000  # every path is walked, none merged


# --- KANI-MPA-003: backoff delay bounded by cap, bound 16 ----------------------------------------

DRAWS = (0.0, 2.0**-53, 0.5, 1.0 - 2.0**-53, 1.0)


def test_kani_mpa_003_backoff_capped_exhaustive_to_bound_16() -> None:
    """KANI-MPA-003, exhaustive over the integers: every attempt 0..16, base 1..16, cap base..40 stays <= cap."""
    checked = 0
    for attempt in range(17):
        for base_ms in range(1, 17):
            for cap_ms in range(base_ms, 41):
                for u in DRAWS:
                    delay = full_jitter_ms(attempt, base_ms, cap_ms, u)
                    checked += 1
                    assert 0 <= delay <= min(cap_ms, base_ms << attempt)
                assert full_jitter_ms(attempt, base_ms, cap_ms, 1.0) == min(cap_ms, base_ms << attempt)
    assert checked == 17 * sum(41 - b for b in range(1, 17)) * len(DRAWS)


# --- KANI-MPA-005: failover terminates, bounded steps --------------------------------------------

_FAILURES: tuple[AttemptFailure | None, ...] = (
    None,  # success
    AttemptFailure(kind=AttemptFailureKind.HTTP_STATUS, http_status=400),
    AttemptFailure(kind=AttemptFailureKind.HTTP_STATUS, http_status=503),
    AttemptFailure(kind=AttemptFailureKind.HTTP_STATUS, http_status=429, retry_after_ms=1_000),
    AttemptFailure(kind=AttemptFailureKind.ATTEMPT_TIMEOUT),
)


def _explore(state: KernelState, action: Action, now_ms: int, actions: int) -> Iterator[tuple[Action, int]]:
    """Every way the call can end from here, with the number of actions it took."""
    if isinstance(action, Succeed | Fail):
        yield action, actions
        return
    assert actions <= 2 * MAX_ATTEMPTS_PER_PROVIDER * len(state.plan.chain) + 1, "no end in sight"
    events: list[Event]
    if isinstance(action, Sleep):
        events = [SleepDone(now_ms=now_ms + action.duration_ms)]
    else:
        assert isinstance(action, CallProvider)
        at = now_ms + min(100, action.timeout_ms)
        events = [
            AttemptSucceeded(now_ms=at) if failure is None else AttemptFailed(now_ms=at, failure=failure, draw=0.5)
            for failure in _FAILURES
        ]
    for event in events:
        new_state, new_action = step(state, event)
        yield from _explore(new_state, new_action, event.now_ms, actions + 1)


def test_kani_mpa_005_failover_terminates_exhaustive() -> None:
    """KANI-MPA-005, exhaustive: for chains of 1..3 providers every outcome sequence ends within 2x3xN+1 actions."""
    kinds = (ProviderKind.ANTHROPIC, ProviderKind.OPENAI, ProviderKind.BEDROCK)
    for length in range(1, 4):
        call_plan = plan(chain(*kinds[:length]))
        state, action = start(call_plan, 0)
        ends = list(_explore(state, action, 0, 1))
        assert ends, "at least one ending"
        for final, actions in ends:
            assert isinstance(final, Succeed | Fail)
            assert actions <= 2 * MAX_ATTEMPTS_PER_PROVIDER * length + 1
            assert len(final.records) <= MAX_ATTEMPTS_PER_PROVIDER * length
