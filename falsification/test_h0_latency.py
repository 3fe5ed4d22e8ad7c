"""H0-LATENCY: "provider failover does NOT improve p99 latency vs a single provider".

Seed 003's H0 row: benchmark a single provider against the cascade "with 10 % failure injection";
the claim survives iff the cascade's p99 latency is at least 20 % lower.

**Which failure model.** "10 % failures" can be read two ways, and they answer different questions:

* *Episodes* (the primary model, and the verdict). The seeds reason about providers that are
  degraded for a while, not about coin flips: "provider degradation lasts seconds, not
  milliseconds" (seed 000 §2, why the 30 s budget), a retry schedule sized for degradations of
  <0.5 s, ~1 s and ~4 s (seed 000 §2, why 200/800/3200 ms), a cross-request cooldown because a
  failing provider keeps failing (seed 003 failover triggers, FALSIFY-MPA-002), and a kill
  criterion about *correlated outages* (KILL-1, the FAILS incident data of arXiv:2503.12185). A
  failover exists for exactly this case: retrying the same provider inside its outage does not
  help, asking another one does.
* *Independent per-attempt failures* (a diagnostic, printed and put in the evidence, not the
  verdict). With every attempt failing independently at 10 %, a retry on the same provider
  recovers as well as a failover to another (0.1 either way), so the two arms are the same
  router doing the same thing and their p99s agree. The earlier version of this row measured only
  that, and its recorded "improvement" came from the single provider losing ~1 % of calls to
  ``NoEligibleProvider`` while it cooled, which the default ``CoolingPolicy.DEMOTE`` no longer does.
  The i.i.d. model therefore says nothing about the claim; it is kept to show that.

**The experiment**, fixed before running it (parameters from the seeds' words and the router's
defaults, not tuned to any outcome):

* **Arms.** The same :class:`~routeproof.router.Router` (three simulated providers A, B, C; default
  retry policy, health settings — 2 consecutive failures, 30 s cooldown — and ``DEMOTE``) called with
  a one-entry chain (the *single provider*: A) or the three-entry chain A, B, C (the *cascade*).
* **Failure injection (primary).** Each provider, independently, alternates between healthy and
  degraded periods, both exponential; degraded periods have mean 4 s (seed 000's longest named
  degradation, "extended degradation that needs ~4s to settle", within its "seconds, not
  milliseconds"), healthy periods mean 36 s, so each provider is degraded 10 % of the time. An
  attempt that starts while its provider is degraded fails: half the time a 503 after 50-300 ms,
  half a hang that only the router's attempt timeout ends. Both arms see the same seeded schedule
  (time measured from the arm's start).
* **Failure injection (diagnostic).** Every attempt fails independently with probability 10 %, same
  failure kinds.
* **Provider latency.** Normal answers take U(0.5, 2.0) s.
* **Attempt timeout 5 s.** Well above the slowest normal answer; with the default 30 s a single hang
  spends the whole 30 s failover budget and neither arm can do anything after it.
* **Load.** Open loop: calls arrive as a Poisson process at 2/s (the same arrival times and provider
  seeds in both arms), on virtual time (looptime): 8,000 calls per arm for the primary model
  (~4,000 virtual seconds, ~100 degraded episodes per provider), 4,000 for the diagnostic.
* **Measure.** Time from the call to its outcome over ALL calls: a call that ends in an error
  counts at its full elapsed time (what the caller waited before hearing "no"). Completion (the
  share of calls answered) and the p99 of answered calls are printed beside it for each arm. p99 is
  the nearest-rank 99th percentile. Improvement = 1 - p99(cascade) / p99(single).
* **Verdict.** From the primary model only: H0 is rejected (the claim survives) iff the
  improvement is >= 20 %. Whatever comes out is recorded.

**How to read the result** (what the mechanism is, seen while building the row; the verdict is
whatever the run records). Under episodes the cascade's p99 over *answered* calls is about the
single provider's (the calls that start on A just as it degrades still spend their three attempts
there); its gain comes from the 2-4 % of calls the single provider cannot answer at all, most of
which wait through one or more 5 s hangs (~11 s) before failing, while the cascade answers them.
The single arm's tail is therefore bimodal and its p99 sits near the boundary between the two
modes, so the margin depends on how much degradation a run happens to sample. The seed of the
verdict (11) was fixed before running; other seeds, run with
``ROUTEPROOF_H0_LATENCY_SEED=N pytest falsification/test_h0_latency.py -k cascade_vs_single``, gave
+27.2 % (12), +29.3 % (13), +4.9 % (14, which would falsify the row), +33.4 % (15), +25.8 % (16).
An earlier offline check found mean episodes of 1 s give about -0.6 % (retries ride through
sub-second blips, the seed's own design claim) and 10 s about +36 %.

A small real-socket run over the mock servers (time scaled down: answers 50-200 ms, attempt timeout
0.5 s, 60 calls per arm at 40/s, independent 10 % failures) anchors the simulator's mechanics
(router + providers over real HTTP behave like router + SimProvider); it is printed, not a verdict.
Degradation episodes of seconds cannot be sampled in a run of a few real seconds, so the anchor does
not replay the primary model.
"""

