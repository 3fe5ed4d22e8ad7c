"""Case format 3's judge checks and the per-request gateway template, on synthetic inputs only (no
case files or profiles read: the teeth registry runs these in a copy of the tree without them)."""

from __future__ import annotations

import json
from typing import Any

from routeproof.conformance.cases import expand_calls
from routeproof.conformance.judge import CallRun, judge_case
from routeproof.conformance.subjects import PerCase
from tests.conformance.test_judge import req


def _judge(case: dict[str, Any], outcomes: list[dict[str, Any]], observed: list[Any]) -> set[str]:
    runs = [
        CallRun(index=i, spec=call, sent_s=float(i), returned_s=i + 0.5, outcome=outcomes[i])
        for i, call in enumerate(expand_calls(case))
    ]
    return {f.check for f in judge_case(case, runs, observed, {}, {})}


def test_totals_bound_requests_and_outcomes_over_all_calls() -> None:
    case = {
        "id": "t",
        "rule": "rate_limits",
        "calls": [{"repeat": 3, "expect": {}}],
        "totals": {"requests": {"a": [0, 2]}, "outcomes": {"success": 3}},
    }
    ok = [req("a", 0, 0.1), req("a", 1, 1.1), req("b", 0, 2.1)]
    assert _judge(case, [{"class": "success"}] * 3, ok) == set()
    over = [req("a", 0, 0.1), req("a", 1, 1.1), req("a", 2, 2.45)]
    assert _judge(case, [{"class": "success"}] * 2 + [{"class": "all_failed"}], over) == {
        "total_requests",
        "total_outcomes",
    }


def test_dropped_and_not_dropped_are_judged_by_the_callers_top_level_name() -> None:
    call = {"expect": {"dropped": ["tools"], "not_dropped": ["seed"]}}
    case = {"id": "t", "rule": "reported_drops", "calls": [call]}
    assert _judge(case, [{"class": "success", "dropped": ["tools[].function.strict"]}], []) == set()
    assert _judge(case, [{"class": "success", "dropped": ["seed"]}], []) == {"dropped", "not_dropped"}
    assert _judge(case, [{"class": "success"}], []) == {"dropped"}  # a router that reports nothing
    partly = {"id": "t", "rule": "reported_drops", "calls": [{"expect": {"not_dropped": ["response_format"]}}]}
    assert _judge(partly, [{"class": "success", "dropped": ["response_format.name"]}], []) == set()


def test_a_per_case_template_writes_each_chain_and_a_single_strategy_for_one_provider() -> None:
    template = PerCase(
        protocols=("openai",),
        max_providers=8,
        provider={"custom_host": "{base_url}/v1", "override_params": {"model": "{model}"}},
        config={"targets": "{providers}", "strategy": {"mode": "fallback"}},
        headers={"x-portkey-config": "{config}"},
        single={"strategy": {"mode": "single"}},
    )

    def chain(n: int) -> list[dict[str, Any]]:
        return [
            {"name": f"p{i}", "protocol": "openai", "base_url": f"http://127.0.0.1:{43000 + i}", "model": f"m{i}"}
            for i in range(n)
        ]

    two = json.loads(template.case_headers(chain(2))["x-portkey-config"])
    assert two == {
        "targets": [
            {"custom_host": "http://127.0.0.1:43000/v1", "override_params": {"model": "m0"}},
            {"custom_host": "http://127.0.0.1:43001/v1", "override_params": {"model": "m1"}},
        ],
        "strategy": {"mode": "fallback"},
    }
    one = json.loads(template.case_headers(chain(1))["x-portkey-config"])
    assert one["strategy"] == {"mode": "single"}
