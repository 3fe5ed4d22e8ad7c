"""The budget ledger: reservation, commit, release, scopes, period roll-over, and a stateful model."""

from __future__ import annotations

import icontract
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from routeproof.core.ledger import (
    Account,
    BudgetLimits,
    BudgetRefusal,
    BudgetScope,
    LedgerState,
    Reservation,
    commit,
    new_ledger,
    periods_at,
    provider_daily_account,
    release,
    reserve,
    session_account,
    try_reserve,
    well_formed,
    with_limits,
)
from routeproof.core.types import ProviderKind
from routeproof.errors import BudgetExhausted

CENT = 10**10  # $0.01 in pico-USD
A, OAI = ProviderKind.ANTHROPIC, ProviderKind.OPENAI


def _reserve(
    state: LedgerState, amount: int, *, session: str = "s", provider: ProviderKind = A, day: int = 0, month: int = 0
) -> tuple[LedgerState, Reservation]:
    return reserve(
        state, session_id=session, provider=provider, amount_pico_usd=amount, day_index=day, month_index=month
    )


def test_reserve_then_commit_books_real_cost_and_frees_the_rest() -> None:
    """A committed call books its actual cost; nothing stays reserved."""
    state, r = _reserve(new_ledger(BudgetLimits(session_limit_pico_usd=CENT)), 6 * CENT // 10)
    assert session_account(state, "s") == Account(spent_pico_usd=0, reserved_pico_usd=6 * CENT // 10)
    state = commit(state, r, CENT // 10)
    assert session_account(state, "s") == Account(spent_pico_usd=CENT // 10, reserved_pico_usd=0)
    assert state.open_reservations == ()


def test_session_limit_refuses_with_scope_limit_and_request() -> None:
    """A reservation over the session headroom raises BudgetExhausted('session', limit, requested)."""
    state, _ = _reserve(new_ledger(BudgetLimits(session_limit_pico_usd=CENT)), 6 * CENT // 10)
    with pytest.raises(BudgetExhausted) as info:
        _reserve(state, 5 * CENT // 10)
    assert info.value.scope == "session"
    assert info.value.limit == "$0.01"
    assert info.value.requested == "$0.005"
    assert "$0.006 reserved" in str(info.value.spent)


def test_limit_is_inclusive() -> None:
    """Exactly filling the limit is allowed; one pico-USD more is not."""
    state, _ = _reserve(new_ledger(BudgetLimits(session_limit_pico_usd=CENT)), CENT)
    with pytest.raises(BudgetExhausted):
        _reserve(state, 1)
    state2, _ = _reserve(new_ledger(BudgetLimits(session_limit_pico_usd=CENT)), CENT - 1)
    _reserve(state2, 1)


def test_release_frees_reservation_and_books_billed() -> None:
    """A failed attempt frees its reservation and books only what the provider billed."""
    state, r = _reserve(new_ledger(BudgetLimits()), 500)
    state = release(state, r, 7)
    assert session_account(state, "s") == Account(spent_pico_usd=7, reserved_pico_usd=0)
    state, r2 = _reserve(state, 500)
    assert session_account(release(state, r2), "s").spent_pico_usd == 7


def test_double_settle_is_refused() -> None:
    """A reservation can be committed or released once; a second time violates the precondition."""
    state, r = _reserve(new_ledger(BudgetLimits()), 500)
    state = commit(state, r, 100)
    with pytest.raises(icontract.ViolationError):
        release(state, r)


def test_turn_warning_is_not_a_refusal() -> None:
    """Above the per-turn threshold the reservation is granted and flagged."""
    limits = BudgetLimits(turn_warning_pico_usd=100)
    _, small = _reserve(new_ledger(limits), 100)
    _, big = _reserve(new_ledger(limits), 101)
    assert not small.turn_warning
    assert big.turn_warning


def test_provider_daily_refusal_lets_another_provider_go_on() -> None:
    """The daily limit of Anthropic refuses with scope provider_daily; OpenAI still fits."""
    state = new_ledger(BudgetLimits(provider_daily_pico_usd=((A, 1000),)))
    state, r = _reserve(state, 900, provider=A)
    state = commit(state, r, 900)
    state, outcome = try_reserve(state, session_id="s", provider=A, amount_pico_usd=200, day_index=0, month_index=0)
    assert isinstance(outcome, BudgetRefusal)
    assert outcome.scope is BudgetScope.PROVIDER_DAILY
    with pytest.raises(BudgetExhausted, match="provider_daily"):
        _reserve(state, 200, provider=A)
    state, _ = _reserve(state, 200, provider=OAI)


def test_daily_limit_rolls_over_with_the_day_index() -> None:
    """A new day index empties the daily spend; in-flight reservations carry over."""
    state = new_ledger(BudgetLimits(provider_daily_pico_usd=((A, 1000),)))
    state, r = _reserve(state, 600)
    state = commit(state, r, 600)
    state, held = _reserve(state, 300)
    with pytest.raises(BudgetExhausted):
        _reserve(state, 200)
    state, r3 = _reserve(state, 700, day=1)
    assert provider_daily_account(state, A) == Account(spent_pico_usd=0, reserved_pico_usd=1000)
    state = commit(state, held, 300)
    assert provider_daily_account(state, A).spent_pico_usd == 300
    assert well_formed(commit(state, r3, 0))


def test_day_index_never_goes_back() -> None:
    """An earlier day index (a clock stepping back) does not reopen or reset anything."""
    state = new_ledger(BudgetLimits(provider_daily_pico_usd=((A, 1000),)), day_index=5)
    state, r = _reserve(state, 1000, day=5)
    state = commit(state, r, 1000)
    with pytest.raises(BudgetExhausted):
        _reserve(state, 1, day=4)
    assert state.day_index == 5


def test_monthly_limit_is_global_and_rolls_over() -> None:
    """The monthly limit counts every session; a new month index resets it."""
    state = new_ledger(BudgetLimits(monthly_limit_pico_usd=1000))
    state, r = _reserve(state, 800, session="a")
    state = commit(state, r, 800)
    with pytest.raises(BudgetExhausted, match="monthly"):
        _reserve(state, 300, session="b")
    state, _ = _reserve(state, 300, session="b", month=1)


def test_hard_scopes_are_reported_before_provider_daily() -> None:
    """When both the session and the provider's day are full, the refusal names the session."""
    state = new_ledger(BudgetLimits(session_limit_pico_usd=100, provider_daily_pico_usd=((A, 100),)))
    state, r = _reserve(state, 100)
    with pytest.raises(BudgetExhausted, match="'session'"):
        _reserve(commit(state, r, 100), 1)


def test_overrun_is_booked_and_counted() -> None:
    """A bill above the reservation is booked in full and counted as overrun, never hidden."""
    state, r = _reserve(new_ledger(BudgetLimits(session_limit_pico_usd=100)), 100)
    state = commit(state, r, 150)
    assert session_account(state, "s").spent_pico_usd == 150
    assert state.overrun_pico_usd == 50
    with pytest.raises(BudgetExhausted):
        _reserve(state, 0)


def test_monthly_hard_stop_needs_explicit_override() -> None:
    """After a monthly refusal, with_limits raising the limit lets the call through; lowering below spend is refused."""
    state = new_ledger(BudgetLimits(monthly_limit_pico_usd=1000))
    state, r = _reserve(state, 1000)
    state = commit(state, r, 900)
    with pytest.raises(BudgetExhausted, match="monthly"):
        _reserve(state, 200)
    raised = with_limits(state, BudgetLimits(monthly_limit_pico_usd=2000))
    _reserve(raised, 200)
    with pytest.raises(icontract.ViolationError):
        with_limits(state, BudgetLimits(monthly_limit_pico_usd=899))


def test_periods_at_known_dates() -> None:
    """Epoch 0 is day 0 of January 1970; 2025-11-30 and 2024-02-29 map to their months."""
    assert periods_at(0) == (0, 1970 * 12)
    assert periods_at(1_764_460_800_000) == (20_422, 2025 * 12 + 10)  # 2025-11-30T00:00Z
    assert periods_at(1_709_164_800_000)[1] == 2024 * 12 + 1  # 2024-02-29
    assert periods_at(1_709_251_199_999)[1] == 2024 * 12 + 1  # 2024-02-29T23:59:59.999Z
    assert periods_at(1_709_251_200_000)[1] == 2024 * 12 + 2  # 2024-03-01


def test_negative_limits_are_refused() -> None:
    """A negative limit violates new_ledger's precondition."""
    with pytest.raises(icontract.ViolationError):
        new_ledger(BudgetLimits(session_limit_pico_usd=-1))


# --- stateful: many concurrent calls interleaved ---------------------------------------------------

SESSIONS = ("s1", "s2", "s3")
PROVIDERS = (A, OAI, ProviderKind.BEDROCK)


class LedgerMachine(RuleBasedStateMachine):
    """Calls reserve, then commit or release, in any interleaving, with periods advancing."""

    def __init__(self) -> None:
        super().__init__()
        self.state = new_ledger(BudgetLimits())
        self.limits = BudgetLimits()
        self.open: list[Reservation] = []
        self.session_spent: dict[str, int] = dict.fromkeys(SESSIONS, 0)
        self.day = 0
        self.month = 0

    @initialize(
        session=st.integers(0, 5_000),
        monthly=st.integers(0, 10_000),
        daily=st.lists(st.integers(0, 3_000), min_size=3, max_size=3),
        warn=st.one_of(st.none(), st.integers(0, 1_000)),
    )
    def setup(self, session: int, monthly: int, daily: list[int], warn: int | None) -> None:
        """Start from random limits."""
        self.limits = BudgetLimits(
            turn_warning_pico_usd=warn,
            session_limit_pico_usd=session,
            monthly_limit_pico_usd=monthly,
            provider_daily_pico_usd=tuple(zip(PROVIDERS, daily, strict=True)),
        )
        self.state = new_ledger(self.limits)

    @rule(session=st.sampled_from(SESSIONS), provider=st.sampled_from(PROVIDERS), amount=st.integers(0, 2_000))
    def reserve_call(self, session: str, provider: ProviderKind, amount: int) -> None:
        """A call reserves its worst case, or is refused with a named scope when it does not fit."""
        self.state, outcome = try_reserve(
            self.state,
            session_id=session,
            provider=provider,
            amount_pico_usd=amount,
            day_index=self.day,
            month_index=self.month,
        )
        if isinstance(outcome, Reservation):
            self.open.append(outcome)
        else:
            assert outcome.scope in {BudgetScope.SESSION, BudgetScope.MONTHLY, BudgetScope.PROVIDER_DAILY}

    @precondition(lambda self: bool(self.open))
    @rule(index=st.integers(0, 100), fraction=st.integers(0, 100))
    def commit_call(self, index: int, fraction: int) -> None:
        """A call finishes and books a real cost no larger than its reservation."""
        r = self.open.pop(index % len(self.open))
        actual = r.amount_pico_usd * fraction // 100
        self.state = commit(self.state, r, actual)
        self.session_spent[r.session_id] += actual

    @precondition(lambda self: bool(self.open))
    @rule(index=st.integers(0, 100), billed=st.integers(0, 100))
    def release_call(self, index: int, billed: int) -> None:
        """A call fails and books what was billed (never more than reserved)."""
        r = self.open.pop(index % len(self.open))
        paid = min(billed, r.amount_pico_usd)
        self.state = release(self.state, r, paid)
        self.session_spent[r.session_id] += paid

    @rule(days=st.integers(0, 40))
    def time_passes(self, days: int) -> None:
        """Days (and sometimes months) pass."""
        self.day += days
        self.month = self.day // 30

    @invariant()
    def spend_plus_reserved_within_every_limit(self) -> None:
        """spent + reserved <= limit for session, monthly and every provider's day, after every step."""
        s = self.state
        assert s.overrun_pico_usd == 0
        limits = self.limits
        if limits.monthly_limit_pico_usd is not None:
            assert s.monthly.spent_pico_usd + s.monthly.reserved_pico_usd <= limits.monthly_limit_pico_usd
        for session in SESSIONS:
            acc = session_account(s, session)
            if limits.session_limit_pico_usd is not None:
                assert acc.spent_pico_usd + acc.reserved_pico_usd <= limits.session_limit_pico_usd
            assert acc.spent_pico_usd == self.session_spent[session]
        for provider, limit in limits.provider_daily_pico_usd:
            acc = provider_daily_account(s, provider)
            assert acc.spent_pico_usd + acc.reserved_pico_usd <= limit
        assert s.monthly.reserved_pico_usd == sum(r.amount_pico_usd for r in self.open)
        assert well_formed(s)

    def teardown(self) -> None:
        """Every call in flight ends; then nothing is reserved anywhere."""
        for r in self.open:
            self.state = commit(self.state, r, r.amount_pico_usd)
        self.open = []
        assert self.state.monthly.reserved_pico_usd == 0
        assert all(acc.reserved_pico_usd == 0 for _, acc in self.state.sessions)
        assert all(acc.reserved_pico_usd == 0 for _, acc in self.state.provider_daily)
        assert self.state.open_reservations == ()


LedgerMachine.TestCase.settings = settings(LedgerMachine.TestCase.settings, stateful_step_count=40)
TestLedgerInterleavings = LedgerMachine.TestCase