from __future__ import annotations

import asyncio
import math
import os
import random
from dataclasses import dataclass

import httpx
import pytest

from falsification.report import record_verdict
from falsification.rig import SHAPES, mock_providers, percentile, policy, request, resolved_for, wall
from falsification.sim import EpisodeSchedule, FailureMix, SimProvider
from routeproof.core.types import ProviderKind, TenantPolicy
from routeproof.errors import RouterError
from routeproof.mock import MockProviderServer, Scripted
from routeproof.providers.protocol import Provider
from routeproof.router import Router

pytestmark = [pytest.mark.falsify, pytest.mark.asyncio]

A, B, C = ProviderKind.ANTHROPIC, ProviderKind.OPENAI, ProviderKind.BEDROCK
FAILURE_RATE = 0.10  # share of time each provider is degraded (episodes) / per attempt (i.i.d.)
MEAN_EPISODE_S = 4.0
N_EPISODES = 6_000
N_IID = 2_000
ARRIVALS_PER_S = 2.0
ATTEMPT_TIMEOUT_S = 5.0
REQUIRED_IMPROVEMENT = 0.20
MIX = FailureMix(http_5xx=1.0, http_429=0.0, hang=1.0)
# quantile grid (basis points) of the CDFs the report plots: every 1 % to 90 %, then every 0.1 % (the tail)
CDF_BP = (*range(100, 9_000, 100), *range(9_000, 10_001, 10))
PROVIDER_SEED = int(os.environ.get("ROUTEPROOF_H0_LATENCY_SEED", "11"))  # override to probe sensitivity
ARRIVAL_SEED = 5
JITTER_SEED = 17


@dataclass(frozen=True, slots=True)
class Outcome:
    """One call: how long the caller waited, and whether it got an answer."""

    elapsed_s: float
    answered: bool


