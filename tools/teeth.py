"""The teeth check: every FALSIFY/H0 row and every AC has a planted break that its check must catch.

Each :class:`Break` in :data:`BREAKS` is a small patch (replace ``old`` by ``new`` in one file; the
``old`` text must occur exactly once, so a break that no longer applies to the code is itself a
failure). ``python tools/teeth.py`` applies each break in turn to a fresh copy of the tree (the
working tree is never touched), runs the break's ``targets`` with pytest in that copy (``PYTHONPATH``
puts the copy's ``src`` before the installed package), and requires pytest to exit 1: tests ran and
at least one failed. Exit 0 (nothing caught), 2-5 (collection error, no tests, ...) or a timeout is
"not caught". The check passes only when every break is caught and every contract row has a break.

``python tools/teeth.py --list`` prints the registry; ``--only ID [ID ...]`` runs some breaks;
``--check`` only verifies that every break still applies and every row has one (no pytest runs).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COPIED = ("src", "tests", "falsification", "config", "contracts", "benchmarks", "tools", "pyproject.toml")
ROWS = (
    *(f"FALSIFY-MPA-{n:03d}" for n in range(1, 8)),
    "H0-EGRESS",
    "H0-LATENCY",
    "H0-COST",
    "H0-TRANSLATION",
    "LATENCY-SLA",
    *(f"AC-{n}" for n in range(1, 20)),
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
_FILTER = "kept, by_tier = filter_chain(tuple(e for e in chain if e.provider.is_supported), tier, endpoint_tiers)"
_OPENAI_PROMPT = "prompt_tokens=prompt - cached - written,"
_KANI = "tests/core/test_kani_bounds.py::"

BREAKS: tuple[Break, ...] = (
    Break(row="FALSIFY-MPA-001", file=_ROUTING, old=_FILTER,
          new="kept, by_tier = tuple(e for e in chain if e.provider.is_supported), ()",
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
    Break(row="FALSIFY-MPA-005", file="src/routeproof/core/translate_emit.py",
          old='            parts.append({"type": "text", "text": block.text})',
          new='            parts.append({"type": "text", "text": block.text.strip()})',
          targets=("falsification/test_mpa005_translation.py::test_falsify_mpa_005_translation_round_trip",),
          why="text blocks lose their surrounding whitespace on the way to OpenAI"),
    Break(row="FALSIFY-MPA-006", file="src/routeproof/core/sse_dialects.py",
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
          old="return _nearest_rank_p99([latency for _, latency in samples]) > state.config.sla_ms",
          new="return False  # planted: never in breach",
          targets=("falsification/test_latency_sla.py",),
          why="the latency trigger never fires: A keeps its traffic while it drifts"),
    Break(row="H0-EGRESS", file=_ROUTING, old=_FILTER,
          new="kept, by_tier = tuple(e for e in chain if e.provider.is_supported), ()",
          targets=("falsification/test_h0_egress.py",), why="the tier filter is bypassed"),
    Break(row="H0-LATENCY", file=_ROUTING, old=_FILTER,
          new=_FILTER.replace("is_supported)", "is_supported)[:1]"),
          targets=("falsification/test_h0_latency.py::test_h0_latency_cascade_vs_single_provider",),
          why="the chain is cut to its primary: a cascade is a single provider"),
    Break(row="H0-COST", file="src/routeproof/core/normalize.py", old=_OPENAI_PROMPT,
          new="prompt_tokens=prompt - written,", targets=("falsification/test_h0_cost.py",),
          why="OpenAI's cached tokens are billed twice (as prompt and as cache read)"),
    Break(row="H0-TRANSLATION", file="src/routeproof/core/translate_emit.py",
          old='return _with_cache({"type": "text", "text": block.text}, block.cache_control)',
          new='return _with_cache({"type": "text", "text": block.text.replace("\\x00", "")}, block.cache_control)',
          targets=("falsification/test_mpa005_translation.py::test_falsify_mpa_005_translation_round_trip",),
          why="NUL characters are dropped from text blocks"),
    Break(row="AC-1", file=_KERNEL, old="AttemptStatus.SUCCEEDED,\n            http_status=event.http_status,",
          new="AttemptStatus.SUCCEEDED,\n            http_status=None,",
          targets=("tests/router/test_acceptance.py::test_ac01_happy_path",),
          why="the success record loses its http_status"),
    Break(row="AC-2", file=_CONSTANTS, old="RETRY_DELAYS_MS = (200, 800)", new="RETRY_DELAYS_MS = (250, 800)",
          targets=("tests/router/test_acceptance.py::test_ac02_retry_on_503",), why="the first retry sleeps 250 ms"),
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
    Break(row="AC-15", file="src/routeproof/core/normalize.py", old=_OPENAI_PROMPT,
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
          old="    if verdict.verdict is Verdict.RETRY and state.attempts_on(call.entry) < "
              "plan.max_attempts_per_provider:",
          new="    if verdict.verdict is Verdict.RETRY and (state.attempts_on(call.entry) < "
              "plan.max_attempts_per_provider or len(plan.chain) == 3):",
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
    Break(row="AC-19", file="src/routeproof/router.py", old="from routeproof.core.types import (",
          new="from routeproof.core.types import ResolvedModel as _RM  # planted\nfrom routeproof.core.types import (",
          targets=("tests/structure/test_resolved_model_lint.py::test_ac19_resolved_model_built_only_by_alias_resolution",),
          why="the class is imported under an alias (the old regex lint missed this)"),
    # workstream "responses" (issue 24): the Responses API at the gateway
    Break(row="RESPONSES-STATEFUL", file="src/routeproof/core/responses_api.py",
          old="value is not None and value not in _IDLE_VALUES.get(field, ())",
          new="value is not None and value in _IDLE_VALUES.get(field, ())",
          targets=("tests/responses/test_responses_api.py",),
          why="a stateful field asking for server state (previous_response_id, store: true, ...) is carried, faked"),
    Break(row="RESPONSES-TOOL-TURN", file="src/routeproof/core/responses_api.py",
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
    Break(row="WIRE-PASSTHROUGH", file="src/routeproof/core/passthrough.py",
          old="    body = dict(origin)",
          new="    body = {k: v for k, v in origin.items() if k in _PARSED_KEYS[plan.protocol]}  # planted",
          targets=("tests/core/test_passthrough.py",),
          why="a same-protocol body keeps only the fields the parser knows: user, seed, newer fields are lost"),
    Break(row="WIRE-PASSTHROUGH", file="src/routeproof/core/passthrough.py",
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
          old="    dropped = fitted.dropped + cross.dropped + translated + headers\n",
          new="    dropped = fitted.dropped + cross.dropped + translated  # planted\n",
          targets=("tests/sdk/test_passthrough_clients.py::test_cross_protocol_drops_are_named_and_anthropic_gets_the_documented_cap",),
          why="a feature header left out across protocols is not named in x-routeproof-dropped"),
    Break(row="WIRE-PASSTHROUGH", file="src/routeproof/core/sse_dialects.py",
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
          old="    if resp.wire_body_json is None or kind is None",
          new="    if True or resp.wire_body_json is None or kind is None",
          targets=("tests/sdk/test_passthrough_clients.py::test_a_same_protocol_answer_reaches_the_caller_with_every_field",),
          why="a same-protocol answer is re-encoded from the neutral model: reasoning tokens and logprobs are lost"),
    Break(row="WIRE-PASSTHROUGH", file="src/routeproof/gateway/settings.py",
          old="        if name in _NEVER_FORWARDED:", new="        if False:  # planted",
          targets=("tests/gateway/test_settings.py",),
          why="the allow-list accepts authorization / x-api-key: a caller's credential would be forwarded"),
    # issue 31 core (wire-core): the content model, translation, the field table, input bounds
    Break(row="FALSIFY-MPA-005", file="src/routeproof/core/translate_emit.py",
          old='"thinking": block.thinking, "signature": block.signature}',
          new='"thinking": block.thinking, "signature": block.signature.rstrip("=")}',
          targets=("falsification/test_mpa005_translation.py::test_round_trip_impl_is_the_checked_round_trip",),
          why="a thinking block's signature is not sent back byte-exact (its base64 padding trimmed)"),
    Break(row="WIRE-UNTRANSLATED", file="src/routeproof/core/translate_common.py",
          old='            sink.append(f"{where}.{key}" if where else key)', new="            pass  # planted",
          targets=("tests/core/test_mut_translate_parse.py",),
          why="a field the parse does not carry is silently left out instead of recorded in untranslated"),
    Break(row="WIRE-FIELD-TABLE", file="src/routeproof/core/field_table.py",
          old='    "verbosity": (_D, "Anthropic has no verbosity control"),\n', new="",
          targets=("tests/core/test_field_table.py::test_every_sdk_request_field_has_a_row_per_target",),
          why="an SDK request field has no row for a target protocol"),
    Break(row="WIRE-FIELD-TABLE", file="src/routeproof/core/translate_emit.py",
          old='        ("user", req.user),\n', new="",
          targets=("tests/core/test_field_table.py::test_the_table_says_what_the_translation_does",),
          why="the table says metadata.user_id -> user (TRANSLATED) but the OpenAI body leaves it out"),
    Break(row="WIRE-DROPS", file="src/routeproof/core/translate_emit.py",
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
)  # fmt: skip


def missing_rows() -> list[str]:
    """Contract rows with no registered break."""
    covered = {b.row for b in BREAKS}
    return [row for row in ROWS if row not in covered]


def _copy_tree(into: Path) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".hypothesis")
    for name in COPIED:
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


def run_break(brk: Break) -> tuple[bool, str, float]:
    """Apply one break to a fresh copy, run its targets; (caught, detail, seconds)."""
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="teeth-") as tmp:
        work = Path(tmp)
        _copy_tree(work)
        path = work / brk.file
        path.write_text(path.read_text(encoding="utf-8").replace(brk.old, brk.new, 1), encoding="utf-8")
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(work / "src"), str(work)])
        env["ROUTEPROOF_REPORT_DIR"] = str(work / "reports")
        env.setdefault("HYPOTHESIS_PROFILE", "ci")
        command = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:randomly", "--no-header", *brk.targets]
        try:
            proc = subprocess.run(
                command, cwd=work, env=env, capture_output=True, text=True, timeout=TIMEOUT_S, check=False
            )
        except subprocess.TimeoutExpired:
            return False, f"timed out after {TIMEOUT_S} s", time.monotonic() - start
    tail = [line for line in proc.stdout.splitlines() if line.strip()][-1:] or ["(no output)"]
    return proc.returncode == 1, f"pytest exit {proc.returncode}: {tail[0][:160]}", time.monotonic() - start


def main(argv: list[str] | None = None) -> int:
    """Apply every registered break (or ``--only`` some) and require each to be caught."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=None, help="row ids to run (default: all)")
    parser.add_argument("--list", action="store_true", help="print the registry and exit")
    parser.add_argument("--check", action="store_true", help="only check that every break applies")
    args = parser.parse_args(argv)
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
    total = 0.0
    for brk in chosen:
        if any(brk is b for b, _ in stale):
            continue
        caught, detail, seconds = run_break(brk)
        total += seconds
        failures += not caught
        print(f"{'CAUGHT ' if caught else 'MISSED '} {brk.row:<16} {seconds:6.1f} s  {brk.why}: {detail}", flush=True)
    print(f"{len(chosen)} breaks, {failures} problems, {total:.0f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
