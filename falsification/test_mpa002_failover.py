"""FALSIFY-MPA-002 through the full router over real sockets: after 2 failures on provider A, the
next request goes to provider B; when A's cooldown has run out, A is tried again."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from falsification.report import record_verdict
from falsification.rig import SHAPES, mock_providers, policy, request, resolved_for, wall
from routeproof import HealthOptions, LimitOptions
from routeproof.core.health import HealthConfig
from routeproof.core.kernel import BackoffPolicy
from routeproof.core.types import AttemptStatus, ProviderKind
from routeproof.mock import MockProviderServer, Scripted
from routeproof.router import Router

pytestmark = [pytest.mark.falsify, pytest.mark.asyncio]

A, B = ProviderKind.ANTHROPIC, ProviderKind.OPENAI
COOLDOWN_MS = 400  # a short real cooldown so the "A is tried again" part runs in real time


async def test_mpa_002_next_request_goes_to_b() -> None:
    """FALSIFY-MPA-002: A (Anthropic mock) answers 500; call 1 fails over to B after A's attempts;
    call 2's first attempt goes to B and A's journal gets no new request; after the cooldown, with
    A healthy again, call 3 is answered by A on its first attempt."""
    with wall("FALSIFY-MPA-002"):
        async with asyncio.timeout(60):
            await _run()


async def _run() -> None:
    loop = asyncio.get_running_loop()
    servers = {A: MockProviderServer(SHAPES[A], default=Scripted(status=500)), B: MockProviderServer(SHAPES[B])}
    for server in servers.values():
        await server.start()
    tenant = policy(A, [B])
    try:
        async with httpx.AsyncClient() as client:
            router = Router(
                mock_providers(client, servers),
                backoff=BackoffPolicy(delays_ms=(5, 10)),
                limits=LimitOptions(attempt_timeout_ms=2000),
                health=HealthOptions(config=HealthConfig(failure_threshold=2, cooldown_ms=COOLDOWN_MS)),
            )
            first = await router.call_provider(request("call 1"), resolved_for(tenant), loop.time() + 10, tenant)
            a_after_1, b_after_1 = len(servers[A].journal), len(servers[B].journal)
            second = await router.call_provider(request("call 2"), resolved_for(tenant), loop.time() + 10, tenant)
            a_after_2, b_after_2 = len(servers[A].journal), len(servers[B].journal)
            await asyncio.sleep(COOLDOWN_MS / 1000 + 0.1)
            servers[A].set_default(Scripted())  # A has recovered
            third = await router.call_provider(request("call 3"), resolved_for(tenant), loop.time() + 10, tenant)
            a_after_3 = len(servers[A].journal)
            await router.aclose()
    finally:
        for server in servers.values():
            await server.stop()
    a_failures_1 = [r for r in first.attempts if r.provider is A]
    providers_2 = [r.provider.value for r in second.attempts]
    checks = {
        "call 1: A failed >= 2 times, then B answered": len(a_failures_1) >= 2
        and all(r.http_status == 500 for r in a_failures_1)
        and first.provider is B,
        "call 2: first attempt on B": second.attempts[0].provider is B and second.provider is B,
        "call 2: A's journal unchanged": a_after_2 == a_after_1,
        "call 2: B's journal grew by 1": b_after_2 == b_after_1 + 1,
        "call 2: A (cooling, demoted behind B) not tried": A.value not in providers_2,
        "call 3: after the cooldown A is tried first and answers": third.attempts[0].provider is A
        and third.provider is A
        and third.attempts[0].status is AttemptStatus.SUCCEEDED
        and a_after_3 == a_after_2 + 1,
    }
    survived = all(checks.values())
    record_verdict(
        "FALSIFY-MPA-002",
        evidence=(
            f"A (500) then B over real sockets, threshold 2, cooldown {COOLDOWN_MS} ms: call 1 "
            f"{[f'{r.provider.value}:{r.http_status}' for r in first.attempts]}; call 2 first attempt "
            f"{second.attempts[0].provider.value}, A journal {a_after_1}->{a_after_2}, "
            f"call 2 attempts {providers_2}; "
            f"call 3 after cooldown first attempt {third.attempts[0].provider.value} "
            f"({third.attempts[0].status.value}); failed checks: {[k for k, ok in checks.items() if not ok] or 'none'}"
        ),
        survived=survived,
        procedure="a fixed scripted scenario over real sockets (A answers 500, B answers): every check must hold",
        seeds="none: the script is fixed (deterministic)",
    )
    assert survived, checks
