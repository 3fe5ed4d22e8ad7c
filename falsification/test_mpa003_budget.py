"""FALSIFY-MPA-003 at the core: a $0.01 session budget is never passed, and the call after it is refused."""

from __future__ import annotations

import random
from pathlib import Path
from typing import NoReturn

import pytest

from falsification.report import record_verdict
from falsification.seeds import base, seed_range
from routeproof.core.ledger import (
    BudgetLimits,
    LedgerState,
    Reservation,
    commit,
    cost_pico_usd,
    format_usd,
    load_pricing,
    new_ledger,
    parse_usd,
    release,
    reserve,
    session_account,
    worst_case_cost_pico_usd,
)
from routeproof.core.types import ChatRequest, Message, ProviderKind, Usage
from routeproof.errors import BudgetExhausted

pytestmark = pytest.mark.falsify

PRICING = load_pricing((Path(__file__).resolve().parents[1] / "config" / "pricing.toml").read_text(encoding="utf-8"))
MINI = PRICING.price_for(ProviderKind.OPENAI, "gpt-4o-mini")
BUDGET = parse_usd("0.01")
# the cheapest call this row can bill (_actual_usage: prompt >= 8 tokens, completion >= 1; cost grows with tokens)
MIN_COST = cost_pico_usd(MINI, Usage(prompt_tokens=8, completion_tokens=1))
# a ledger that refuses in time bills at most this many calls; one more proves it never refused (a
# ledger that always "fits" would otherwise loop for ever)
MAX_BILLED = BUDGET // MIN_COST
SEEDS = range(base(3), base(3) + 5)


def _request(rng: random.Random) -> ChatRequest:
    words = " ".join(
        rng.choice(("budget", "ledger", "routeproof", "über", "token", "提供")) for _ in range(rng.randrange(5, 60))
    )
    return ChatRequest(messages=(Message.user(words),), max_tokens=rng.randrange(16, 128))


def _actual_usage(rng: random.Random, req: ChatRequest) -> Usage:
    text = "".join(b.text for m in req.messages for b in m.content if hasattr(b, "text"))
    return Usage(
        prompt_tokens=len(text.encode("utf-8")) // 4 + 8, completion_tokens=rng.randrange(1, req.max_tokens + 1)
    )


def _never_refused(granted: int, billed: int, in_flight_max: int) -> NoReturn:
    """Record and fail the row: more calls were billed than the budget pays for at the cheapest call."""
    evidence = (
        f"{billed} calls billed ({granted} granted, {in_flight_max} in flight at most) without a refusal: more than "
        f"{format_usd(BUDGET)} / {format_usd(MIN_COST)} (the cheapest call) = {MAX_BILLED}, so the ledger never refused"
    )
    record_verdict(
        "FALSIFY-MPA-003",
        evidence=evidence,
        survived=False,
        procedure=f"bounded loop: more than {MAX_BILLED} billed calls (budget / cheapest call) without a refusal",
        seeds=seed_range(SEEDS),
    )
    pytest.fail(f"FALSIFY-MPA-003: {evidence}")


