"""The teeth check: every FALSIFY/H0 row and every AC has a planted break that its check must catch.

Each :class:`Break` in :data:`BREAKS` is a small patch (replace ``old`` by ``new`` in one file; the
``old`` text must occur exactly once, so a break that no longer applies to the code is itself a
failure). ``python tools/teeth.py`` applies each break in turn to a fresh copy of the tree (the
working tree is never touched), runs the break's ``targets`` with pytest in that copy (``PYTHONPATH``
puts the copy's ``src`` before the installed package), and requires pytest to exit 1: tests ran and
at least one failed. Exit 0 (nothing caught), 2-5 (collection error, no tests, ...) or a timeout is
"not caught". The check passes only when every break is caught and every contract row has a break.

``python tools/teeth.py --list`` prints the registry; ``--only ID [ID ...]`` runs some breaks;
``--check`` only verifies that every break still applies and every row has one (no pytest runs);
``--repeat N`` runs each break N times and counts it caught only when all N runs caught it (a check
that catches its break by luck fails here). The catch rate per break goes to ``reports/teeth.md``
and ``reports/teeth.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COPIED = (
    "src",
    "tests",
    "falsification",
    "config",
    "contracts",
    "conformance",
    "benchmarks",
    "tools",
    "pyproject.toml",
    "tox.ini",
)
COPIED_FRONT = ("README.md", "docs", "mkdocs.yml", ".ci")  # what the front-door checks read (README, docs/)
ROWS = (
    *(f"FALSIFY-MPA-{n:03d}" for n in range(1, 8)),
    "H0-EGRESS",
    "H0-LATENCY",
    "H0-COST",
    "H0-TRANSLATION",
    "LATENCY-SLA",
    "EXACT-MONEY",
    *(f"AC-{n}" for n in range(1, 20)),
    "TRAFFIC-WEIGHTED",  # issue 32 (workstream traffic)
    "TRAFFIC-LEAST-OUTSTANDING",
    "TRAFFIC-RATE-LIMIT",
    "TRAFFIC-RETRY-BUDGET",
    "TRAFFIC-HEDGE",  # issue 32 item 4 (workstream hedge)
    "TRAFFIC-HEADER-LIMITS",  # issue 32, second stop
    "TRAFFIC-TENANT-LIMITS",
    "TRAFFIC-AFFINITY",
    "TRAFFIC-WEIGHTED-2P",
    "TRAFFIC-RATE-LIMIT-2P",
)
TIMEOUT_S = 900


@dataclass(frozen=True, slots=True, kw_only=True)
class Break:
    """One planted break: where, what, and which check must fail because of it."""

    row: str
    file: str
    old: str
    new: str
    targets: tuple[str, ...]
    why: str


_KERNEL = "src/routeproof/core/kernel.py"
_CLASSIFY = "src/routeproof/core/classify.py"
_CONSTANTS = "src/routeproof/core/constants.py"
_ROUTING = "src/routeproof/core/routing.py"
_FILTER = "kept, by_tier = _filter_chain(tuple(supported), tier, endpoint_tiers)"
_OPENAI_PROMPT = "prompt_tokens=prompt - cached - written,"
_KANI = "tests/core/test_kani_bounds.py::"

BREAKS: tuple[Break, ...] = (
    Break(row="FALSIFY-MPA-001", file=_ROUTING, old=_FILTER,
          new="kept, by_tier = tuple(supported), ()",
          targets=("falsification/test_mpa001_egress.py",), why="the tier filter is bypassed"),
    Break(row="FALSIFY-MPA-002", file="src/routeproof/core/health.py", old="return until is None or now_ms >= until",
          new="return True  # planted", targets=("falsification/test_mpa002_failover.py",),
          why="a cooling provider is still available: the next request goes to A again"),
    Break(row="FALSIFY-MPA-003", file="src/routeproof/core/ledger_state.py",
          old="return limit_pico_usd is None or spent_pico_usd + reserved_pico_usd + amount_pico_usd <= limit_pico_usd",
          new="return limit_pico_usd is None or spent_pico_usd + reserved_pico_usd <= limit_pico_usd",
          targets=("falsification/test_mpa003_budget.py", "falsification/test_mpa003_router.py"),
          why="the amount asked is left out of the check: the last call overshoots the budget"),
    Break(row="FALSIFY-MPA-003", file="src/routeproof/core/ledger_state.py",
          old="return limit_pico_usd is None or spent_pico_usd + reserved_pico_usd + amount_pico_usd <= limit_pico_usd",
          new="return True  # planted: the ledger always fits",
          targets=("falsification/test_mpa003_budget.py",),
          why="the ledger never refuses: the row's bounded loop must fail it (it used to hang)"),
    Break(row="FALSIFY-MPA-004", file="src/routeproof/core/backoff.py",
          old="ceiling = cap_ms if attempt >= cap_ms.bit_length() else min(cap_ms, base_ms << attempt)",
          new="ceiling = base_ms << min(attempt, 64)",
          targets=("falsification/test_backoff_rows.py::test_mpa_004_no_delay_exceeds_the_cap",),
          why="full jitter loses its cap"),
    Break(row="FALSIFY-MPA-005", file="src/routeproof/core/formats/translate_emit.py",
          old='            parts.append({"type": "text", "text": block.text})',
          new='            parts.append({"type": "text", "text": block.text.strip()})',
          targets=("falsification/test_mpa005_translation.py::test_falsify_mpa_005_translation_round_trip",),
          why="text blocks lose their surrounding whitespace on the way to OpenAI"),
    Break(row="FALSIFY-MPA-006", file="src/routeproof/core/formats/sse_dialects.py",
          old="return [MessageStop(stop_reason=state.finish, usage=state.usage or Usage())]", new="return []",
          targets=("falsification/test_mpa006_streaming.py",), why="a stream can end without MessageStop"),
    Break(row="FALSIFY-MPA-007", file=_CLASSIFY,
          old="_RETRY_5XX = Classification(verdict=Verdict.RETRY, reason=RetryReason.FIVE_XX)",
          new="_RETRY_5XX = Classification(verdict=Verdict.TERMINAL)",
          targets=("falsification/test_mpa007_chaos.py::test_mpa_007_large_n_on_virtual_time",),
          why="a 5xx ends the call: no retry, no failover"),
    Break(row="FALSIFY-MPA-007", file=_CLASSIFY,
          old="_RETRY_5XX = Classification(verdict=Verdict.RETRY, reason=RetryReason.FIVE_XX)",
          new="_RETRY_5XX = Classification(verdict=Verdict.TERMINAL)",
          targets=("falsification/test_mpa007_chaos.py::test_mpa_007_completion_under_50_percent_failures",),
          why="a 5xx ends the call: the real-socket run, with its calibrated timeout, must still fail it"),
    Break(row="LATENCY-SLA", file="src/routeproof/core/latency.py",
          old="if n < config.min_samples:  # then judged() holds fewer than min_samples too",
          new="if True:  # planted: never in breach",
          targets=("falsification/test_latency_sla.py",),
          why="the latency trigger never fires: A keeps its traffic while it drifts"),
    Break(row="H0-EGRESS", file=_ROUTING, old=_FILTER,
          new="kept, by_tier = tuple(supported), ()",
          targets=("falsification/test_h0_egress.py",), why="the tier filter is bypassed"),
    Break(row="H0-LATENCY", file=_ROUTING, old=_FILTER,
          new=_FILTER.replace("tuple(supported)", "tuple(supported)[:1]"),
          targets=("falsification/test_h0_latency.py::test_h0_latency_cascade_vs_single_provider",),
          why="the chain is cut to its primary: a cascade is a single provider"),
    Break(row="H0-COST", file="src/routeproof/core/formats/normalize.py", old=_OPENAI_PROMPT,
          new="prompt_tokens=prompt - written,", targets=("falsification/test_h0_cost.py",),
          why="OpenAI's cached tokens are billed twice (as prompt and as cache read)"),
    Break(row="H0-TRANSLATION", file="src/routeproof/core/formats/translate_emit.py",
          old='return _with_cache({"type": "text", "text": block.text}, block.cache_control)',
          new='return _with_cache({"type": "text", "text": block.text.replace("\\x00", "")}, block.cache_control)',
          targets=("falsification/test_mpa005_translation.py::test_falsify_mpa_005_translation_round_trip",),
          why="NUL characters are dropped from text blocks"),
    Break(row="AC-1", file=_KERNEL, old="AttemptStatus.SUCCEEDED,\n            http_status=event.http_status,",
          new="AttemptStatus.SUCCEEDED,\n            http_status=None,",
          targets=("tests/router/test_acceptance.py::test_ac01_happy_path",),
          why="the success record loses its http_status"),
    Break(row="AC-2", file=_CONSTANTS, old="RETRY_DELAYS_MS = (200, 800)", new="RETRY_DELAYS_MS = (250, 800)",
          targets=("tests/router/test_acceptance.py::test_ac02_first_sleep_is_200_ms_with_20_percent_jitter",),
          why="the first retry sleeps 250 ms (the target pins the draw: caught every time, not 60 % of runs)"),
    Break(row="AC-3", file=_CONSTANTS, old="MAX_ATTEMPTS_PER_PROVIDER = 3", new="MAX_ATTEMPTS_PER_PROVIDER = 4",
          targets=("tests/router/test_acceptance.py::test_ac03_three_5xx_fail_over",),
          why="four attempts before failing over"),
    Break(row="AC-4", file=_CLASSIFY, old="400: Classification(verdict=Verdict.TERMINAL),",
          new="400: Classification(verdict=Verdict.FAIL_OVER),",
          targets=("tests/router/test_acceptance.py::test_ac04_400_is_terminal",), why="a 400 fails over"),
    Break(row="AC-5", file=_CLASSIFY, old="401: Classification(verdict=Verdict.TERMINAL_AUTH),",
          new="401: Classification(verdict=Verdict.TERMINAL),",
          targets=("tests/router/test_acceptance.py::test_ac05_auth_is_terminal_with_sev1_log",),
          why="a 401 is an ordinary terminal error (no AuthError, no sev-1)"),
    Break(row="AC-6", file=_CLASSIFY, old="404: Classification(verdict=Verdict.TERMINAL),",
          new="404: Classification(verdict=Verdict.FAIL_OVER),",
          targets=("tests/router/test_acceptance.py::test_ac06_404_is_terminal_no_failover",), why="a 404 fails over"),
    Break(row="AC-7", file=_CONSTANTS, old="FAILOVER_BUDGET_MS = 30_000", new="FAILOVER_BUDGET_MS = 40_000",
          targets=("tests/router/test_acceptance.py::test_ac07_30s_failover_budget",), why="a 40 s failover budget"),
    Break(row="AC-8", file=_KERNEL, old="(plan.deadline_at_ms - now_ms, Bound.DEADLINE),",
          new="(plan.deadline_at_ms - now_ms + 10_000, Bound.DEADLINE),",
          targets=("tests/router/test_acceptance.py::test_ac08_deadline_propagates",),
          why="an attempt may outlive the caller's deadline by 10 s"),
    Break(row="AC-9", file="src/routeproof/driver.py",
          old="chain_plan = _plan(ports, req, resolved, policy, started_ms)",
          new='chain_plan = globals().setdefault("_plans", {}).setdefault(resolved.alias, '
              "_plan(ports, req, resolved, policy, started_ms))",
          targets=("tests/router/test_acceptance.py::test_ac09_concurrent_calls_do_not_interfere",),
          why="chain plans are cached per alias across tenants (calls see each other's models)"),
    Break(row="AC-10", file=_KERNEL, old="AttemptStatus.SUCCEEDED,\n            http_status=event.http_status,",
          new="AttemptStatus.FAILED_OVER,\n            http_status=event.http_status,",
          targets=("tests/core/test_kernel_properties.py",), why="a success is recorded as a failover"),
    Break(row="AC-11", file=_CONSTANTS, old="JITTER_PERCENT = 20", new="JITTER_PERCENT = 30",
          targets=("falsification/test_backoff_rows.py::test_ac_11_jitter_band_for_many_seeds",),
          why="jitter of +-30 %"),
    Break(row="AC-12", file=_KERNEL, old="return failure.retry_after_ms  # exactly what the provider asked for",
          new="return failure.retry_after_ms + 1  # exactly what the provider asked for",
          targets=("tests/core/test_kernel.py::test_retry_after_honoured_exactly",),
          why="Retry-After is honoured 1 ms late"),
    Break(row="AC-13", file=_CONSTANTS, old="ATTEMPTS_CAP = 16", new="ATTEMPTS_CAP = 17",
          targets=("tests/router/test_acceptance.py::test_ac13_attempts_cap",),
          why="the constant itself allows a 17th attempt (the test pins the seed's literal 16)"),
    Break(row="AC-13", file="src/routeproof/core/call_plan.py", old="    attempts_cap: int = ATTEMPTS_CAP\n",
          new="    attempts_cap: int = ATTEMPTS_CAP + 1\n",
          targets=("tests/router/test_acceptance.py::test_ac13_attempts_cap",),
          why="the kernel's default cap allows a 17th attempt"),
    Break(row="AC-14", file="src/routeproof/observe.py",
          old='self.calls.add(1, {"provider": label, "model": model, "outcome": outcome})',
          new='self.calls.add(2, {"provider": label, "model": model, "outcome": outcome})',
          targets=("tests/router/test_acceptance.py::test_ac14_metrics",), why="each call is counted twice"),
    Break(row="AC-15", file="src/routeproof/core/formats/normalize.py", old=_OPENAI_PROMPT,
          new="prompt_tokens=prompt - written,",
          targets=("tests/core/test_normalize.py::test_ac15_three_shapes_normalise_to_equal_responses",),
          why="OpenAI's prompt tokens keep the cached part"),
    Break(row="AC-16", file="src/routeproof/router.py", old="    def call_provider_streaming(",
          new="    def _call_provider_streaming(",
          targets=("tests/router/test_acceptance.py::test_ac16_streaming_entry_point_exists",),
          why="the streaming entry point is gone"),
    Break(row="AC-17", file="src/routeproof/providers/_http.py", old="    propagate.inject(headers)",
          new="    del headers  # planted: no trace context",
          targets=("tests/router/test_acceptance.py::test_ac17_traceparent_propagated",),
          why="outbound calls carry no traceparent"),
    Break(row="AC-18", file="src/routeproof/driver.py",
          old="    state, action = kernel.start(plan, started_ms)\n",
          new="    state, action = kernel.start(plan, started_ms)\n"
              '    kernel.__dict__.setdefault("_retained", []).append(policy)  # planted\n',
          targets=("tests/router/test_acceptance.py::test_ac18_policy_and_request_unchanged_and_not_retained",),
          why="a reference to the tenant's policy outlives the call"),
    # beyond the required rows: the exhaustive Kani-bound walks (tests/core/test_kani_bounds.py), each
    # against a needle that only one point of the space triggers
    Break(row="KANI-MPA-001", file="src/routeproof/core/tiers.py",
          old="        if _kind_allowed(entry, allowed) and _tier_of(entry, endpoint_tiers) <= tier:",
          new="        if (_kind_allowed(entry, allowed) and _tier_of(entry, endpoint_tiers) <= tier) or "
              "(len(chain) == 4 and entry.provider.kind is ProviderKind.VLLM and entry.fallback_position == 3):",
          targets=(_KANI + "test_kani_mpa_001_sovereign_blocks_egress_exhaustive_to_bound_4",),
          why="a 4-entry chain keeps a VLLM 4th entry whatever the tier"),
    Break(row="KANI-MPA-002", file="src/routeproof/core/ledger_state.py",
          old="return limit_pico_usd is None or spent_pico_usd + reserved_pico_usd + amount_pico_usd <= limit_pico_usd",
          new="return limit_pico_usd is None or spent_pico_usd + reserved_pico_usd + amount_pico_usd <= limit_pico_usd "
              "+ (1 if reserved_pico_usd == 3 and spent_pico_usd == 1 else 0)",
          targets=(_KANI + "test_kani_mpa_002_cost_never_exceeds_budget_exhaustive_to_bound_8",),
          why="one ledger state (spent 1, reserved 3) lets 1 pico-USD past the limit (test_ledger.py misses it)"),
    Break(row="KANI-MPA-003", file="src/routeproof/core/backoff.py",
          old="    return ceiling * _draw_numerator(u) // UNIT_SCALE\n",
          new="    return ceiling * _draw_numerator(u) // UNIT_SCALE + (1 if attempt == 13 and base_ms == 3 else 0)\n",
          targets=(_KANI + "test_kani_mpa_003_backoff_capped_exhaustive_to_bound_16",),
          why="attempt 13 with base 3 ms sleeps 1 ms past its ceiling"),
    Break(row="KANI-MPA-005", file=_KERNEL,
          old="    retries_left = state.attempts_on(call.entry) < plan.max_attempts_per_provider\n",
          new="    retries_left = state.attempts_on(call.entry) < plan.max_attempts_per_provider "
              "or len(plan.chain) == 3\n",
          targets=(_KANI + "test_kani_mpa_005_failover_terminates_exhaustive",),
          why="on a 3-provider chain a retryable failure retries the same provider without end"),
    # the falsification suite's own checks
    Break(row="METHOD-SEEDS", file="falsification/test_mpa002_failover.py",
          old='        seeds="none: the script is fixed (deterministic)",\n', new="",
          targets=("tests/structure/test_falsify_rows_state_method.py",),
          why="a row records its verdict without stating its seeds"),
    Break(row="METHOD-SEEDS", file="falsification/report.py",
          old="        if not value.strip():\n", new="        if False:  # planted\n",
          targets=("tests/structure/test_falsify_rows_state_method.py",),
          why="record_verdict accepts a blank procedure or seeds"),
    Break(row="SEED-STABILITY", file="tools/falsify_seeds.py", old="        if len(verdicts) > 1:\n",
          new="        if len(verdicts) > 2:  # planted\n",
          targets=("tests/structure/test_falsify_seeds_tool.py",),
          why="a verdict that moves with the seed base is not reported as changed"),
    Break(row="GATE-CROSSHAIR-CRASH", file="tools/run_crosshair.py",
          old="        again_seed = str((int(seed) + RERUN_SEED_STEP) % _SEEDS)\n",
          new="        again_seed = seed  # planted\n",
          targets=("tests/structure/test_run_crosshair.py",),
          why="a module CrossHair crashed on is checked again at the same seed, where it crashes again"),
    Break(row="GATE-CROSSHAIR-CRASH", file="tools/run_crosshair.py",
          old='        return "counterexample" if COUNTEREXAMPLE.search(self.result.stdout) else "crash"',
          new='        return "crash"  # planted',
          targets=("tests/structure/test_run_crosshair.py",),
          why="a counterexample is taken for a crash and checked again: a finding can pass on the second seed"),
    Break(row="GATE-CI-TAIL", file="tools/ci_failures.py", old="        print(\"\\n\".join(own[-TAIL_LINES:]))",
          new="        print(\"\\n\".join(own[:TAIL_LINES]))  # planted",
          targets=("tests/structure/test_ci_failures.py",),
          why="a failed env's first lines are printed again instead of its last: CI's tail hides the verdict"),
    Break(row="GATE-STARTUP", file="pyproject.toml", old=" -p no:langsmith_plugin\"", new="\"  # planted",
          targets=("tests/structure/test_gate_startup.py",),
          why="every pytest process of the gate imports langsmith's unused plugin again (1.2-1.5 s each)"),
    Break(row="GATE-STARTUP", file="tox.ini", old="    PYTHONPYCACHEPREFIX = {env_dir}/pycache\n",
          new="    PYTHONDONTWRITEBYTECODE = 1\n",
          targets=("tests/structure/test_gate_startup.py",),
          why="bytecode is off again: every pytest process rewrites hypothesis' 148 modules (1.5 s each)"),
    Break(row="GATE-STARTUP", file="tools/teeth.py",
          old="                shutil.rmtree(bytecode, ignore_errors=True)\n\n\nCOPIES",
          new="                pass  # planted\n\n\nCOPIES",
          targets=("tests/structure/test_gate_startup.py",),
          why="teeth leaves its copies' bytecode behind when it ends"),
    Break(row="GATE-STARTUP", file="tools/teeth.py", old="    _forget_bytecode(path)\n    env",
          new="    env",
          targets=("tests/structure/test_gate_startup.py",),
          why="a row's broken file can run from the bytecode of another break of it written in the same second"),
    Break(row="FALSIFY-SEED-POOL", file="falsification/seed_pool.py",
          old="partial(looptime.new_event_loop, end=end, noop_cycles=noop_cycles)",
          new="partial(looptime.new_event_loop, end=end, noop_cycles=noop_cycles, start=100.0)",
          targets=("tests/structure/test_seed_pool.py",),
          why="a seed's loop does not start at virtual 0: its figures depend on where it starts"),
    Break(row="FALSIFY-SEED-POOL", file="falsification/seed_pool.py", old="        while running and not stop():",
          new="        while running:", targets=("tests/structure/test_seed_pool.py",),
          why="seeds past the one where the sequential test decided are read into the verdict"),
    Break(row="FALSIFY-SEED-POOL", file="falsification/seed_pool.py",
          old="            seed, result = running.popleft()\n            yield seed, await result",
          new="            done, _ = await asyncio.wait([f for _, f in running], return_when=asyncio.FIRST_COMPLETED)\n"
              "            seed, result = next(item for item in running if item[1] in done)\n"
              "            running.remove((seed, result))\n            yield seed, await result",
          targets=("tests/structure/test_seed_pool.py",),
          why="results are read as they finish, not in seed order: the test could stop at another seed"),
    Break(row="FALSIFY-SEED-POOL", file="falsification/seed_pool.py", old="                elif not outcome[1]:",
          new="                elif False:", targets=("tests/structure/test_seed_pool.py",),
          why="a worker where icontract is off counts: the row would run unchecked there"),
    Break(row="FALSIFY-SEED-POOL", file="falsification/seed_pool.py", old="            seeds.settle()",
          new="            pass", targets=("tests/structure/test_seed_pool.py",),
          why="a job still running when the row fails is left pending, and a failed one unread"),
    Break(row="GATE-TEETH-PROFILE", file="tests/support.py",
          old="phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.target),",
          new="phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink),",
          targets=("tests/structure/test_teeth_tool.py",),
          why="teeth's profile shrinks every failure it finds again (EXACT-MONEY's streamed row 28 s -> 89 s)"),
    Break(row="GATE-TEETH-PROFILE", file="tools/teeth.py", old='    env["HYPOTHESIS_PROFILE"] = "teeth"\n',
          new='    env.setdefault("HYPOTHESIS_PROFILE", "ci")\n', targets=("tests/structure/test_teeth_tool.py",),
          why="rows run under the env's ci profile, which shrinks, as they did before"),
    Break(row="GATE-TEETH-PROFILE", file="tools/teeth.py", old='    env["ROUTEPROOF_SEED_WORKERS"] = "1"\n',
          new="", targets=("tests/structure/test_teeth_tool.py",),
          why="each sequential falsify row starts two workers beside teeth's other job (four busy processes)"),
    Break(row="FALSIFY-SEED-POOL", file="falsification/seed_pool.py",
          old='WORKERS = _workers(os.environ.get("ROUTEPROOF_SEED_WORKERS", "2"))', new="WORKERS = 2  # planted",
          targets=("tests/structure/test_seed_pool.py",),
          why="the pool's size ignores ROUTEPROOF_SEED_WORKERS: teeth cannot ask for one worker"),
    Break(row="FALSIFY-SEED-POOL", file="falsification/seed_pool.py", old="or int(value) < 1:",
          new="or int(value) < 0:", targets=("tests/structure/test_seed_pool.py",),
          why="ROUTEPROOF_SEED_WORKERS=0 is taken: the pool fails later with an error that does not name it"),
    Break(row="MEASURE-SCHED-WAKEUPS", file="benchmarks/sched_wakeups.py",
          old="found.delays[(task, waker, waker_cpu == cpu)]", new="found.delays[(task, waker, waker_cpu != cpu)]",
          targets=("tests/measure/test_sched_wakeups.py",),
          why="a wakeup on the waker's CPU is counted as one on the other: the cross-CPU cost is misattributed"),
    Break(row="MEASURE-SCHED-WAKEUPS", file="benchmarks/sched_wakeups.py",
          old="                since.setdefault(waker, (float(wake[\"t\"]), wakee))",
          new="                since[waker] = (float(wake[\"t\"]), wakee)  # planted",
          targets=("tests/measure/test_sched_wakeups.py",),
          why="the waker's run-on is counted from its last wakeup, not its first: the time it keeps the CPU shrinks"),
    Break(row="MEASURE-SCHED-WAKEUPS", file="benchmarks/sched_wakeups.py",
          old="            if parent == root or parent in seen:", new="            if parent == root:  # planted",
          targets=("tests/measure/test_sched_wakeups.py::test_the_watcher_names_the_commands_children_and_theirs_only",),
          why="only the command's own children are named: the gateway and the mock a benchmark starts are not"),
    Break(row="AC-19", file="src/routeproof/router.py", old="from routeproof.core.types import (",
          new="from routeproof.core.types import ResolvedModel as _RM  # planted\nfrom routeproof.core.types import (",
          targets=("tests/structure/test_resolved_model_lint.py::test_ac19_resolved_model_built_only_by_alias_resolution",),
          why="the class is imported under an alias (the old regex lint missed this)"),
    # workstream "front" (issue 29): the README, the docs site, the package, the public API
    Break(row="FRONT-README", file="README.md", old='AnthropicProvider(api_key="sk-mock", base_url="http://127.0.0.1:9101")',
          new='AnthropicProvider(api_key="sk-mock", base_url="http://127.0.0.1:9")',
          targets=("tests/structure/test_readme_example.py::test_readme_example_runs_against_the_mock",),
          why="the README example no longer reaches its mock primary"),
    Break(row="FRONT-CONFIG-REF", file="tools/config_reference.py",
          old='    ("driver.failover", "cooldown_ms"): "how long a provider cools (default 30000).",\n', new="",
          targets=("tests/docs/test_config_reference.py::test_reference_page_is_up_to_date",),
          why="a key the loader accepts has no line in the generated reference"),
    Break(row="FRONT-DOCS-BLOCKS", file="tests/docs/blocks.py", old="        for match in FENCE.finditer(text)\n",
          new="        for match in FENCE.finditer(text[:0])  # planted\n",
          targets=("tests/docs/test_code_blocks.py::test_blocks_are_found",),
          why="the docs' python blocks are no longer collected (so never run)"),
    Break(row="FRONT-GUIDES", file="docs/hooks/guides.py", old="    if guides:\n", new="    if False:  # planted\n",
          targets=("tests/docs/test_guides_hook.py::test_a_page_outside_the_nav_becomes_a_guide",),
          why="a new docs page is left out of the site's Guides section"),
    Break(row="FRONT-WHEEL", file="tools/wheel_smoke.py", old='WHEEL_FILES = ("routeproof/py.typed", ',
          new='WHEEL_FILES = (', targets=("tests/docs/test_wheel_smoke.py::test_a_wheel_without_py_typed_is_refused",),
          why="a wheel without py.typed passes the package check"),
    Break(row="FRONT-API", file="src/routeproof/__init__.py", old='    "LedgerStore": "routeproof.stores",\n', new="",
          targets=("tests/structure/test_public_api.py::test_moved_names_still_import_from_the_top_for_this_release",),
          why="a name that moved to routeproof.stores no longer imports from routeproof"),
    Break(row="FRONT-VERSION", file="src/routeproof/cli.py", old='version=f"routeproof {__version__}"',
          new='version="routeproof 0.0.0"', targets=("tests/docs/test_version.py::test_cli_prints_the_version",),
          why="routeproof --version prints a second, stale copy of the version"),
    # --- workstream traffic (issue 32): deployment groups, rate limits, retry budgets ---
    Break(row="TRAFFIC-WEIGHTED", file="src/routeproof/core/balance.py",
          old="        ordered.append(rest.pop(_pick(weights, draws.pop(0) if draws else 0.0)))",
          new="        ordered.append(rest.pop(_pick([MICRO] * len(rest), draws.pop(0) if draws else 0.0)))",
          targets=("tests/traffic/test_balance.py::test_weighted_first_pick_is_exact",
                   "falsification/test_traffic_balance.py::test_traffic_weighted_over_seeds_in_virtual_time"),
          why="weights are ignored: every deployment of a group is drawn equally often"),
    Break(row="TRAFFIC-LEAST-OUTSTANDING", file="src/routeproof/core/balance.py",
          old="    winner = second if load[second] < load[first] else first",
          new="    winner = first  # planted",
          targets=("tests/traffic/test_balance.py::test_least_outstanding_prefers_the_idler_of_two",),
          why="power of two choices without the comparison: a uniform pick, blind to in-flight counts"),
    Break(row="TRAFFIC-RATE-LIMIT", file="src/routeproof/core/rate_limit.py",
          old="    if limits.rpm is not None and len(live) >= limits.rpm:",
          new="    if limits.rpm is not None and len(live) > limits.rpm:",
          targets=("tests/traffic/test_rate_limit.py",),
          why="one request past the declared rpm is admitted (the provider would answer 429)"),
    Break(row="TRAFFIC-RATE-LIMIT", file="src/routeproof/traffic_store/memory.py",
          old="LogEntry(at_ms=max(ticket.at_ms, now_ms), tokens=max(0, tokens))",
          new="LogEntry(at_ms=ticket.at_ms, tokens=max(0, tokens))",
          targets=("tests/traffic/test_rate_limit.py::test_settling_moves_the_place_to_the_answer",),
          why="a place counts from its reservation, not its answer: a slow request's arrival can fall outside"),
    Break(row="TRAFFIC-RATE-LIMIT", file="src/routeproof/core/rate_limit.py",
          old="    if not times or min(times) + MIN_LEFT_AFTER_WAIT_MS > end_ms:",
          new="    if not times:  # planted",
          targets=("tests/traffic/test_rate_limit.py",),
          why="a call waits for capacity that frees only after its deadline, instead of being refused"),
    Break(row="TRAFFIC-RATE-LIMIT", file="src/routeproof/streaming.py",
          old="await ports.traffic.settle(opened.ticket, usage, ports.ledger.wall_ms())",
          new="await ports.traffic.settle(opened.ticket, None, ports.ledger.wall_ms())  # planted",
          targets=("tests/traffic/test_rate_limit.py::test_a_completed_stream_settles_its_place_to_the_usage_it_reported",),
          why="a stream's place keeps the estimate, not the usage it reported: tpm capacity is wasted"),
    Break(row="TRAFFIC-RATE-LIMIT", file="src/routeproof/core/rate_limit.py",
          old="    return counted if counted > 0 else estimate_tokens",
          new="    return counted  # planted",
          targets=("tests/traffic/test_rate_limit.py::test_a_place_keeps_the_reported_usage_else_the_estimate",),
          why="an answer without usage settles its place to 0 tokens: the window passes the provider's tpm"),
    Break(row="TRAFFIC-RETRY-BUDGET", file="src/routeproof/core/kernel.py",
          old="    if verdict.verdict is Verdict.RETRY and retries_left and event.retry_allowed:",
          new="    if verdict.verdict is Verdict.RETRY and retries_left:",
          targets=("tests/traffic/test_retry_budget.py::test_a_spent_budget_fails_over_with_the_reason_recorded",),
          why="the kernel ignores the retry budget's verdict: a spent bucket still retries"),
    Break(row="TRAFFIC-RETRY-BUDGET", file="src/routeproof/core/retry_budget.py",
          old="    return tokens_milli * 2 > config.capacity_milli",
          new="    return tokens_milli >= 0  # planted",
          targets=("tests/traffic/test_retry_budget.py::test_retries_stop_after_half_the_bucket",
                   "falsification/test_traffic_limits.py::test_traffic_retry_budget_bounds_a_storm_and_spares_rare_failures"),
          why="the bucket never runs out: a down provider gets every retry of every call"),
    Break(row="TRAFFIC-AFFINITY", file="src/routeproof/core/affinity.py",
          old="    return now_ms < pinned_at_ms + ttl_ms",
          new="    return now_ms <= pinned_at_ms + ttl_ms",
          targets=("tests/traffic/test_affinity.py::test_a_pin_lives_for_its_ttl",),
          why="a pin outlives the provider's cache TTL by a millisecond (it would route to a cold cache)"),
    Break(row="TRAFFIC-AFFINITY", file="src/routeproof/traffic_store/port.py",
          old="            return pin_first(chain, dict(self.config.members), pinned)",
          new="            return chain  # planted",
          targets=("tests/traffic/test_affinity.py::test_concurrent_calls_of_one_prefix_share_a_deployment",),
          why="the pin is taken but never followed: one prefix's calls scatter over the group"),
    Break(row="TRAFFIC-AFFINITY", file="src/routeproof/core/affinity.py",
          old="    if marked:", new="    if False:  # planted",
          targets=("tests/traffic/test_affinity.py::test_a_conversation_that_moves_its_cache_marker_stays_on_its_deployment",
                   "tests/traffic/test_affinity.py::test_the_prefix_ends_at_the_cache_marker_and_the_longest_comes_first"),
          why="cache markers are ignored: each turn of a conversation is a new prefix and lands anywhere"),
    Break(row="TRAFFIC-AFFINITY", file="src/routeproof/core/affinity.py",
          old="    if req.cache_affinity_key is not None:\n        return (CachePrefix(",
          new="    if False:  # planted\n        return (CachePrefix(",
          targets=("tests/traffic/test_affinity.py::test_requests_with_one_caller_key_share_a_deployment",
                   "tests/traffic/test_affinity.py::test_a_caller_key_is_the_prefix_whatever_the_messages"),
          why="the caller's key is ignored: its requests are routed by their messages"),
    Break(row="TRAFFIC-AFFINITY", file="src/routeproof/core/affinity.py",
          old="    for pin in pins:", new="    for pin in reversed(pins):  # planted",
          targets=("tests/traffic/test_affinity.py::test_the_longest_prefix_with_a_live_pin_decides",),
          why="the shortest pinned prefix decides, not the longest (fewer tokens cached where it goes)"),
    Break(row="TRAFFIC-AFFINITY", file="src/routeproof/core/affinity.py",
          old="    return by_deployment.get(deployment, default_ttl_ms)", new="    return default_ttl_ms  # planted",
          targets=("tests/traffic/test_affinity.py::test_a_one_hour_deployment_keeps_its_prefixes_past_five_minutes",
                   "tests/traffic/test_affinity.py::test_a_pin_lives_its_deployments_own_ttl"),
          why="a deployment's own cache lifetime is ignored: a 1-hour cache's prefixes move after 5 minutes"),
    Break(row="TRAFFIC-AFFINITY", file="src/routeproof/core/affinity.py",
          old="    if marker_ttl_ms is not None:\n        return marker_ttl_ms\n", new="",
          targets=("tests/traffic/test_affinity.py::test_a_prefix_marked_for_an_hour_keeps_its_deployment_past_five_minutes",
                   "tests/traffic/test_affinity.py::test_a_markers_own_ttl_is_its_prefixs_lifetime"),
          why="a marker's ttl: \"1h\" is ignored: an hour-long cache's prefix moves after 5 minutes (litellm #28427)"),
    Break(row="TRAFFIC-AFFINITY", file="src/routeproof/traffic_store/port.py",
          old="        for key, marker_ttl_ms in _prefix_keys(req):\n            self._pins[key] = self._pin(",
          new="        for key, marker_ttl_ms in _prefix_keys(req):\n            if key not in self._pins:  # planted\n"
              "                self._pins[key] = self._pin(",
          targets=("tests/traffic/test_affinity.py::test_a_prefix_in_use_keeps_its_deployment_past_its_ttl",),
          why="an answer does not renew its pin: a prefix in constant use moves when its first pin's lifetime ends"),
    Break(row="TRAFFIC-AFFINITY", file="src/routeproof/gateway/app.py",
          old='            given["cache_affinity_key"] = cache_key',
          new="            pass  # planted",
          targets=("tests/traffic/test_gateway.py::test_the_sdk_prompt_cache_key_keeps_its_requests_on_one_deployment",),
          why="the gateway drops OpenAI's prompt_cache_key as a routing key: an SDK caller's key does nothing"),
    # --- workstream "harden" (issue 27): one planted break per new hardening rule ---
    Break(row="HARDEN-DEPTH", file="src/routeproof/gateway/edge.py",
          old="    while level:\n        if depth > max_depth:\n",
          new="    while level:\n        if depth > max_depth * 100:  # planted\n",
          targets=("tests/hardening/test_edge_unit.py::test_depth_limit_is_exact",
                   "tests/hardening/test_edge_unit.py::test_depth_limit_holds_in_a_large_body"),
          why="JSON nested past the depth limit is read (a body that cannot hold a surrogate)"),
    Break(row="HARDEN-DEPTH", file="src/routeproof/gateway/edge.py",
          old="        elif isinstance(item, dict | list):\n            if depth > max_depth:\n",
          new="        elif isinstance(item, dict | list):\n            if depth > max_depth * 100:  # planted\n",
          targets=("tests/hardening/test_edge_unit.py::test_depth_limit_is_exact",),
          why="JSON nested past the depth limit is read (a body with a surrogate escape, walked whole)"),
    Break(row="HARDEN-SURROGATE", file="src/routeproof/gateway/edge.py",
          old='        or (b"\\xed" in body and _UTF8_SURROGATE.search(body) is not None)\n',
          new="",
          targets=("tests/hardening/test_edge_unit.py::test_the_byte_level_shortcut_refuses_and_reads_what_the_full_walk_does",
                   "tests/hardening/test_edge_unit.py::test_a_lone_surrogate_anywhere_in_a_large_body_is_refused"),
          why="a lone surrogate sent as raw UTF-8 bytes skips the walk and reaches a provider"),
    Break(row="HARDEN-SURROGATE", file="src/routeproof/gateway/edge.py",
          old="            if _SURROGATE.search(item) is not None:", new="            if False:  # planted",
          targets=("tests/hardening/test_edge_findings.py::test_lone_surrogate_is_a_400_not_all_providers_failed",),
          why="a lone surrogate passes the edge (a 502 'all providers failed' again)"),
    Break(row="HARDEN-DEADLINE", file="src/routeproof/gateway/edge.py",
          old="    if _DIGITS.fullmatch(text) is None or int(text) <= 0:",
          new="    if not text.isdigit() or int(text) <= 0:  # planted",
          targets=("tests/hardening/test_edge_unit.py::test_deadline_refuses_what_is_not_1_to_9_ascii_digits",),
          why="str.isdigit accepts '²' and int() then raises (a plain-text 500)"),
    Break(row="HARDEN-STORE-503", file="src/routeproof/gateway/failures.py",
          old="    if isinstance(exc, LedgerUnavailable):", new="    if False:  # planted",
          targets=("tests/hardening/test_store_down.py",),
          why="a store that is down is a 502 upstream_error again, without Retry-After"),
    Break(row="HARDEN-FLUSH", file="src/routeproof/ledger_store/redis_store.py",
          old="        async with self._flush_lock:\n", new="        if True:  # planted\n",
          targets=("tests/hardening/test_redis_flush.py",),
          why="concurrent flushes pop each other's queued commits (IndexError, a lost commit)"),
    Break(row="HARDEN-SQLITE-OPEN", file="src/routeproof/_sqlite.py",
          old='            if "locked" not in str(exc) or time.monotonic() >= give_up_at:',
          new="            if True:  # planted",
          targets=("tests/ledger_store/test_open_shared.py::test_a_writer_holding_a_rollback_file_is_waited_for",),
          why="two processes opening a new ledger file together: one fails at once with 'database is locked'"),
    Break(row="HARDEN-CANCEL-AFTER-COMMIT", file="src/routeproof/driver.py",
          old="    except BaseException:  # cancelled here, after the commit: nobody will relay the stream; end it\n",
          new="    except ZeroDivisionError:  # planted\n",
          targets=("tests/streaming/test_cancel_after_commit.py",),
          why="a call cancelled after its stream committed leaves that stream's reservation open until its lease"),
    Break(row="HARDEN-SECRET", file="src/routeproof/config/read.py",
          old="    if value:\n        problem = secret_problem(value)",
          new="    if False:  # planted\n        problem = None",
          targets=("tests/hardening/test_secrets.py::test_provider_constructors_refuse_bad_keys_naming_the_parameter",),
          why="a key with a trailing newline reaches httpcore (and its DEBUG log)"),
    Break(row="HARDEN-TENANT", file="src/routeproof/core/admission.py",
          old="    if queued < max_queued:\n        return TenantVerdict.QUEUE",
          new="    if True:  # planted\n        return TenantVerdict.QUEUE",
          targets=("tests/hardening/test_tenant_shares.py::test_noisy_tenant_does_not_delay_another_in_virtual_time",),
          why="a tenant's queue is unbounded: its excess is never refused"),
    Break(row="HARDEN-TENANT", file="src/routeproof/gateway/app.py",
          old="            await answer_for(job if timeout_s == job.timeout_s else job.within(timeout_s))",
          new="            await answer_for(job)  # planted",
          targets=("tests/hardening/test_tenant_shares.py::test_time_queued_comes_off_the_calls_deadline",),
          why="a call queued behind its tenant's slots gets a fresh deadline: it answers past the one it was given"),
    Break(row="HARDEN-TENANT", file="src/routeproof/gateway/backend.py",
          old="        key = (tenant.name, alias)",
          new="        key = (\"\", alias)  # planted",
          targets=("tests/gateway/test_gateway_http.py::test_tenant_policy_follows_the_key",),
          why="the first tenant's route for an alias serves every tenant: a Sovereign tenant's call goes to the cloud"),
    Break(row="HARDEN-TENANT", file="src/routeproof/gateway/backend.py",
          old="                return True\n        return False",
          new="                return True\n        return True  # planted",
          targets=("tests/wire/test_bedrock_field_table.py",),
          why="every chain is taken to speak the caller's protocol: a field no provider carries is sent, not refused"),
    Break(row="HARDEN-HEADERS", file="src/routeproof/gateway/server.py",
          old="            if not self._in_request() and not self.transport.is_closing():",
          new="            if False:  # planted",
          targets=("tests/hardening/test_connections.py::test_half_sent_requests_are_closed_after_the_header_timeout",),
          why="half-sent requests stay open for good"),
    Break(row="HARDEN-SHUTDOWN", file="src/routeproof/gateway/app.py",
          old="                if not self.shutting_down():\n                    raise",
          new="                raise  # planted",
          targets=("tests/hardening/test_shutdown.py",),
          why="a request cut past the grace period is an ERROR traceback again"),
    Break(row="HARDEN-UNITS", file="src/routeproof/config/read.py", old="    if 0 < value < IMPLAUSIBLY_SHORT_MS:",
          new="    if False:  # planted", targets=("tests/hardening/test_operations.py",),
          why="timeout_ms = 30 loads without a word"),
    # workstream perf (issue 25): the fast transport on every path
    Break(row="PERF-DEFAULT-TRANSPORT", file="src/routeproof/transport.py",
          old="    return Transport.AIOHTTP if aiohttp_available() else Transport.HTTPX\n",
          new="    return Transport.HTTPX  # planted\n",
          targets=("tests/providers/test_transport.py::test_the_default_transport_is_aiohttps_unless_the_environment_names_one",
                   "tests/providers/test_transport.py::test_a_provider_with_no_client_gets_the_default_transport"),
          why="the default falls back to the slower httpx pool"),
    Break(row="PERF-ADOPT-CLIENT", file="src/routeproof/transport.py",
          old="    stock_limits = (stock._max_connections,",
          new="    return client  # planted\n    stock_limits = (stock._max_connections,",
          targets=("tests/providers/test_transport.py::test_a_stock_client_passed_in_gets_the_indexed_pool_with_routeproofs_keepalive",),
          why="a client passed in keeps httpcore's O(C²) pool (the README's path is slow again)"),
    Break(row="PERF-ONE-TIMER", file="src/routeproof/providers/_http.py",
          old="if bound is None or bound > timeout_at else _CALLER_BOUNDS:",
          new="if bound is None or bound > timeout_at + 3600 else _CALLER_BOUNDS:  # planted",
          targets=("tests/router/test_one_attempt_timer.py",),
          why="a provider trusts an enclosing bound later than its own timeout_at (its promise broken)"),
    Break(row="PERF-ONE-TIMER", file="src/routeproof/clock.py",
          old="            self._bound = _ATTEMPT_BOUND.set(self.when)",
          new="            self._bound = _ATTEMPT_BOUND.set(self.when + 1)  # planted",
          targets=("tests/router/test_one_attempt_timer.py",),
          why="the driver declares a later bound than its timer: the provider keeps a second timer"),
    Break(row="PERF-ONE-TIMER", file="src/routeproof/providers/_stream.py",
          old="if bound is None or bound > timeout_at else _CALLER_BOUNDS:",
          new="if True else _CALLER_BOUNDS:  # planted",
          targets=("tests/router/test_one_attempt_timer.py",),
          why="a stream keeps its own first-event timer inside the router (two timers per attempt again)"),
    # issue 25, this stop: the gateway's own work per call
    Break(row="PERF-DIRECT-POST", file="src/routeproof/transport.py",
          old="    if direct is None or client.auth is not None or client.follow_redirects or client.cookies:",
          new="    if direct is None or client.follow_redirects or client.cookies:  # planted",
          targets=("tests/providers/test_direct_post.py::test_the_direct_path_is_taken_only_when_httpx_would_add_nothing",),
          why="a client with auth set skips httpx's client: its credentials are never sent"),
    Break(row="PERF-DIRECT-POST", file="src/routeproof/providers/_http.py",
          old='        if answer_headers.get("content-encoding"):', new="        if False:  # planted",
          targets=("tests/providers/test_direct_post.py",),
          why="a gzip answer on the direct path is read undecoded (not JSON, or over the cap unnoticed)"),
    Break(row="PERF-DIRECT-POST", file="src/routeproof/transport.py",
          old="        if isinstance(exc, self._errors):\n            raise self._translate(exc) from exc",
          new="        if False:  # planted\n            raise self._translate(exc) from exc",
          targets=("tests/providers/test_direct_post.py",),
          why="a connection cut mid-body on the direct path escapes as aiohttp's error, not CONN_RESET"),
    Break(row="PERF-DIRECT-POST", file="src/routeproof/transport.py",
          old="request: Any) -> bool:\n        return False\n\n    def return_ok",
          new="request: Any) -> bool:\n        return True  # planted\n\n    def return_ok",
          targets=("tests/providers/test_direct_post.py::test_routeproofs_own_clients_keep_no_cookie",),
          why="a provider's cookie is kept: it rides on every tenant's calls and turns the direct path off"),
    Break(row="PERF-DIRECT-POST", file="src/routeproof/transport.py",
          old="connector=connector, cookie_jar=aiohttp.DummyCookieJar(),",
          new="connector=connector,  # planted",
          targets=("tests/providers/test_direct_post.py::test_routeproofs_own_clients_keep_no_cookie",),
          why="aiohttp's session keeps a named host's cookie: one tenant's Set-Cookie rides on the next call"),
    Break(row="PERF-DEFAULT-TRANSPORT", file="src/routeproof/transport.py",
          old="        mounts=_environment_proxies(connections),\n",
          new="        # planted: no mounts\n",
          targets=("tests/providers/test_environment_proxies.py",),
          why="the default transport ignores HTTP(S)_PROXY: every call goes around the deployment's egress proxy"),
    Break(row="PERF-DEFAULT-TRANSPORT", file="src/routeproof/transport.py",
          old="max_line_size=HEAD_LINE_BYTES, max_field_size=HEAD_LINE_BYTES, max_headers=HEAD_FIELDS,",
          new="# planted: aiohttp's own bounds",
          targets=("tests/providers/test_answer_heads.py",),
          why="a 10 KB header or 129 headers: the answer, a 4xx too, is a reset (retried) where httpx reads it"),
    Break(row="PERF-DIRECT-POST", file="src/routeproof/transport.py",
          old='    if "".join(headers.values()).isascii():\n        return headers',
          new="    if True:  # planted\n        return headers",
          targets=("tests/providers/test_direct_post.py", "tests/providers/test_answer_heads.py"),
          why="a header value not in UTF-8 reads as a lone surrogate on the direct path, as Latin-1 through httpx"),
    Break(row="PERF-DIRECT-POST", file="src/routeproof/providers/_stream.py",
          old='        if self.headers.get("content-encoding"):\n            return self.as_httpx',
          new="        if False:  # planted\n            return self.as_httpx",
          targets=("tests/providers/test_direct_post.py",),
          why="a gzip stream on the direct path is decoded as SSE undecoded (no event, or garbage)"),
    Break(row="PERF-DIRECT-POST", file="src/routeproof/transport.py",
          old="        except self._errors as exc:\n            raise self._translate(exc) from exc\n\n\nSTREAM",
          new="        except ZeroDivisionError as exc:  # planted\n            raise self._translate(exc) from exc"
              "\n\n\nSTREAM",
          targets=("tests/providers/test_direct_post.py",),
          why="a stream cut mid-body on the direct path escapes as aiohttp's error, not 'stream interrupted'"),
    Break(row="PERF-DIRECT-POST", file="src/routeproof/providers/_stream.py",
          old="connect_s=remaining_s, read_s=None, pool_s=pool_s",
          new="connect_s=remaining_s, read_s=remaining_s, pool_s=pool_s",
          targets=("tests/providers/test_direct_post.py::test_a_stream_on_the_direct_path_may_outlast_its_first_event_bound",),
          why="a direct stream's reads keep the first-event bound: a long answer is cut when it runs out"),
    Break(row="PERF-BATCHED-WRITES", file="src/routeproof/gateway/server.py",
          old="            self.transport = BatchedWrites(transport, self.loop)", new="            pass  # planted",
          targets=("tests/gateway/test_write_batch.py",),
          why="an answer's head and body leave in two sends again"),
    Break(row="PERF-BATCHED-WRITES", file="src/routeproof/gateway/write_batch.py",
          old='        """Send what is held, then close."""\n        self.flush()\n',
          new='        """Send what is held, then close."""\n',
          targets=("tests/gateway/test_write_batch.py",),
          why="closing a connection drops the answer it was just given"),
    Break(row="PERF-DISCONNECT-WATCH", file="src/routeproof/gateway/disconnect.py",
          old="        if not finished:\n", new="        if True:  # planted\n",
          targets=("tests/gateway/test_disconnect_watch.py", "tests/gateway/test_client_link.py"),
          why="a disconnect seen as the work ends cancels the request's task while it answers"),
    Break(row="PERF-DISCONNECT-WATCH", file="src/routeproof/gateway/disconnect.py",
          old="        timer = loop.call_later(DISCONNECT_WATCH_AFTER_S, watch)",
          new="        timer = loop.call_later(0, watch)  # planted",
          targets=("tests/gateway/test_disconnect_watch.py",),
          why="every call starts a watcher task at once (40 % of the app's CPU per request)"),
    Break(row="PERF-DISCONNECT-WATCH", file="src/routeproof/gateway/disconnect.py",
          old="        timer = loop.call_later(DISCONNECT_WATCH_AFTER_S, watch)",
          new="        timer = loop.call_later(3600, watch)  # planted",
          targets=("tests/gateway/test_disconnect_watch.py", "tests/gateway/test_disconnect.py"),
          why="a client that leaves is never noticed: its call runs on and retries"),
    Break(row="PERF-DISCONNECT-WATCH", file="src/routeproof/gateway/server.py",
          old="                    link.lose()", new="                    pass  # planted",
          targets=(
              "tests/gateway/test_openai_sdk.py::test_an_sdk_that_gives_up_ends_the_gateways_call_and_its_provider_request",
              "tests/gateway/test_disconnect.py",
          ),
          why="the server never tells the app its client left: the call runs on and retries"),
    Break(row="PERF-DISCONNECT-WATCH", file="src/routeproof/gateway/disconnect.py",
          old="    if link is not None and link.lost:\n", new="    if False:  # planted\n",
          targets=("tests/gateway/test_client_link.py",),
          why="a client gone before its call starts still gets its provider call made"),
    Break(row="PERF-DISCONNECT-WATCH", file="src/routeproof/gateway/disconnect.py",
          old="        link.on_lost(cancel)\n    else:\n",
          new="        link.on_lost(cancel)\n    if True:  # planted\n",
          targets=("tests/gateway/test_client_link.py",),
          why="a call the server watches for still starts a watcher task past 10 ms (a task per call under load)"),
    Break(row="PERF-DISCONNECT-WATCH", file="src/routeproof/gateway/server.py",
          old="                self.scope[LINK] = ClientLink()", new="                pass  # planted",
          targets=("tests/gateway/test_client_link.py",),
          why="the server offers no link: every call under load pays the watcher task again"),
    Break(row="WIRE-PASSTHROUGH", file="src/routeproof/providers/_http.py",
          old='    if raw.lstrip()[:1] == b"{":', new="    if False:  # planted",
          targets=("tests/gateway/test_gateway_http.py::test_a_same_protocol_answer_is_the_providers_own_bytes",),
          why="a same-protocol answer is re-encoded: the provider's own bytes do not reach the caller"),
    # workstream "money" (issue 26): telemetry as the seed specifies it, prices as providers bill
    Break(row="TELEMETRY", file="src/routeproof/observe.py",
          old="ATTEMPTS_BUCKETS: tuple[int, ...] = tuple(range(1, 17))",
          new="ATTEMPTS_BUCKETS: tuple[int, ...] = (1, 2, 3, 5, 8, 13, 16)  # planted",
          targets=("tests/money/test_telemetry.py::test_attempts_histogram_gives_every_count_to_16_its_own_bucket",),
          why="1..16 attempts share buckets again (the seed skeleton's list)"),
    Break(row="TELEMETRY", file="src/routeproof/observe.py",
          old="else NO_PROVIDER_LABEL", new='else "none"  # planted',
          targets=("tests/money/test_telemetry.py::test_a_call_that_reached_no_provider_has_the_documented_label",),
          why='a call that reached no provider is labelled provider="none"'),
    Break(row="TELEMETRY", file="src/routeproof/observe.py",
          old="self.span.set_attributes(genai_usage_attributes(", new="(genai_usage_attributes(",
          targets=("tests/money/test_telemetry.py::test_each_attempt_span_carries_genai_attributes_and_the_ledgers_usage",),
          why="an answered attempt's span lacks gen_ai.usage.*"),
    Break(row="TELEMETRY", file="src/routeproof/streaming.py",
          old='stream_ended = getattr(ports.metrics, "stream_ended", None)', new="stream_ended = None  # planted",
          targets=("tests/streaming/test_streaming_virtual.py::test_a_streamed_operation_lasts_until_its_stream_ends",),
          why="a streamed operation's duration is never observed when its stream ends"),
    Break(row="TELEMETRY", file="src/routeproof/observe.py",
          old="                return  # a committed stream: its operation lasts until it ends (stream_ended)",
          new="                pass  # planted",
          targets=("tests/streaming/test_streaming_virtual.py::test_a_streamed_operation_lasts_until_its_stream_ends",),
          why="a streamed operation is observed twice: at its first event (the time to first chunk) and at its end"),
    Break(row="TELEMETRY", file="src/routeproof/gateway/local_meter.py",
          old="bisect.bisect_left(self.boundaries, amount)", new="bisect.bisect_right(self.boundaries, amount)",
          targets=("tests/money/test_telemetry.py::test_the_in_process_meter_prints_what_the_sdk_prints",),
          why="the in-process histogram puts a value equal to a bound in the next bucket (not Prometheus le)"),
    Break(row="PRICES", file="src/routeproof/core/pricing.py",
          old='("cache write 1h", usage.cache_creation_1h_tokens, price.cache_write_1h_rate)',
          new='("cache write 1h", usage.cache_creation_1h_tokens, price.cache_write_micro_usd_per_mtok)',
          targets=("tests/money/test_prices.py::test_cost_equals_the_independent_calculator_exactly",),
          why="a 1-hour cache write is billed at the 5-minute rate (genai-prices disagrees for Claude)"),
    Break(row="PRICES", file="src/routeproof/core/formats/normalize.py",
          old='.get("ephemeral_1h_input_tokens"), where', new='.get("ephemeral_5m_input_tokens"), where',
          targets=("tests/money/test_prices.py::test_anthropic_usage_reads_the_one_hour_cache_write_apart",),
          why="Anthropic's 1-hour cache writes are read from the wrong field"),
    Break(row="EXACT-MONEY", file="src/routeproof/streaming.py",
          old="await settle(StreamEnd.COMPLETED, self.cost_pico_usd or 0,",
          new="await settle(StreamEnd.COMPLETED, 0,",
          targets=("falsification/test_exact_money.py",),
          why="a completed stream books nothing (LiteLLM #37923's streamed spend = 0)"),
    Break(row="EXACT-MONEY", file="src/routeproof/driver.py",
          old="booked_pico_usd=call.cost_pico_usd or 0, succeeded=True",
          new="booked_pico_usd=0 * 1, succeeded=True",
          targets=("tests/money/test_exact_money.py",),
          why="a plain answer books nothing"),
    Break(row="EDGES", file="src/routeproof/ledger_store/config.py",
          old="session_limit_pico_usd=usd(budget.session_usd, \"session_usd\"),", new="session_limit_pico_usd=None,",
          targets=("tests/money/test_edges.py::test_cost_shows_the_configured_session_and_monthly_limits",),
          why="routeproof cost prints `limit none` for a configured session budget again"),
    Break(row="EDGES", file="src/routeproof/config/load.py",
          old="        pricing_path = default_pricing_path(environ)", new="        pricing_path = None",
          targets=("tests/money/test_edges.py::test_the_seeds_default_pricing_location_is_read_when_none_is_named",),
          why="seed 003's ~/.config/batuta/pricing.toml is not looked at"),
    # workstream "responses" (issue 24): the Responses API at the gateway
    Break(row="RESPONSES-STATEFUL", file="src/routeproof/core/formats/responses_api.py",
          old="value is not None and value not in _IDLE_VALUES.get(field, ())",
          new="value is not None and value in _IDLE_VALUES.get(field, ())",
          targets=("tests/responses/test_responses_api.py",),
          why="a stateful field asking for server state (previous_response_id, store: true, ...) is carried, faked"),
    Break(row="RESPONSES-TOOL-TURN", file="src/routeproof/core/formats/responses_api.py",
          old='                last.setdefault("tool_calls", []).append(call)',
          new='                messages.append({"role": "assistant", "content": None, "tool_calls": [call]})',
          targets=("tests/responses/test_responses_api.py",),
          why="parallel function_call items become separate assistant turns instead of one"),
    Break(row="RESPONSES-CUT", file="src/routeproof/gateway/responses_wire.py",
          old='            out += self._event("response.failed", response=body)',
          new="            pass  # planted",
          targets=("tests/responses/test_responses_oracle.py",),
          why="a stream cut after its first event ends silently, with no response.failed"),
    Break(row="RESPONSES-ORACLE", file="src/routeproof/gateway/responses_wire.py",
          old='            "cache_write_tokens": usage.cache_creation_tokens,\n', new="",
          targets=("tests/responses/test_responses_oracle.py",),
          why="the usage object lacks a field the SDK's Response type requires"),
    Break(row="AZURE-RETRY-AFTER-MS", file="src/routeproof/core/provider_variants.py",
          old='    raw_ms = headers.get("retry-after-ms")', new="    raw_ms = None  # planted",
          targets=("tests/providers/test_azure.py",),
          why="Azure's retry-after-ms is ignored: a 429 waits Retry-After's whole seconds"),
    Break(row="AZURE-URL", file="src/routeproof/core/provider_variants.py",
          old="/chat/completions?api-version={api_version}", new="/chat/completions",
          targets=("tests/providers/test_azure.py",),
          why="a deployment URL without api-version (Azure answers 404)"),
    Break(row="GEMINI-ERROR-LIST", file="src/routeproof/providers/_http.py",
          old="        data = data[0]  # Gemini's", new="        pass  # planted: Gemini's",
          targets=("tests/providers/test_gemini.py",),
          why="Gemini's list-wrapped error body is not read: the failure loses its message"),
    Break(row="GEMINI-THINKING", file="src/routeproof/core/provider_variants.py",
          old="    return max(completion, total - prompt)", new="    return completion",
          targets=("tests/providers/test_gemini.py",),
          why="thinking tokens in Gemini's total_tokens are not counted as output (under-billed)"),
    # issue 31 edge (wire-edge): same-protocol passthrough, feature headers, never-silent drops
    Break(row="WIRE-PASSTHROUGH", file="src/routeproof/providers/_passthrough.py",
          old="    cross = caller_fields_plan(request, fitted.request, target)\n",
          new="    cross = caller_fields_plan(replace(request, origin=None), fitted.request, target)  # planted\n",
          targets=("tests/sdk/test_passthrough_clients.py::test_a_nested_field_with_no_equivalent_is_named_or_refused_never_lost",),
          why="the cross-protocol path judges no field the caller set: a nested one is lost silently"),
    Break(row="WIRE-PASSTHROUGH", file="src/routeproof/core/formats/passthrough.py",
          old="    body = dict(origin)",
          new="    body = {k: v for k, v in origin.items() if k in _PARSED_KEYS[plan.protocol]}  # planted",
          targets=("tests/core/test_passthrough.py",),
          why="a same-protocol body keeps only the fields the parser knows: user, seed, newer fields are lost"),
    Break(row="WIRE-PASSTHROUGH", file="src/routeproof/core/formats/passthrough.py",
          old="    elif plan.default_max_tokens is not None and plan.protocol is WireFormat.ANTHROPIC_MESSAGES:",
          new="    elif plan.default_max_tokens is not None:  # planted",
          targets=("tests/core/test_passthrough.py::test_no_output_cap_is_invented_for_openai",),
          why="an OpenAI request without an output cap is sent with an invented one"),
    Break(row="WIRE-PASSTHROUGH", file="src/routeproof/providers/_passthrough.py",
          old="Outgoing(body=sent.body, headers=origin.headers,",
          new="Outgoing(body=sent.body, headers=(),  # planted\n",
          targets=("tests/sdk/test_passthrough_clients.py::test_anthropic_sdk_caching_thinking_and_beta_reach_an_anthropic_provider_verbatim",),
          why="anthropic-beta / OpenAI-Beta are not forwarded to a same-protocol provider (silently lost)"),
    Break(row="WIRE-PASSTHROUGH", file="src/routeproof/providers/_passthrough.py",
          old="    dropped = fitted.dropped + tuple(d for d in cross.dropped if d not in fitted.dropped) + headers\n",
          new="    dropped = fitted.dropped + tuple(d for d in cross.dropped if d not in fitted.dropped)  # planted\n",
          targets=("tests/sdk/test_passthrough_clients.py::test_cross_protocol_drops_are_named_and_anthropic_gets_the_documented_cap",),
          why="a feature header left out across protocols is not named in x-routeproof-dropped"),
    Break(row="WIRE-PASSTHROUGH", file="src/routeproof/core/formats/sse_dialects.py",
          old='            return [ThinkingDelta(signature=_get(delta, "signature", str, "delta"))]',
          new="            return []  # planted",
          targets=("tests/core/test_mut_sse.py::test_thinking_blocks_are_relayed_with_their_signature_byte_exact",),
          why="a streamed thinking block loses its signature (the next tool turn would be rejected)"),
    Break(row="WIRE-PASSTHROUGH", file="src/routeproof/mock/features.py",
          old='"thinking": MOCK_THINKING, "signature": MOCK_SIGNATURE}',
          new='"thinking": MOCK_THINKING, "signature": ""}  # planted',
          targets=("tests/mock/test_features.py",),
          why="the mock's thinking block carries no signature"),
    Break(row="WIRE-PASSTHROUGH", file="src/routeproof/gateway/app.py",
          old="    if own is None or kind is None or protocol_of(kind)",
          new="    if True or own is None or kind is None or protocol_of(kind)",
          targets=("tests/sdk/test_passthrough_clients.py::test_a_same_protocol_answer_reaches_the_caller_with_every_field",),
          why="a same-protocol answer is re-encoded from the neutral model: reasoning tokens and logprobs are lost"),
    Break(row="WIRE-PASSTHROUGH", file="src/routeproof/gateway/settings.py",
          old="        if name in _NEVER_FORWARDED:", new="        if False:  # planted",
          targets=("tests/gateway/test_settings.py",),
          why="the allow-list accepts authorization / x-api-key: a caller's credential would be forwarded"),
    # issue 31 core (wire-core): the content model, translation, the field table, input bounds
    Break(row="FALSIFY-MPA-005", file="src/routeproof/core/formats/translate_emit.py",
          old='"thinking": block.thinking, "signature": block.signature}',
          new='"thinking": block.thinking, "signature": block.signature.rstrip("=")}',
          targets=("falsification/test_mpa005_translation.py::test_round_trip_impl_is_the_checked_round_trip",),
          why="a thinking block's signature is not sent back byte-exact (its base64 padding trimmed)"),
    Break(row="WIRE-UNTRANSLATED", file="src/routeproof/core/formats/translate_common.py",
          old='            sink.append(f"{where}.{key}" if where else key)', new="            pass  # planted",
          targets=("tests/core/test_mut_translate_parse.py",),
          why="a field the parse does not carry is silently left out instead of recorded in untranslated"),
    Break(row="WIRE-FIELD-TABLE", file="src/routeproof/core/formats/field_table.py",
          old='    "verbosity": (_D, "Anthropic has no verbosity control"),\n', new="",
          targets=("tests/core/test_field_table.py::test_every_sdk_request_field_has_a_row_per_target",),
          why="an SDK request field has no row for a target protocol"),
    Break(row="WIRE-FIELD-TABLE", file="src/routeproof/core/formats/translate_emit.py",
          old='        ("user", req.user),\n', new="",
          targets=("tests/core/test_field_table.py::test_the_table_says_what_the_translation_does",),
          why="the table says metadata.user_id -> user (TRANSLATED) but the OpenAI body leaves it out"),
    Break(row="WIRE-DROPS", file="src/routeproof/core/formats/translate_emit.py",
          old='            ("top_k", req.top_k is not None),\n', new="",
          targets=("tests/core/test_field_table.py::test_the_table_says_what_the_translation_does",),
          why="top_k left out of an OpenAI body is not named by dropped_by_target (lost silently)"),
    Break(row="WIRE-INPUT-SIZE", file="src/routeproof/core/input_size.py",
          old="        return IMAGE_TOKENS_BOUND\n", new="        return 0  # planted\n",
          targets=("tests/core/test_input_size.py",),
          why="an image counts nothing in the worst-case reservation"),
    Break(row="WIRE-CAPABILITY", file="src/routeproof/core/capabilities.py",
          old="    lacking = [cap for cap in _needed_impl(req) if not getattr(caps, cap.value)]",
          new="    lacking: list[Capability] = []  # planted",
          targets=("tests/router/test_capability_failover.py",),
          why="an image request is sent to a text-only model instead of skipping it (capability: images)"),
    Break(row="WIRE-BEDROCK-ORIGIN", file="src/routeproof/providers/bedrock.py",
          old="        return encode_json(request_to_bedrock_converse(fitted.request)), fitted.dropped + crossed\n",
          new="        return encode_json(request_to_bedrock_converse(fitted.request)), fitted.dropped\n",
          targets=("tests/wire/test_bedrock_field_table.py",),
          why="Bedrock leaves out the fields Converse cannot carry without naming them (lost silently)"),
    Break(row="WIRE-BEDROCK-ORIGIN", file="src/routeproof/core/formats/cross_fields.py",
          old="        elif row.treatment is Treatment.DROPPED or left_out:\n            dropped[name] = None\n",
          new="        elif row.treatment is Treatment.DROPPED or left_out:\n            pass  # planted\n",
          targets=("tests/wire/test_bedrock_field_table.py",),
          why="a DROPPED row of the field table is not named on the way to Bedrock"),
    Break(row="WIRE-BEDROCK-ORIGIN", file="src/routeproof/core/formats/cross_fields.py",
          old="            refused.setdefault(name, row.note)\n",
          new="            pass  # planted\n",
          targets=("tests/wire/test_bedrock_field_table.py",),
          why="a REFUSED row of the field table is sent to Bedrock without the field instead of a 400"),
    Break(row="WIRE-STREAM-LOGPROBS", file="src/routeproof/core/formats/sse_dialects.py",
          old="            lp = None if logprobs is None else _logprobs_text(logprobs)\n",
          new="            lp = None  # planted\n",
          targets=("tests/wire/test_streamed_logprobs.py",),
          why="an OpenAI stream's per-chunk logprobs are not decoded (lost before the gateway)"),
    Break(row="WIRE-STREAM-LOGPROBS", file="src/routeproof/gateway/openai_wire.py",
          old='out += self._chunk({"content": event.text}, logprobs=event.logprobs_json)',
          new='out += self._chunk({"content": event.text})  # planted',
          targets=("tests/wire/test_streamed_logprobs.py", "tests/gateway/test_reencoders.py"),
          why="the gateway's OpenAI stream encoder (a stream not relayed) writes logprobs: null over the provider's"),
    Break(row="WIRE-ANSWER-THINKING", file="src/routeproof/gateway/openai_wire.py",
          old='                out += self._chunk({"reasoning_content": event.thinking})',
          new="                pass  # planted",
          targets=("tests/sdk/test_thinking_answers.py",),
          why="Anthropic's streamed thinking is left out of an OpenAI client's stream silently"),
    Break(row="WIRE-ANSWER-THINKING", file="src/routeproof/gateway/responses_wire.py",
          old="    if reasoning:  # the model's thinking first", new="    if False:  # planted",
          targets=("tests/sdk/test_thinking_answers.py",),
          why="a Responses answer leaves out the thinking of an Anthropic answer (no reasoning item)"),
    Break(row="WIRE-ANSWER-THINKING", file="src/routeproof/core/formats/answer_drops.py",
          old="    return ((OPAQUE_THINKING,) if opaque else ()) +", new="    return () +",
          targets=("tests/sdk/test_thinking_answers.py", "tests/core/test_answer_drops.py"),
          why="a thinking signature an OpenAI-shaped answer cannot carry is not named in x-routeproof-dropped"),
    Break(row="WIRE-ANSWER-THINKING", file="src/routeproof/core/formats/responses_api.py",
          old='        elif kind == "reasoning" and own_reasoning(item):',
          new='        elif False:  # planted',
          targets=("tests/sdk/test_thinking_answers.py", "tests/responses/test_responses_agents.py"),
          why="a client replaying the gateway's own reasoning item (the Agents SDK does) is refused"),
    Break(row="WIRE-BEDROCK-STREAM-THINKING", file="src/routeproof/providers/bedrock_stream.py",
          old='        return [_thinking(_obj(delta["reasoningContent"], "delta.reasoningContent"))]',
          new="        return []  # planted",
          targets=("tests/sdk/test_thinking_answers.py::test_bedrock_reasoning_reaches_an_anthropic_client_signed",
                   "tests/providers/test_bedrock_block_kinds.py"),
          why="Bedrock's streamed reasoningContent is ignored: an Anthropic client's stream loses its signed thinking"),
    Break(row="WIRE-RESPONSES-LOGPROBS", file="src/routeproof/gateway/responses_wire.py",
          old="            pieces = responses_delta_logprobs(event.logprobs_json)  # a Chat chunk's token logprobs",
          new="            pieces = []  # planted",
          targets=("tests/sdk/test_responses_logprobs.py",),
          why="a Responses stream answered through Chat writes logprobs: [] over the provider's token logprobs"),
    Break(row="WIRE-RESPONSES-LOGPROBS", file="src/routeproof/gateway/responses_wire.py",
          old="        logprobs = responses_part_logprobs(chat_answer_logprobs(resp.wire_body_json))",
          new="        logprobs = []  # planted",
          targets=("tests/sdk/test_responses_logprobs.py",),
          why="a plain Responses answer through Chat loses the token logprobs the caller asked for"),
    Break(row="WIRE-CITATIONS", file="src/routeproof/core/formats/sse_dialects.py",
          old='citation_json=compact_json(_get(delta, "citation", dict, "delta"))',
          new="citation_json=None",
          targets=("tests/sdk/test_citations.py",
                   "tests/core/test_sse.py::test_null_usage_fields_in_message_delta_keep_the_counts_of_message_start"),
          why="an Anthropic stream's citations_delta is dropped on the way to an Anthropic client, silently"),
    Break(row="WIRE-CITATIONS", file="src/routeproof/core/formats/answer_drops.py",
          old="    return () if carried or not _asks_citations(req) else (CITATIONS,)",
          new="    return ()  # planted",
          targets=("tests/sdk/test_citations.py",),
          why="a Bedrock answer's citations, which the Anthropic shape cannot get from Converse, are not named"),
    Break(row="WIRE-CITATIONS", file="src/routeproof/core/formats/normalize.py",
          old="                    texts.append(read.text(piece", new="                    len(read.text(piece",
          targets=("tests/sdk/test_citations.py",),
          why="the cited text of a Bedrock citationsContent block is lost (the answer's text, not only its citations)"),
    Break(row="WIRE-STREAM-REFUSAL", file="src/routeproof/gateway/openai_wire.py",
          old='out += self._chunk({"refusal": event.text}, logprobs=event.logprobs_json)',
          new='out += self._chunk({"content": event.text}, logprobs=event.logprobs_json)',
          targets=("tests/sdk/test_stream_refusal.py", "tests/gateway/test_reencoders.py"),
          why="OpenAI's streamed refusal, encoded for an OpenAI client (a stream not relayed), becomes content"),
    Break(row="WIRE-RESPONSES-REFUSAL", file="src/routeproof/gateway/responses_wire.py",
          old="    if refused:\n        output.append(_refusal_item(",
          new="    if False:  # planted\n        output.append(_refusal_item(",
          targets=("tests/sdk/test_responses_refusal.py::test_a_refusal_is_a_refusal_part_and_parse_does_not_raise",),
          why="OpenAI's refusal reaches a Responses caller as output_text: the SDK's responses.parse raises on it"),
    Break(row="WIRE-RESPONSES-REFUSAL", file="src/routeproof/gateway/responses_wire.py",
          old="        elif isinstance(event, TextDelta) and event.refusal:\n", new="        elif False:  # planted\n",
          targets=("tests/sdk/test_responses_refusal.py::test_a_streamed_refusal_is_refusal_events_and_a_completed_response",
                   "tests/sdk/test_responses_refusal.py::test_the_sdk_stream_helper_reports_the_refusal"),
          why="a streamed refusal becomes output_text deltas and an incomplete response: the SDK helper fails"),
    Break(row="WIRE-ANNOTATIONS", file="src/routeproof/gateway/responses_wire.py",
          old="        annotations, _ = responses_annotations(choice.annotations_json)",
          new="        annotations: list[dict[str, Any]] = []  # planted",
          targets=("tests/sdk/test_annotations.py",),
          why="a search model's URL citations are left out of a Responses answer, silently"),
    Break(row="WIRE-ANNOTATIONS", file="src/routeproof/core/formats/answer_drops.py",
          old="        return (ANNOTATIONS,) if choice.annotations_json is not None else ()",
          new="        return ()  # planted",
          targets=("tests/sdk/test_annotations.py", "tests/core/test_answer_drops.py"),
          why="OpenAI annotations an Anthropic caller cannot get are not named in x-routeproof-dropped"),
    Break(row="WIRE-OPAQUE-BLOCKS", file="src/routeproof/core/formats/sse_dialects.py",
          old="        return [OpaqueBlock(start_json=compact_json(block))]", new="        return []  # planted",
          targets=("tests/sdk/test_citations.py::test_a_streamed_web_search_reaches_an_anthropic_client_whole",
                   "tests/core/test_mut_sse.py::test_server_tool_blocks_are_carried_as_opaque_pieces"),
          why="a streamed server-tool block (web search) is left out of an Anthropic client's stream, silently"),
    Break(row="WIRE-OPAQUE-BLOCKS", file="src/routeproof/core/formats/sse_dialects.py",
          old='        if block_kind is BlockKind.OPAQUE or delta.get("type") not in _KNOWN_DELTAS:',
          new="        if block_kind is BlockKind.OPAQUE:  # planted",
          targets=("tests/sdk/test_stream_relay.py::test_a_delta_type_newer_than_this_code_does_not_break_the_stream",
                   "tests/core/test_mut_sse.py::test_a_delta_type_newer_than_this_code_is_carried_not_an_error"),
          why="a delta type Anthropic adds later ends every stream that carries it as malformed"),
    Break(row="WIRE-OPAQUE-BLOCKS", file="src/routeproof/gateway/anthropic_wire.py",
          old="                out += self._open_block(json.loads(event.start_json))",
          new="                pass  # planted",
          targets=("tests/sdk/test_citations.py::test_a_streamed_web_search_reaches_an_anthropic_client_whole",
                   "tests/gateway/test_reencoders.py"),
          why="the Anthropic encoder (a stream not relayed) drops the start of a carried server-tool block"),
    Break(row="WIRE-STREAM-RELAY", file="src/routeproof/core/formats/relay.py",
          old="    lambda events: all(relayed_frames(e) is None for e in events),",
          new="    lambda events: True,  # planted",
          targets=("tests/core/test_relay.py::test_an_event_already_relayed_is_refused_not_stripped_of_its_frames",),
          why="an event already relayed is taken and its frames stripped (CrossHair's counterexample, stop 36)"),
    Break(row="WIRE-STREAM-RELAY", file="src/routeproof/gateway/app.py",
          old="            if relays(_SHAPE[api], provider, first):  # the provider's own frames",
          new="            if False:  # planted",
          targets=("tests/sdk/test_stream_relay.py",),
          why="a same-protocol stream is re-encoded: the chunks' own id, system_fingerprint, service_tier and "
              "streamed annotations are lost silently"),
    Break(row="WIRE-STREAM-RELAY", file="src/routeproof/core/formats/relay.py",
          old="    if protocol is WireFormat.OPENAI_CHAT and not caller_usage and _usage_only(frame):",
          new="    if False:  # planted",
          targets=("tests/sdk/test_stream_relay.py::test_the_usage_chunk_the_router_asked_for_is_held_back",
                   "tests/core/test_relay.py"),
          why="the usage chunk the router asked for reaches a caller that did not ask (a choices-less chunk)"),
    Break(row="WIRE-STREAM-RELAY", file="src/routeproof/core/formats/relay.py",
          old="for i in range(len(events) - 1, -1, -1) if not isinstance(",
          new="for i in range(len(events)) if not isinstance(",
          targets=("tests/core/test_relay.py::test_a_frame_opening_a_tool_call_is_held_back_with_it",),
          why="a frame that opens a tool call goes with the text before it: partial tool JSON relayed before its "
              "block closes"),
    Break(row="WIRE-STREAM-RELAY", file="src/routeproof/core/formats/sse.py",
          old="            self._raw.append(line + eol)", new='            self._raw.append(line + "\\n")  # planted',
          targets=("tests/core/test_relay.py",),
          why="relayed frames are re-framed (CRLF/CR line ends rewritten): not the provider's bytes"),
    Break(row="RESPONSES-OWN-ITEMS", file="src/routeproof/core/responses_route.py",
          old='        out["input"] = _input_kept(out["input"])', new="        pass  # planted",
          targets=("tests/gateway/test_responses_passthrough.py::test_the_gateways_own_reasoning_item_is_left_out_of_a_verbatim_turn",),
          why="after a failover the gateway's own rs_rp reasoning item goes to OpenAI verbatim (a 404 ends the call)"),
    Break(row="WIRE-STREAM-RELAY", file="src/routeproof/providers/gemini.py",
          old="decoder=ThinkingCountedDecoder(max_line_chars=self._max_sse_line_chars, keep_frames=out.relay),",
          new="decoder=ThinkingCountedDecoder(max_line_chars=self._max_sse_line_chars),",
          targets=("tests/sdk/test_stream_relay.py::test_a_gemini_stream_and_answer_are_geminis_own",),
          why="a Gemini stream to an OpenAI caller is re-encoded: streamed annotations and audio lost silently"),
    Break(row="WIRE-PASSTHROUGH", file="src/routeproof/providers/gemini.py",
          old="        wire = own_json(own) if out.body is not None else None",
          new="        wire = None  # planted",
          targets=("tests/sdk/test_stream_relay.py::test_a_gemini_stream_and_answer_are_geminis_own",),
          why="a Gemini answer to an OpenAI caller is re-encoded: its annotations and audio are lost silently"),
    Break(row="WIRE-SKIP-NAMES-FIELD", file="src/routeproof/core/boundary.py",
          old="    return f\"{skip_reason}: {', '.join(fields)}\" if fields else skip_reason",
          new="    return skip_reason  # planted",
          targets=("tests/wire/test_refused_skip.py", "tests/core/test_mut_boundary.py"),
          why="a provider skipped for a refused field is recorded only 'untranslatable', the field in a log line"),
    # --- workstream hedge (issue 32 item 4): budgeted hedging ---
    Break(row="TRAFFIC-HEDGE", file="src/routeproof/core/hedge.py",
          old="DEFAULT_BURST = 10\n", new="DEFAULT_BURST = 1  # planted\n",
          targets=("tests/core/test_hedge.py::test_the_default_bucket_hedges_a_cluster_of_slow_answers",
                   "tests/traffic/test_hedge_config.py::test_a_fixed_and_a_p95_delay_load"),
          why="the hedge bucket holds one hedge unless configured: a cluster of slow answers keeps the p99"),
    Break(row="TRAFFIC-HEDGE", file="src/routeproof/core/hedge.py",
          old="    if bucket_milli < MILLI:  # judged when the hedge is due",
          new="    if False:  # planted",
          targets=("tests/traffic/test_hedge.py::test_hedges_stay_within_the_ratio",
                   "tests/core/test_hedge.py::test_never_names_its_reason"),
          why="the extra-request ratio is not enforced: every slow call hedges, whatever the bucket holds"),
    Break(row="TRAFFIC-HEDGE", file="src/routeproof/core/hedge.py",
          old="        return HedgeNever(reason=NeverReason.NO_OTHER_DEPLOYMENT)\n    if position is None:",
          new="        return HedgeNever(reason=NeverReason.NO_OTHER_DEPLOYMENT)\n"
              "    if bucket_milli < MILLI:  # planted: judged at the start\n"
              "        return HedgeNever(reason=NeverReason.RATIO_SPENT)\n    if position is None:",
          targets=("tests/core/test_hedge.py::test_an_empty_bucket_is_judged_when_the_hedge_is_due_not_before",
                   "tests/traffic/test_hedge.py::"
                   "test_a_call_started_on_an_empty_bucket_hedges_with_the_tokens_earned_during_its_delay"),
          why="the bucket is judged when a call starts: one hedge drains it and the calls starting next never hedge"),
    Break(row="TRAFFIC-HEDGE", file="src/routeproof/call.py",
          old="        return cancelled_booking_pico_usd(reservation.amount_pico_usd)",
          new="        return 0  # planted",
          targets=("tests/traffic/test_hedge.py::test_the_cancelled_loser_is_billed_its_reservation",),
          why="the cancelled loser is not billed: a request the provider may bill books nothing"),
    Break(row="TRAFFIC-HEDGE", file="src/routeproof/core/hedge.py",
          old="    needed_ms = max(MIN_HEDGE_LEFT_MS, wait_ms)",
          new="    needed_ms = 0  # planted",
          targets=("tests/traffic/test_hedge.py::test_no_hedge_after_the_deadline_could_cover_it",
                   "tests/core/test_hedge.py::test_no_hedge_the_deadline_cannot_cover"),
          why="a hedge is sent when the deadline leaves it no time to answer"),
    Break(row="TRAFFIC-HEDGE", file="src/routeproof/core/hedge.py",
          old="                if chain[p].provider != pending.entry.provider and state.attempts_on(chain[p]) == 0",
          new="                if state.attempts_on(chain[p]) <= 1  # planted",
          targets=("tests/traffic/test_hedge.py::test_a_slow_primary_loses_to_the_hedge",
                   "tests/core/test_hedge.py::test_a_due_hedge_goes_to_the_other_deployment_of_the_group"),
          why="the hedge goes to the deployment that is already slow (the same one), not another"),
    Break(row="TRAFFIC-HEDGE", file="src/routeproof/core/hedge.py",
          old="    return AttemptStatus.HEDGE_CANCELLED if other_failure is None else AttemptStatus.FAILED_OVER",
          new="    return AttemptStatus.HEDGE_CANCELLED  # planted",
          targets=("tests/traffic/test_hedge.py::test_a_primary_failing_during_the_race_leaves_the_hedge_to_answer",
                   "tests/core/test_hedge.py::test_a_loser_that_failed_is_recorded_failed_over_with_its_status"),
          why="a loser that failed during the race (a 503) is recorded as cancelled, hiding the failure"),
    # issue 28 (conformance-2): the judge's many-call totals, the drop report, the per-request template
    Break(row="CONF-TOTALS", file="src/routeproof/conformance/judge.py",
          old="    return _totals(case, calls) + _jitter_spread(case, calls)",
          new="    return _jitter_spread(case, calls)  # planted",
          targets=("tests/conformance/test_format3_judge.py::test_totals_bound_requests_and_outcomes_over_all_calls",),
          why="a case's totals (weighted shares, rpm, retry budget) are never judged"),
    Break(row="CONF-DROPPED", file="src/routeproof/conformance/judge.py",
          old="        names.add(re.split(r\"[.\\[]\", name, maxsplit=1)[0])",
          new="        pass  # planted",
          targets=("tests/conformance/test_format3_judge.py::test_dropped_and_not_dropped_are_judged_by_the_callers_top_level_name",),
          why="a reported tools[].function.strict does not count as dropping 'tools'"),
    Break(row="CONF-PER-CASE", file="src/routeproof/conformance/subjects.py",
          old="        config = {**self.config, **(self.single if len(filled) == 1 else {})}",
          new="        config = dict(self.config)  # planted",
          targets=("tests/conformance/test_format3_judge.py::test_a_per_case_template_writes_each_chain_and_a_single_strategy_for_one_provider",),
          why="a one-provider chain gets Portkey's fallback strategy instead of single"),
    Break(row="CONF-RERUN-ALONE", file="src/routeproof/conformance/run.py",
          old=" and bool(result.failures) and all(f.check in TIMING_CHECKS for f in result.failures)",
          new="  # planted: any failure",
          targets=("tests/conformance/test_rerun_alone.py",),
          why="a wrong outcome is run again until it passes: a flaky implementation is called conforming"),
    Break(row="CONF-RERUN-ALONE", file="src/routeproof/conformance/run.py",
          old="        for case in order:\n            if case[\"id\"] in first:",
          new="        for case in ():  # planted\n            if case[\"id\"] in first:",
          targets=("tests/conformance/test_rerun_alone.py",),
          why="a timing failure from the run's own load (a stall on a busy CI host) fails the suite"),
    Break(row="CONF-RERUN-ALONE", file="src/routeproof/conformance/cli.py",
          old="            rerun_alone=args.rerun_alone,", new="            rerun_alone=False,  # planted",
          targets=("tests/conformance/test_rerun_alone.py::test_the_run_command_reruns_by_default_and_says_so",),
          why="the run command (what CI calls) never reruns: the suite's own load fails a gate again"),
    Break(row="CONF-LAUNCH-PORT", file="src/routeproof/conformance/launch.py",
          old="    for _ in range(200 if low - _LAUNCH_PORTS_FROM >= 1_000 else 0):",
          new="    for _ in range(0):  # planted",
          targets=("tests/conformance/test_gateway_launch.py::test_a_gateways_port_is_one_the_os_never_hands_to_bind_0_or_connect",),
          why="a gateway's port comes from bind(0) again: a case's mocks can take it first, and its calls reach them"),
    Break(row="CONF-LAUNCH-PORT", file="src/routeproof/conformance/launch.py",
          old="        if port not in _handed_out and _bindable(port):",
          new="        if port not in _handed_out:  # planted",
          targets=("tests/conformance/test_gateway_launch.py::test_a_port_something_listens_on_is_never_handed_out",),
          why="a port something already listens on is handed to a gateway, which fails to bind it"),
    Break(row="PERF-NOSDK-SPAN", file="src/routeproof/observe.py",
          old="    return type(trace.get_tracer_provider()) in _NO_SDK", new="    return True  # planted",
          targets=("tests/money/test_telemetry.py::test_each_attempt_span_carries_genai_attributes_and_the_ledgers_usage",),
          why="the no-SDK shortcut taken with an SDK installed: attempt spans are no longer recorded"),
    # workstream "front" (issue 29), this stop: the Router's grouped options
    Break(row="FRONT-OPTIONS-WARN", file="src/routeproof/router_options.py", old="    if old:\n        warnings.warn(",
          new="    if False:  # planted\n        warnings.warn(",
          targets=("tests/router/test_options.py::test_old_keywords_still_work_and_warn_with_the_new_spelling",),
          why="an old flat Router keyword is taken silently (no DeprecationWarning naming the new spelling)"),
    Break(row="FRONT-OPTIONS-BESIDE", file="src/routeproof/router_options.py",
          old="        if old and group is not None:\n", new="        if False:  # planted\n",
          targets=("tests/router/test_options.py::test_an_old_keyword_beside_its_new_group_is_refused",),
          why="limits= and attempt_timeout_s= together: one of them is silently ignored"),
    Break(row="FRONT-ONE-HOME-TEXT", file="src/routeproof/gateway/app.py",
          old='StreamError(message=f"{STREAM_INTERRUPTED}: the gateway is shutting down")',
          new='StreamError(message="stream interrupted: the gateway is shutting down")',
          targets=("tests/structure/test_one_home.py::test_stream_interrupted_is_written_once",),
          why='"stream interrupted" spelled again outside core/constants.py'),
    Break(row="FRONT-ONE-HOME-UNITS", file="src/routeproof/ports.py",
          old="return max(0, wall_ms(self.wall_clock()))", new="return max(0, int(self.wall_clock() * 1000))",
          targets=("tests/structure/test_one_home.py::test_unit_conversions_stay_in_clock_or_on_the_shrinking_list",),
          why="a seconds->ms conversion written outside clock.py"),
    # workstream "responses" (issue 24, second stop): verbatim Responses passthrough
    Break(row="RESPONSES-PINNED", file="src/routeproof/providers/_passthrough.py",
          old="        raise ResponsesRefused(choice.field, choice.why)",
          new="        return replace(request, origin=None)  # planted: the estimate sent as the request",
          targets=("tests/gateway/test_responses_passthrough.py",),
          why="a previous_response_id request fails over to providers without that state (faked on Bedrock)"),
    Break(row="RESPONSES-VERBATIM", file="src/routeproof/core/responses_route.py",
          old="    out = {key: value for key, value in body.items() if key not in RESPONSES_ROUTER_OWNED}",
          new="    out = {key: value for key, value in body.items() if key not in RESPONSES_ROUTER_OWNED"
              " and not key.startswith('a_')}",
          targets=("tests/gateway/test_responses_route.py", "tests/gateway/test_responses_passthrough.py"),
          why="the verbatim Responses body drops a field this code does not know"),
    Break(row="RESPONSES-COMMIT", file="src/routeproof/core/formats/responses_upstream.py",
          old='        if kind == "response.output_text.delta":',
          new='        if kind in ("response.output_text.delta", "response.created"):',
          targets=("tests/gateway/test_responses_passthrough.py",),
          why="response.created counts as content: a stream cut before its first delta no longer fails over"),
    Break(row="RESPONSES-RELAY-CUT", file="src/routeproof/gateway/responses_wire.py",
          old="        if isinstance(event, StreamError) and not self._failed:",
          new="        if False:  # planted",
          targets=("tests/gateway/test_responses_passthrough.py",),
          why="a relayed Responses stream cut after its first content ends silently, no response.failed"),
    Break(row="AZURE-ENTRA-REFRESH", file="src/routeproof/providers/azure.py",
          old="        if self.current is None or token_refresh_due(self._expires_on, int(self._wall_s())):",
          new="        if self.current is None:  # planted",
          targets=("tests/providers/test_azure_entra.py",),
          why="an Entra token is read once and sent past its expiry"),
    Break(row="AZURE-401-RESEND", file="src/routeproof/core/entra.py",
          old="    return refreshable and not resent and http_status == 401",
          new="    return refreshable and http_status == 401",
          targets=("tests/providers/test_azure_entra.py",),
          why="a 401 from Azure is resent with a fresh token again and again, not once"),
    Break(row="GEMINI-STREAM-THINKING", file="src/routeproof/providers/gemini.py",
          old="if isinstance(e, MessageStop) and output is not None and output > e.usage.completion_tokens",
          new="if isinstance(e, MessageStop) and output is not None and output < e.usage.completion_tokens",
          targets=("tests/providers/test_gemini.py",),
          why="a Gemini stream's thinking tokens (only in total_tokens) are not billed as output"),
    # issue 26 (money): a usage reported before a cut is booked
    Break(row="MONEY-CUT-AFTER-USAGE", file="src/routeproof/core/formats/sse_dialects.py",
          old="            state.usage_reported = True\n", new="            pass  # planted\n",
          targets=("tests/money/test_cut_after_usage.py",),
          why="an Anthropic stream cut after message_delta books the reserved worst case, not the usage it reported"),
    Break(row="MONEY-CUT-AFTER-USAGE", file="src/routeproof/streaming.py",
          old="await settle(end, reported=reported,", new="await settle(end,",
          targets=("tests/money/test_cut_after_usage.py",),
          why="the relay ignores the usage a cut stream reported (+1,404,000,000 pico-USD per call in the matrix)"),
    Break(row="MONEY-CUT-AFTER-USAGE", file="src/routeproof/providers/_stream.py",
          old="        return interrupted(event.message, secrets, _reported_usage(decoder))",
          new="        return interrupted(event.message, secrets)  # planted",
          targets=("tests/money/test_cut_after_usage.py",),
          why="a stream whose body ends (early EOF) after its usage event loses the usage on its way to the relay"),
    Break(row="MONEY-CUT-AFTER-USAGE", file="src/routeproof/providers/_stream.py",
          old='yield interrupted(f"{type(exc).__name__}: {exc}", secret_values, _reported_usage(decoder))',
          new='yield interrupted(f"{type(exc).__name__}: {exc}", secret_values)  # planted',
          targets=("tests/money/test_cut_after_usage.py",),
          why="a stream reset after its usage event loses the usage on its way to the relay"),
    Break(row="MONEY-LEDGER-CONFIG", file="src/routeproof/factory.py",
          old="    ledger = ledger if ledger is not None else config.ledger\n", new="",
          targets=("tests/money/test_ledger_from_config.py",),
          why="router_from_config ignores the file's [ledger] table: the Router books in memory, cost reads the file"),
    Break(row="MONEY-CONTEXT-FIT", file="src/routeproof/core/routing.py",
          old="        if window is not None and needed > window:",
          new="        if window is not None and needed >= window:",
          targets=("tests/money/test_context_fit.py",),
          why="a request that exactly fits a model's context window is skipped (never skip what fits)"),
    Break(row="MONEY-CONTEXT-FIT", file="src/routeproof/driver.py",
          old="        misfits=_misfits(ports, req, chain),\n", new="",
          targets=("tests/money/test_context_fit.py",),
          why="a request too large for the first model's context window is sent to it instead of skipped"),
    Break(row="MONEY-STATEFUL", file="src/routeproof/ledger_store/sqlite.py",
          old="            state = commit(state, held, held.amount_pico_usd)\n",
          new="            state = commit(state, held, 0)  # planted\n",
          targets=("tests/money/test_money_machine.py",),
          why="a lapsed lease of a killed process books $0 instead of its worst case (the crash rule)"),
    Break(row="MONEY-SPAN-USAGE", file="src/routeproof/streaming.py",
          old="opened.span.end(usage=usage, response_model=entry_model, error=error)",
          new="opened.span.end(response_model=entry_model, error=error)",
          targets=("tests/money/test_span_usage.py",),
          why="a streamed attempt's span ends without the usage the ledger booked for it"),
    Break(row="MONEY-SPAN-USAGE", file="src/routeproof/driver.py",
          old="handed = span.hand_on()", new="handed = span  # planted",
          targets=("tests/money/test_span_usage.py",),
          why="a streamed attempt's span ends at its first event again (its usage reaches the metric only)"),
    Break(row="MONEY-SPAN-USAGE", file="src/routeproof/driver.py",
          old="    opened.span.end()\n    await close_events(opened.events)",
          new="    await close_events(opened.events)",
          targets=("tests/money/test_span_usage.py::test_a_hedge_race_loser_whose_stream_opened_ends_its_span",),
          why="a hedge loser whose stream opened never ends its span (never exported)"),
    Break(row="HARDEN-STRAY-LOOP", file="tests/support.py",
          old="policy.get_event_loop()  # looptime's lookup finds this one", new="None  # planted",
          targets=("tests/structure/test_stray_loop_guard.py",),
          why="the guard looks for looptime's loop only after the test: one unset by asyncio.run leaks (rc 1)"),
    Break(row="HARDEN-MOCK-STOP", file="src/routeproof/mock/server.py",
          old="            await _pause(delay_s, stopping)\n", new="            await asyncio.sleep(delay_s)\n",
          targets=("tests/mock/test_scripting.py::test_stop_during_a_scripted_delay_ends_it_without_cancelling_the_handler",),
          why="stop() cancels a handler in a scripted delay: Python 3.11 logs its CancelledError"),
    Break(row="MONEY-KILL9", file="src/routeproof/ledger_store/sqlite.py",
          old='"SELECT id FROM ledger_reservations WHERE lease_until_ms <= ? ORDER BY id", (self.now_ms,)',
          new='"SELECT id FROM ledger_reservations WHERE lease_until_ms <= ? ORDER BY id", (self.now_ms - 3_600_000,)',
          targets=("tests/money/test_kill9.py::test_sqlite_two_processes_one_killed_mid_call",),
          why="the lease of a process killed -9 mid-call never runs out: its reservation stays open for an hour"),
    Break(row="MONEY-SERVICE-TIER", file="src/routeproof/core/pricing.py",
          old="        return next((price for name, price in self.service_tiers if name == tier), self)",
          new="        return self  # planted",
          targets=("tests/money/test_service_tiers.py",),
          why="an answer served on OpenAI's priority tier is billed at the standard price (under-counted 1.7 x)"),
    Break(row="MONEY-SERVICE-TIER", file="src/routeproof/core/pricing.py",
          old="for p in price.every_tier)", new="for p in (price,))",
          targets=("tests/money/test_service_tiers.py::test_the_reservation_bounds_the_dearest_tier",),
          why="the reservation bounds only the standard tier: a priority answer overruns it"),
    # --- workstream traffic, second stop (issue 32): provider headers, tenant limits, affinity ---
    Break(row="TRAFFIC-HEADER-LIMITS", file="src/routeproof/core/ratelimit_headers.py",
          old="        if limit.remaining > 0 or limit.reset_at_ms is None or limit.reset_at_ms <= now_ms:",
          new="        if limit.remaining >= 0 or limit.reset_at_ms is None or limit.reset_at_ms <= now_ms:",
          targets=("tests/traffic/test_header_limits.py",),
          why="a provider's 0-remaining header is read but never blocks: the next call gets the provider's 429"),
    Break(row="TRAFFIC-HEADER-LIMITS", file="src/routeproof/call.py",
          old="        if block is not None:  # its provider said 0 left until a reset (core/ratelimit_headers.py)",
          new="        if block is None:  # planted",
          targets=("tests/traffic/test_header_limits.py",),
          why="the shell ignores the block the headers imposed: the deployment is sent to anyway"),
    Break(row="TRAFFIC-TENANT-LIMITS", file="src/routeproof/traffic_store/tenant_limits.py",
          old="        if isinstance(outcome, RateTicket):\n            return None",
          new="        if outcome is not None:  # planted\n            return None",
          targets=("tests/traffic/test_tenant_limits.py::test_a_tenant_hammering_gets_429s_and_the_other_tenant_all_succeeds",),
          why="a tenant over its rpm is let through: its calls reach the providers past its limit"),
    Break(row="TRAFFIC-TENANT-LIMITS", file="src/routeproof/traffic_store/tenant_limits.py",
          old="await self._store.try_reserve(TENANT_KEY_PREFIX + tenant, limits,",
          new="await self._store.try_reserve(TENANT_KEY_PREFIX, limits,",
          targets=("tests/traffic/test_tenant_limits.py::test_a_tenant_hammering_gets_429s_and_the_other_tenant_all_succeeds",),
          why="every tenant counts in one window: one tenant's burst spends the others' limits"),
    Break(row="TRAFFIC-AFFINITY", file="src/routeproof/call.py",
          old="        self.ports.traffic.confirm_pin(self.req, action.entry.provider, self.now_ms)",
          new="        pass  # planted",
          targets=("tests/traffic/test_header_limits.py::test_an_affinity_pin_moves_to_the_deployment_that_answered",),
          why="the pin reserved at ordering is never confirmed: a prefix stays pinned to one that never served it"),
    Break(row="TRAFFIC-AFFINITY", file="src/routeproof/traffic_store/port.py",
          old="        for key, marker_ttl_ms in keys:\n"
              "            self._pins[key] = self._pin(chain[0].provider.value, ttl_ms, marker_ttl_ms, now_ms)\n"
              "        return chain",
          new="        return chain  # planted: pinned only once an answer confirms it",
          targets=("falsification/test_traffic_affinity.py",),
          why="no pin before the first request of a prefix is sent (LiteLLM's bug): a burst of one prefix scatters"),
    Break(row="TRAFFIC-RATE-LIMIT-2P", file="src/routeproof/traffic_store/redis_store.py",
          old="if rpm >= 0 and n >= rpm then", new="if rpm >= 0 and n > rpm then",
          targets=("falsification/test_traffic_two_processes.py::test_traffic_rate_limit_with_two_processes_on_one_redis",),
          why="the shared Redis window admits one request past rpm: the provider answers 429"),
    Break(row="TRAFFIC-WEIGHTED-2P", file="src/routeproof/core/balance.py",
          old="        ordered.append(rest.pop(_pick(weights, draws.pop(0) if draws else 0.0)))",
          new="        ordered.append(rest.pop(_pick([MICRO] * len(rest), draws.pop(0) if draws else 0.0)))",
          targets=("falsification/test_traffic_two_processes.py::test_traffic_weighted_with_two_processes_on_one_redis",),
          why="weights are ignored in each gateway process: shares drift to uniform"),
)  # fmt: skip


def missing_rows() -> list[str]:
    """Contract rows with no registered break."""
    covered = {b.row for b in BREAKS}
    return [row for row in ROWS if row not in covered]


def _copy_tree(into: Path) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".hypothesis")
    for name in (*COPIED, *COPIED_FRONT):
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, into / name, ignore=ignore)
        elif source.exists():
            shutil.copy2(source, into / name)


def applies(brk: Break) -> str | None:
    """None when the break applies to the current code, else why not."""
    text = (ROOT / brk.file).read_text(encoding="utf-8")
    count = text.count(brk.old)
    return None if count == 1 else f"{brk.file}: the text to replace occurs {count} times (expected once)"


class _Copies:
    """One copy directory per worker thread, used again for each of its rows.

    The tree is copied afresh for every row (``shutil.copy2`` keeps each file's time), but at the same
    path: with tox's ``PYTHONPYCACHEPREFIX`` the bytecode of the modules a row does not break (and
    pytest's rewritten test modules) is then compiled once per worker, not once per row. The broken
    file's own bytecode is removed before each row: the file is new, and two breaks of one file written
    within a second with the same size would otherwise share a stale entry.
    """

    def __init__(self) -> None:
        self._local = threading.local()
        self._lock = threading.Lock()
        self._made: list[Path] = []

    def fresh(self) -> Path:
        """This thread's copy directory, emptied."""
        work: Path | None = getattr(self._local, "work", None)
        if work is None:
            work = Path(tempfile.mkdtemp(prefix="teeth-"))
            self._local.work = work
            with self._lock:
                self._made.append(work)
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir()
        return work

    def remove_all(self) -> None:
        """Every copy made, and its bytecode under the pycache prefix."""
        with self._lock:
            made, self._made = self._made, []
        for work in made:
            shutil.rmtree(work, ignore_errors=True)
            if (bytecode := _bytecode_dir(work)) is not None:
                shutil.rmtree(bytecode, ignore_errors=True)


COPIES = _Copies()


def _bytecode_dir(directory: Path) -> Path | None:
    """Where Python caches the bytecode of ``directory``'s modules when a pycache prefix is set, else None."""
    prefix = sys.pycache_prefix
    return None if prefix is None else Path(prefix) / directory.relative_to(directory.anchor)


def _forget_bytecode(source: Path) -> None:
    """Remove the cached bytecode of one source file: Python's and pytest's rewritten one."""
    if (cache := _bytecode_dir(source.parent)) is not None:
        for stale in cache.glob(f"{source.stem}.*.pyc"):
            stale.unlink(missing_ok=True)


def run_break(brk: Break) -> tuple[bool, str, float]:
    """Apply one break to a fresh copy, run its targets; (caught, detail, seconds)."""
    start = time.monotonic()
    caught, detail = _run_in_copy(brk, COPIES.fresh())
    return caught, detail, time.monotonic() - start


def _run_in_copy(brk: Break, work: Path) -> tuple[bool, str]:
    """Copy the tree into ``work``, plant the break, run its targets there; (caught, detail)."""
    _copy_tree(work)
    path = work / brk.file
    path.write_text(path.read_text(encoding="utf-8").replace(brk.old, brk.new, 1), encoding="utf-8")
    _forget_bytecode(path)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(work / "src"), str(work)])
    env["ROUTEPROOF_REPORT_DIR"] = str(work / "reports")
    # ci's search without the shrink: a break is found where ci finds it, and its failure is not then
    # minimised (EXACT-MONEY's streamed row: 89 s -> 28 s); tests/support.py registers the profile
    env["HYPOTHESIS_PROFILE"] = "teeth"
    # one seed at a time in falsify's sequential rows (falsification/seed_pool.py): the rows already run
    # --jobs at once, and two workers per row beside them made the real-socket rows run slower
    env["ROUTEPROOF_SEED_WORKERS"] = "1"
    command = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:randomly", "--no-header", *brk.targets]
    try:
        proc = subprocess.run(
            command, cwd=work, env=env, capture_output=True, text=True, timeout=TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired:
        return False, f"timed out after {TIMEOUT_S} s"
    tail = [line for line in proc.stdout.splitlines() if line.strip()][-1:] or ["(no output)"]
    return proc.returncode == 1, f"pytest exit {proc.returncode}: {tail[0][:160]}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Outcome:
    """One break's runs: how often it was caught, and the slowest run."""

    brk: Break
    caught: int
    runs: int
    worst_s: float
    detail: str  # the first miss's detail, else the last run's

    @property
    def always_caught(self) -> bool:
        """Caught in every run."""
        return self.caught == self.runs


def run_repeated(brk: Break, repeat: int) -> Outcome:
    """Run one break ``repeat`` times; keep the catch count, the worst time and the first miss."""
    caught, worst, first_miss, last = 0, 0.0, "", ""
    for _ in range(repeat):
        ok, detail, seconds = run_break(brk)
        caught += ok
        worst = max(worst, seconds)
        last = detail
        if not ok and not first_miss:
            first_miss = detail
    return Outcome(brk=brk, caught=caught, runs=repeat, worst_s=worst, detail=first_miss or last)


def write_report(outcomes: list[Outcome], into: Path) -> None:
    """``teeth.md`` (a table: catch rate per break) and ``teeth.json`` in ``into``."""
    into.mkdir(parents=True, exist_ok=True)
    rows = [
        {
            "row": o.brk.row,
            "file": o.brk.file,
            "why": o.brk.why,
            "targets": list(o.brk.targets),
            "caught": o.caught,
            "runs": o.runs,
            "worst_s": round(o.worst_s, 1),
            "detail": o.detail,
        }
        for o in outcomes
    ]
    (into / "teeth.json").write_text(json.dumps({"breaks": rows}, indent=2) + "\n", encoding="utf-8")
    lines = ["| row | caught | worst s | break |", "|---|---|---|---|"]
    lines += [f"| {r['row']} | {r['caught']}/{r['runs']} | {r['worst_s']} | {r['why']} |" for r in rows]
    (into / "teeth.md").write_text("\n".join(lines) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    """Apply every registered break (or ``--only`` some) ``--repeat`` times; each must be caught every time."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=None, help="row ids to run (default: all)")
    parser.add_argument("--list", action="store_true", help="print the registry and exit")
    parser.add_argument("--check", action="store_true", help="only check that every break applies")
    parser.add_argument("--repeat", type=int, default=1, help="runs per break; the worst case counts (default 1)")
    parser.add_argument("--report", type=Path, default=ROOT / "reports", help="where teeth.md/teeth.json go")
    parser.add_argument("--jobs", type=int, default=1, help="breaks run at once, each in its own tree (default 1)")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error(f"--repeat must be >= 1, got {args.repeat!r}")
    if args.jobs < 1:
        parser.error(f"--jobs must be >= 1, got {args.jobs!r}")
    chosen = [b for b in BREAKS if args.only is None or b.row in args.only]
    if args.list:
        for brk in BREAKS:
            print(f"{brk.row:<16} {brk.file}: {brk.why} -> {' '.join(brk.targets)}")
        return 0
    failures = 0
    stale = [(b, why) for b in chosen if (why := applies(b)) is not None]
    for brk, why in stale:
        print(f"STALE   {brk.row:<16} {why}")
    failures += len(stale)
    missing = missing_rows() if args.only is None else []
    for row in missing:
        print(f"MISSING {row:<16} no planted break registered")
    failures += len(missing)
    if args.check:
        print(f"{len(chosen) - len(stale)} of {len(chosen)} breaks apply; {len(missing)} rows without a break")
        return 1 if failures else 0
    started = time.monotonic()
    runnable = [brk for brk in chosen if not any(brk is b for b, _ in stale)]
    outcomes: list[Outcome] = []
    # each break runs in a fresh copy of the tree (at its worker's path) and its own pytest process: --jobs at once
    try:
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            for outcome in pool.map(lambda brk: run_repeated(brk, args.repeat), runnable):
                outcomes.append(outcome)
                failures += not outcome.always_caught
                verdict = "CAUGHT " if outcome.always_caught else "MISSED "
                print(
                    f"{verdict} {outcome.brk.row:<16} {outcome.caught}/{outcome.runs}  worst {outcome.worst_s:6.1f} s  "
                    f"{outcome.brk.why}: {outcome.detail}",
                    flush=True,
                )
    finally:
        COPIES.remove_all()
    write_report(outcomes, args.report)
    never_missed = sum(o.always_caught for o in outcomes)
    print(
        f"{len(chosen)} breaks x {args.repeat} runs: {never_missed} caught every time, {failures} problems, "
        f"{time.monotonic() - started:.0f} s"
    )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