@dataclass(frozen=True, slots=True)
class Arm:
    """What one arm measured."""

    name: str
    outcomes: list[Outcome]

    @property
    def p99(self) -> float:
        """p99 over every call, a failed call at its full elapsed time."""
        return percentile([o.elapsed_s for o in self.outcomes], 0.99)

    @property
    def p99_answered(self) -> float:
        """p99 over the answered calls only (nan when none was answered)."""
        answered = [o.elapsed_s for o in self.outcomes if o.answered]
        return percentile(answered, 0.99) if answered else float("nan")

    @property
    def failed_share(self) -> float:
        """Share of calls that ended in an error."""
        return sum(1 for o in self.outcomes if not o.answered) / len(self.outcomes)

    def summary(self) -> str:
        """p50/p99 over all calls, completion, p99 of the answered calls."""
        every = [o.elapsed_s for o in self.outcomes]
        answered = [o.elapsed_s for o in self.outcomes if o.answered]
        p99_answered = f"{percentile(answered, 0.99):.2f} s" if answered else "n/a"
        return (
            f"{self.name}: p50 {percentile(every, 0.5):.2f} s, p99 {self.p99:.2f} s, "
            f"completion {len(answered) / len(every):.2%}, p99 of answered {p99_answered}"
        )

    def cdf_data(self) -> dict[str, object]:
        """This arm for the report: nearest-rank quantiles of every call's elapsed time at ``CDF_BP``."""
        every = sorted(o.elapsed_s for o in self.outcomes)
        n = len(every)
        p99_answered = self.p99_answered
        return {
            "calls": n,
            "answered": sum(1 for o in self.outcomes if o.answered),
            "p99_ms": round(self.p99 * 1000, 1),
            "p99_answered_ms": None if math.isnan(p99_answered) else round(p99_answered * 1000, 1),
            "cdf_ms": [round(every[max(1, -(-bp * n // 10_000)) - 1] * 1000, 1) for bp in CDF_BP],
        }


def _improvement(single: Arm, cascade: Arm) -> float:
    return 1.0 - cascade.p99 / single.p99


async def _open_loop(router: Router, tenant: TenantPolicy, calls: int, rate: float, seed: int) -> list[Outcome]:
    """Each call's outcome, calls arriving as a seeded Poisson process."""
    loop = asyncio.get_running_loop()
    arrivals = random.Random(seed)
    outcomes: list[Outcome] = []

    async def one(i: int) -> None:
        start = loop.time()
        try:
            await router.call_provider(request(f"latency {i}"), resolved_for(tenant), start + 60, tenant)
        except RouterError:
            outcomes.append(Outcome(loop.time() - start, answered=False))
        else:
            outcomes.append(Outcome(loop.time() - start, answered=True))

    tasks = []
    for i in range(calls):
        tasks.append(asyncio.create_task(one(i)))
        await asyncio.sleep(arrivals.expovariate(rate))
    await asyncio.gather(*tasks)
    return outcomes


def _schedules() -> list[EpisodeSchedule]:
    return [
        EpisodeSchedule(seed=PROVIDER_SEED * 100 + n, degraded_fraction=FAILURE_RATE, mean_degraded_s=MEAN_EPISODE_S)
        for n in range(3)
    ]


async def _run_arm(name: str, tenant: TenantPolicy, calls: int, *, episodes: bool) -> tuple[Arm, float]:
    """One arm on a fresh router and fresh providers; also the realised degraded share of A."""
    origin = asyncio.get_running_loop().time()
    schedules = _schedules() if episodes else [None, None, None]
    providers: list[Provider] = [
        SimProvider(k, seed=PROVIDER_SEED + n, failure_rate=FAILURE_RATE, mix=MIX, episodes=s, origin=origin)
        for n, (k, s) in enumerate(zip((A, B, C), schedules, strict=True))
    ]
    router = Router(providers, rng=random.Random(JITTER_SEED), attempt_timeout_s=ATTEMPT_TIMEOUT_S)
    outcomes = await _open_loop(router, tenant, calls, ARRIVALS_PER_S, ARRIVAL_SEED)
    horizon = asyncio.get_running_loop().time() - origin
    schedule_a = schedules[0]
    share = schedule_a.degraded_time(horizon) / horizon if schedule_a is not None else FAILURE_RATE
    return Arm(name, outcomes), share


async def _compare(calls: int, *, episodes: bool) -> tuple[Arm, Arm, float]:
    single, share = await _run_arm("single", policy(A), calls, episodes=episodes)
    cascade, _ = await _run_arm("cascade", policy(A, [B, C]), calls, episodes=episodes)
    return single, cascade, share


@pytest.mark.looptime(end=1_000_000, noop_cycles=1)
async def test_h0_latency_cascade_vs_single_provider() -> None:
    """H0-LATENCY on virtual time: verdict from 10 % degradation episodes; i.i.d. 10 % as a diagnostic."""
    with wall(f"H0-LATENCY primary (episodes, virtual time, {N_EPISODES} calls/arm)"):
        single, cascade, share_a = await _compare(N_EPISODES, episodes=True)
    with wall(f"H0-LATENCY diagnostic (i.i.d., virtual time, {N_IID} calls/arm)"):
        iid_single, iid_cascade, _ = await _compare(N_IID, episodes=False)
    gain = _improvement(single, cascade)
    iid_gain = _improvement(iid_single, iid_cascade)
    survived = gain >= REQUIRED_IMPROVEMENT
    primary = (
        f"PRIMARY (verdict) degradation episodes: each provider degraded {FAILURE_RATE:.0%} of the time "
        f"(exponential episodes, mean {MEAN_EPISODE_S:.0f} s; A realised {share_a:.1%}), attempts in an episode "
        f"fail as 503 or hang past the {ATTEMPT_TIMEOUT_S:.0f} s attempt timeout, answers 0.5-2 s, "
        f"{N_EPISODES} calls/arm at {ARRIVALS_PER_S:.0f}/s on virtual time, failed calls counted at their elapsed "
        f"time: {single.summary()}; {cascade.summary()}; p99 improvement {gain:.1%} "
        f"(needed >= {REQUIRED_IMPROVEMENT:.0%}); the gain is carried by the {single.failed_share:.1%} of calls "
        f"the single provider could not answer (p99 over answered calls only: single {single.p99_answered:.2f} s, "
        f"cascade {cascade.p99_answered:.2f} s)"
    )
    diagnostic = (
        f"DIAGNOSTIC (not the verdict) i.i.d. {FAILURE_RATE:.0%} per-attempt failures, {N_IID} calls/arm: "
        f"{iid_single.summary()}; {iid_cascade.summary()}; p99 improvement {iid_gain:.1%} "
        f"(a retry on the same provider recovers as well as a failover)"
    )
    print(f"H0-LATENCY {primary}")
    print(f"H0-LATENCY {diagnostic}")
    data = {
        "cdf_bp": list(CDF_BP),
        "primary": {
            "model": f"degradation episodes, {FAILURE_RATE:.0%} of the time, mean {MEAN_EPISODE_S:.0f} s",
            "single": single.cdf_data(),
            "cascade": cascade.cdf_data(),
            "improvement": round(gain, 4),
            "required": REQUIRED_IMPROVEMENT,
            "seed": PROVIDER_SEED,
        },
        "diagnostic_iid": {
            "model": f"i.i.d. {FAILURE_RATE:.0%} per-attempt failures (not the verdict)",
            "single": iid_single.cdf_data(),
            "cascade": iid_cascade.cdf_data(),
            "improvement": round(iid_gain, 4),
        },
    }
    record_verdict("H0-LATENCY", evidence=f"{primary}. {diagnostic}", survived=survived, data=data)
    assert survived, f"p99 improvement {gain:.1%} < {REQUIRED_IMPROVEMENT:.0%} under degradation episodes"


def _anchor_steps(rng: random.Random, n: int) -> list[Scripted]:
    steps = []
    for _ in range(n):
        if rng.random() < FAILURE_RATE:
            steps.append(rng.choice((Scripted(status=500), Scripted(hang=True))))
        else:
            steps.append(Scripted(delay_before_headers_s=rng.uniform(0.05, 0.2)))
    return steps


async def test_h0_latency_real_socket_anchor() -> None:
    """H0-LATENCY anchor over real sockets: 60 calls per arm at 40/s, answers 50-200 ms, i.i.d. 10 %
    failures (500 or hang past a 0.5 s attempt timeout); p99s printed, no verdict of its own."""
    with wall("H0-LATENCY (real-socket anchor)"):
        async with asyncio.timeout(60):
            results: dict[str, Arm] = {}
            for name, tenant in (("single", policy(A)), ("cascade", policy(A, [B, C]))):
                rng = random.Random(13)
                servers = {kind: MockProviderServer(SHAPES[kind]) for kind in (A, B, C)}
                for server in servers.values():
                    await server.start()
                    server.script(*_anchor_steps(rng, 300))
                try:
                    async with httpx.AsyncClient() as client:
                        router = Router(mock_providers(client, servers), attempt_timeout_s=0.5)
                        results[name] = Arm(name, await _open_loop(router, tenant, 60, 40.0, ARRIVAL_SEED))
                        await router.aclose()
                finally:
                    for server in servers.values():
                        await server.stop()
    gain = _improvement(results["single"], results["cascade"])
    print(
        f"H0-LATENCY anchor (real sockets, 60 calls/arm, i.i.d. failures): {results['single'].summary()}; "
        f"{results['cascade'].summary()}; p99 improvement {gain:.1%}"
    )