def test_mpa_003_session_budget_sequential_and_concurrent() -> None:
    """FALSIFY-MPA-003: for each of 5 seeds, calls (one at a time, then 8 in flight at once) until refused;
    spend never passes $0.01."""
    peaks: list[int] = []
    refusals: list[BudgetExhausted] = []
    calls: list[int] = []
    for seed, in_flight_max in ((seed, n) for seed in SEEDS for n in (1, 8)):
        rng = random.Random(seed)
        state: LedgerState = new_ledger(BudgetLimits(session_limit_pico_usd=BUDGET))
        in_flight: list[tuple[Reservation, ChatRequest]] = []
        granted = billed = 0
        peak = 0
        refusal: BudgetExhausted | None = None
        while refusal is None:
            if billed > MAX_BILLED:
                _never_refused(granted, billed, in_flight_max)
            req = _request(rng)
            try:
                state, res = reserve(
                    state,
                    session_id="s",
                    provider=ProviderKind.OPENAI,
                    amount_pico_usd=worst_case_cost_pico_usd(MINI, req),
                    day_index=0,
                    month_index=0,
                )
            except BudgetExhausted as exc:
                refusal = exc
                break
            granted += 1
            in_flight.append((res, req))
            while len(in_flight) >= in_flight_max or (in_flight and rng.random() < 0.3):
                done, done_req = in_flight.pop(rng.randrange(len(in_flight)))
                if rng.random() < 0.1:
                    state = release(state, done, 0)  # a failed attempt, nothing billed
                else:
                    state = commit(state, done, cost_pico_usd(MINI, _actual_usage(rng, done_req)))
                    billed += 1
                acc = session_account(state, "s")
                peak = max(peak, acc.spent_pico_usd + acc.reserved_pico_usd)
            acc = session_account(state, "s")
            peak = max(peak, acc.spent_pico_usd + acc.reserved_pico_usd)
        for done, done_req in in_flight:
            state = commit(state, done, cost_pico_usd(MINI, _actual_usage(rng, done_req)))
        # the budget stays exhausted for the next request too (unless it is tiny enough to fit)
        spent = session_account(state, "s").spent_pico_usd
        peaks.append(max(peak, spent))
        refusals.append(refusal)
        calls.append(granted)
        assert refusal.scope == "session"
    survived = all(p <= BUDGET for p in peaks) and all(r.scope == "session" for r in refusals)
    record_verdict(
        "FALSIFY-MPA-003",
        evidence=(
            f"session budget {format_usd(BUDGET)}: sequential {calls[0::2]} calls granted, peak spent+reserved "
            f"up to {format_usd(max(peaks[0::2]))}; 8 in flight {calls[1::2]} calls, peak up to "
            f"{format_usd(max(peaks[1::2]))}; each ended in BudgetExhausted(scope='session'), e.g. "
            f"limit={refusals[0].limit}, requested={refusals[0].requested}"
        ),
        survived=survived,
        procedure="all-seeds statement: under every seed, one at a time and 8 in flight, calls until refused; any "
        f"peak past the budget falsifies, and more than {MAX_BILLED} billed calls (budget / cheapest call) "
        "without a refusal falsifies",
        seeds=seed_range(SEEDS),
    )
    assert survived


def test_mpa_003_next_request_after_exhaustion_is_refused() -> None:
    """FALSIFY-MPA-003: once spent is within one call of $0.01, the next same-size call raises BudgetExhausted."""
    req = ChatRequest(messages=(Message.user("hello " * 50),), max_tokens=200)
    amount = worst_case_cost_pico_usd(MINI, req)
    state = new_ledger(BudgetLimits(session_limit_pico_usd=BUDGET))
    n = 0
    while session_account(state, "s").spent_pico_usd + amount <= BUDGET:
        # bounded: each commit bills `amount`, so a ledger that bills honestly stops by BUDGET // amount
        assert n <= BUDGET // amount, f"{n} calls of {format_usd(amount)} committed but spent did not reach the budget"
        state, res = reserve(
            state, session_id="s", provider=ProviderKind.OPENAI, amount_pico_usd=amount, day_index=0, month_index=0
        )
        state = commit(state, res, amount)  # the worst case billed: the tightest sequence
        n += 1
        assert session_account(state, "s").spent_pico_usd <= BUDGET
    with pytest.raises(BudgetExhausted) as info:
        reserve(state, session_id="s", provider=ProviderKind.OPENAI, amount_pico_usd=amount, day_index=0, month_index=0)
    spent = session_account(state, "s").spent_pico_usd
    assert n == BUDGET // amount
    assert spent + amount > BUDGET
    print(
        f"FALSIFY-MPA-003: {n} calls of {format_usd(amount)} worst case, spent {format_usd(spent)}, "
        f"next refused: {info.value}"
    )
