"""FALSIFY-MPA-003 through the full router over a real-socket mock: a $0.01 session budget with 20
calls in flight; spend never passes the budget at any point, and once it is exhausted the next call
raises BudgetExhausted(scope="session") without reaching the provider."""

from __future__ import annotations

import asyncio
import random

import httpx
import pytest

from falsification.report import record_verdict
from falsification.rig import MODELS, PRICING, SHAPES, mock_providers, policy, request, resolved_for, wall
from falsification.seeds import base
from routeproof import BudgetOptions, LimitOptions
from routeproof.core.ledger import BudgetLimits, format_usd, parse_usd, session_account, worst_case_cost_pico_usd
from routeproof.core.types import ProviderKind
from routeproof.errors import BudgetExhausted
from routeproof.mock import MockProviderServer, Scripted
from routeproof.router import Router

pytestmark = [pytest.mark.falsify, pytest.mark.asyncio]

OA = ProviderKind.OPENAI
BUDGET = parse_usd("0.01")
IN_FLIGHT = 20
MAX_TOKENS = 512
SESSION = "s-mpa-003"
SEED = base(3)
MAX_CALLS = 600  # ~60 calls exhaust the budget; a router that never refuses stops here


def _answer(rng: random.Random, n: int) -> Scripted:
    """An OpenAI answer whose usage is random but within what the request can cost (prompt 20-60
    tokens for a ~200-byte prompt, completion 1..max_tokens), after 0-30 ms."""
    prompt, completion = rng.randrange(20, 61), rng.randrange(1, MAX_TOKENS + 1)
    body = {
        "id": f"chatcmpl-{n}",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": MODELS[OA],
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
    }
    return Scripted(body=body, delay_before_headers_s=rng.uniform(0.0, 0.03))


async def test_mpa_003_through_the_router() -> None:
    """FALSIFY-MPA-003: calls 20 at a time until BudgetExhausted, then one at a time until refused,
    then the next call: spent and spent+reserved are sampled after every completion and every 1 ms."""
    with wall("FALSIFY-MPA-003 (router)"):
        async with asyncio.timeout(60):
            await _run()


async def _run() -> None:
    loop = asyncio.get_running_loop()
    rng = random.Random(SEED)
    server = MockProviderServer(SHAPES[OA])
    await server.start()
    server.script(*(_answer(rng, n) for n in range(1_000)))
    tenant = policy(OA)
    text = "Summarise the budget ledger in one line, please. " * 4
    peak_spent = peak_committed = 0
    samples = 0
    refusals: list[BudgetExhausted] = []
    granted = 0
    started = loop.time()
    series: list[list[int]] = []  # [ms since start, spent, spent + reserved] at each change, for the report

    try:
        async with httpx.AsyncClient() as client:
            router = Router(
                mock_providers(client, {OA: server}),
                limits=LimitOptions(attempt_timeout_ms=5000),
                budgets=BudgetOptions(pricing=PRICING, limits=BudgetLimits(session_limit_pico_usd=BUDGET)),
            )
            worst = worst_case_cost_pico_usd(PRICING.price_for(OA, MODELS[OA]), request(text, MAX_TOKENS))

            def sample() -> None:
                nonlocal peak_spent, peak_committed, samples
                ledger = router.ledger
                assert ledger is not None
                acc = session_account(ledger, SESSION)
                peak_spent = max(peak_spent, acc.spent_pico_usd)
                peak_committed = max(peak_committed, acc.spent_pico_usd + acc.reserved_pico_usd)
                samples += 1
                point = [acc.spent_pico_usd, acc.spent_pico_usd + acc.reserved_pico_usd]
                if not series or series[-1][1:] != point:
                    series.append([round((loop.time() - started) * 1000), *point])

            async def one(i: int) -> bool:
                nonlocal granted
                try:
                    await router.call_provider(
                        request(text, MAX_TOKENS), resolved_for(tenant), loop.time() + 10, tenant, session_id=SESSION
                    )
                except BudgetExhausted as exc:
                    refusals.append(exc)
                    return False
                finally:
                    sample()
                granted += 1
                return True

            async def sampler() -> None:
                while True:
                    sample()
                    await asyncio.sleep(0.001)

            sampling = asyncio.create_task(sampler())
            # phase 1: 20 in flight until the first refusal
            slots = asyncio.Semaphore(IN_FLIGHT)
            tasks: list[asyncio.Task[bool]] = []
            i = 0
            while not refusals and i < MAX_CALLS:  # bounded: a router that never refuses must not hang
                await slots.acquire()
                task = asyncio.create_task(one(i))
                task.add_done_callback(lambda _: slots.release())
                tasks.append(task)
                i += 1
            await asyncio.gather(*tasks)
            concurrent_granted = granted
            # phase 2: one at a time until refused with nothing in flight
            while i < MAX_CALLS and await one(i):
                i += 1
            journal_before = len(server.journal)
            # the next request
            nxt: BudgetExhausted | None = None
            try:
                await router.call_provider(
                    request(text, MAX_TOKENS), resolved_for(tenant), loop.time() + 10, tenant, session_id=SESSION
                )
            except BudgetExhausted as exc:
                nxt = exc
            sample()
            journal_after = len(server.journal)
            sampling.cancel()
            await asyncio.gather(sampling, return_exceptions=True)
            ledger = router.ledger
            assert ledger is not None
            final = session_account(ledger, SESSION)
            await router.aclose()
    finally:
        await server.stop()
    survived = (
        peak_spent <= BUDGET
        and peak_committed <= BUDGET
        and nxt is not None
        and nxt.scope == "session"
        and journal_after == journal_before
        and final.spent_pico_usd + worst > BUDGET
        and final.reserved_pico_usd == 0
    )
    record_verdict(
        "FALSIFY-MPA-003",
        evidence=(
            f"through the router over a real-socket OpenAI mock (gpt-4o-mini, worst case {format_usd(worst)}/call): "
            f"{concurrent_granted} calls granted {IN_FLIGHT} in flight until the first refusal, {granted} in all; "
            f"{samples} ledger samples: peak spent {format_usd(peak_spent)}, peak spent+reserved "
            f"{format_usd(peak_committed)} (budget {format_usd(BUDGET)}); "
            f"final spent {format_usd(final.spent_pico_usd)}; "
            f"next call: {f'BudgetExhausted(scope={nxt.scope!r})' if nxt else 'answered'}, "
            f"provider requests {journal_before}->{journal_after}"
        ),
        survived=survived,
        procedure="one run through the router over a real socket until refused, the ledger sampled after every "
        "completion and every 1 ms: any sample past the budget or an answered next call falsifies",
        seeds=f"{SEED} (the mock's usage draws and delays)",
        data={
            "router": {
                "budget_pico_usd": BUDGET,
                "worst_case_pico_usd": worst,
                "in_flight": IN_FLIGHT,
                "granted": granted,
                "samples": samples,
                "series": series,  # [ms since start, spent, spent + reserved], one entry per change
            }
        },
    )
    assert survived
