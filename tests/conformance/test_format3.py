"""Case format 3 / protocol conformance-2: derived needs (an old harness reports n/a), the new
expectations, the gateway driver's API shapes and typed-event reader, and the serve config writer."""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from routeproof.config import parse_config
from routeproof.conformance.cases import expand_calls, load_cases, needs
from routeproof.conformance.judge import CallRun, judge_case
from routeproof.conformance.launch import routeproof_serve_config
from routeproof.conformance.run import CREDENTIALS, run_case
from routeproof.conformance.subjects import _responses_answer, _typed_sse_text, load_profile
from routeproof.providers.capabilities import MODELS_TOML_ENV
from tests.conformance.test_judge import req

ROOT = Path(__file__).resolve().parents[2]
CASES = {c["id"]: c for c in load_cases(ROOT / "conformance" / "cases")}
SERVE = load_profile(ROOT / "conformance" / "profiles" / "routeproof-serve.toml")
NEW_CAPABILITIES = {"request", "anthropic_request", "responses", "model_capabilities"} | {
    "dropped",
    "weights",
    "rate_limits",
    "retry_budget",
}


def test_every_feature_of_format_3_implies_its_capability() -> None:
    """A case cannot forget to declare what it needs: the runner derives it from the case's content."""
    assert needs(CASES["capability.anthropic-image-skips-a-text-only-provider"]) == [
        "anthropic",
        "request",
        "anthropic_request",
        "model_capabilities",
    ]
    assert needs(CASES["balance.failover-within-the-group-first"]) == ["weights"]
    assert needs(CASES["retrybudget.an-outage-is-not-a-retry-storm"]) == ["retry_budget"]
    assert "dropped" in needs(CASES["drops.same-protocol-carries-the-field"])
    assert "responses" in needs(CASES["responses.streamed"])


def test_no_case_of_formats_1_and_2_needs_a_conformance_2_capability() -> None:
    """Every case before file 13 runs on a conformance-1 harness exactly as before."""
    old = [c for c in CASES.values() if not c["file"].startswith("13-")]
    assert len(old) == 98
    assert all(not NEW_CAPABILITIES & set(needs(c)) for c in old)


class OldHarness:
    """A conformance-1 harness: it declares none of conformance-2's capabilities."""

    def __init__(self) -> None:
        self.info: Mapping[str, Any] = {"capabilities": ["stream", "anthropic"]}

    async def configure(self, message: Any, timeout_s: float) -> Any:
        raise AssertionError("a case needing an undeclared capability must not be configured")

    async def call(self, message: Any, timeout_s: float) -> Any:
        raise AssertionError("never called")

    async def aclose(self) -> None:
        return None


@pytest.mark.asyncio
async def test_a_conformance_1_harness_reports_a_format_3_case_na_naming_the_capability() -> None:
    result = await run_case(OldHarness(), CASES["drops.streamed-is-reported"])
    assert result.verdict == "n/a"
    assert result.reason == "capabilities not declared: request, dropped"


def test_repeat_writes_a_call_out() -> None:
    assert len(expand_calls(CASES["balance.weighted-shares"])) == 100


def _judge(case: dict[str, Any], outcomes: list[dict[str, Any]], observed: list[Any]) -> set[str]:
    runs = [
        CallRun(index=i, spec=call, sent_s=float(i), returned_s=i + 0.5, outcome=outcomes[i])
        for i, call in enumerate(expand_calls(case))
    ]
    return {f.check for f in judge_case(case, runs, observed, {}, {})}


def test_error_contains_and_body_contains() -> None:
    call = {"expect": {"error_contains": ["Image"], "body_contains": {"b": ["iVBOR"]}}}
    case = {"id": "t", "rule": "capability_routing", "calls": [call]}
    seen = req("b", 0, 0.45)
    with_image = replace(seen, entry=replace(seen.entry, body_text="iVBOR.."))
    assert _judge(case, [{"class": "no_eligible", "error": "needs images"}], [with_image]) == set()
    assert _judge(case, [{"class": "no_eligible", "error": "no provider"}], [seen]) == {
        "error_contains",
        "body_contains",
    }


def _sse(*events: dict[str, Any]) -> str:
    return "\n\n".join(f"event: {e['type']}\ndata: {json.dumps(e)}" for e in events)


def test_a_responses_stream_completes_only_with_response_completed() -> None:
    delta = {"type": "response.output_text.delta", "delta": "from-a"}
    assert _typed_sse_text(_sse(delta, {"type": "response.completed"})) == ("success", "from-a", [])
    assert _typed_sse_text(_sse(delta, {"type": "response.failed"}))[0] == "stream_error"
    assert _typed_sse_text(_sse(delta))[0] == "stream_error"  # cut: no terminal event


def test_a_done_line_after_a_typed_stream_is_no_event() -> None:
    """The LiteLLM proxy ends its Responses streams with ``data: [DONE]`` after ``response.completed``:
    a complete stream, not a malformed event (it was judged a stream error)."""
    delta = {"type": "response.output_text.delta", "delta": "from-a"}
    done = "\n\ndata: [DONE]\n\n"
    assert _typed_sse_text(_sse(delta, {"type": "response.completed"}) + done) == ("success", "from-a", [])
    assert _typed_sse_text(_sse(delta) + done)[0] == "stream_error"  # [DONE] does not complete it


def test_an_anthropic_stream_reads_text_and_tool_calls() -> None:
    events = _sse(
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hi"}},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "name": "lookup"}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{}"}},
        {"type": "message_stop"},
    )
    assert _typed_sse_text(events) == ("success", "hi", [{"name": "lookup", "arguments": "{}"}])


def test_a_responses_answer_reads_output_text_and_function_calls() -> None:
    doc = {
        "status": "completed",
        "output": [
            {"type": "message", "content": [{"type": "output_text", "text": "from-a"}]},
            {"type": "function_call", "name": "lookup", "arguments": "{}"},
        ],
    }
    assert _responses_answer(doc) == ("from-a", [{"name": "lookup", "arguments": "{}"}])
    with pytest.raises(ValueError, match="failed"):
        _responses_answer({**doc, "status": "failed"})


def test_the_serve_writer_writes_groups_limits_budget_and_capability_rows(tmp_path: Path) -> None:
    providers: list[dict[str, Any]] = [
        {
            "name": n,
            "protocol": "openai",
            "hosting": "public",
            "base_url": f"http://127.0.0.1:{40000 + i}",
            "model": f"model-{n}",
            "credentials": dict(CREDENTIALS),
        }
        for i, n in enumerate("abc")
    ]
    providers[0] |= {"priority": 1, "weight": 3, "capabilities": {"images": False}}
    providers[1] |= {"priority": 2, "rpm": 10}
    providers[2] |= {"priority": 1, "weight": 1}
    message = {
        "op": "configure",
        "case": "x",
        "providers": providers,
        "budget_usd": None,
        "traffic": {"strategy": "weighted", "retry_budget": {"max_tokens": 10, "token_ratio": 0.1}},
    }
    written = routeproof_serve_config(message, SERVE)
    assert not isinstance(written, str), written
    files, env = written
    assert env[MODELS_TOML_ENV] == "{dir}/models.toml"
    assert 'match = "^model\\\\-a$"' in files["models.toml"]
    assert "images = false" in files["models.toml"]
    config = parse_config(tomllib.loads(files["agent.toml"], parse_float=Decimal), environ=env, base_dir=tmp_path)
    assert [(p.name, p.priority, p.weight_micro, p.rpm) for p in config.providers] == [
        ("a", 1, 3_000_000, None),
        ("c", 1, 1_000_000, None),
        ("b", 2, 1_000_000, 10),
    ]
    assert config.traffic.strategy.value == "weighted"
    assert config.traffic.retry_budget is not None
    assert config.traffic.retry_budget.max_tokens == 10


def test_two_breaks_of_one_rule_with_the_same_evidence_are_twins() -> None:
    """``routeproof conformance breaks`` names the breaks no case tells apart (issue 28 item 2)."""
    from routeproof.conformance.cli import mark_twins

    rows: list[dict[str, object]] = [
        {"break": "x", "rules": ["r"], "evidence": {"c1": ["outcome"]}},
        {"break": "y", "rules": ["r"], "evidence": {"c1": ["outcome"]}},
        {"break": "z", "rules": ["r"], "evidence": {"c1": ["outcome"], "c2": ["gap"]}},
        {"break": "w", "rules": ["q"], "evidence": {"c1": ["outcome"]}},
        {"break": "s", "rules": ["r"], "evidence": {}},
    ]
    assert {str(r["break"]): r["twins"] for r in mark_twins(rows)} == {
        "x": ["y", "z"],  # z fails c1 as x does: x has no case of its own
        "y": ["x", "z"],
        "z": [],
        "w": [],
        "s": [],
    }


def test_one_per_case_profile_configures_chains_of_any_length() -> None:
    """Portkey's profile is a template: its x-portkey-config is written from each case's chain, on
    the case's own (fresh) mock ports, so one profile serves one- and two-provider cases alike."""
    from routeproof.conformance.subjects import GatewaySubject

    profile = load_profile(ROOT / "conformance" / "profiles" / "portkey-gateway.toml")
    assert profile.per_case is not None
    driver = GatewaySubject("http://127.0.0.1:1", profile)
    assert driver.concurrent
    assert driver.ports is None
    assert driver.fork() is not driver

    def chain(*protocols: str) -> list[dict[str, Any]]:
        return [
            {
                "name": f"p{i}",
                "protocol": protocol,
                "base_url": f"http://127.0.0.1:{41000 + i}",
                "model": f"model-{i}",
                "credentials": dict(CREDENTIALS),
            }
            for i, protocol in enumerate(protocols)
        ]

    two = json.loads(profile.per_case.case_headers(chain("openai", "openai"))["x-portkey-config"])
    assert two["strategy"] == {"mode": "fallback"}
    assert [t["custom_host"] for t in two["targets"]] == ["http://127.0.0.1:41000/v1", "http://127.0.0.1:41001/v1"]
    assert two["targets"][1]["override_params"] == {"model": "model-1"}
    one = json.loads(profile.per_case.case_headers(chain("openai"))["x-portkey-config"])
    assert one["strategy"] == {"mode": "single"}
    assert len(one["targets"]) == 1
    assert profile.per_case.reason(chain("openai", "anthropic")) is not None
    assert profile.per_case.reason(chain(*["openai"] * 9)) is not None


def test_the_litellm_proxy_writer_chains_the_case_through_fallbacks() -> None:
    from routeproof.conformance.launch import litellm_proxy_config

    profile = load_profile(ROOT / "conformance" / "profiles" / "litellm-proxy.toml")
    assert profile.launch is not None
    assert profile.launch.config == "litellm-proxy"
    providers = [
        {"name": n, "protocol": proto, "base_url": f"http://127.0.0.1:{42000 + i}", "model": f"model-{n}"}
        | {"credentials": dict(CREDENTIALS)}
        for i, (n, proto) in enumerate([("a", "openai"), ("b", "anthropic"), ("c", "openai")])
    ]
    written = litellm_proxy_config({"providers": providers, "budget_usd": None}, profile)
    assert not isinstance(written, str), written
    config = json.loads(written[0]["config.yaml"])  # JSON is YAML
    assert [m["model_name"] for m in config["model_list"]] == ["conformance", "p1", "p2"]
    assert config["model_list"][0]["litellm_params"]["api_base"] == "http://127.0.0.1:42000/v1"
    assert config["model_list"][1]["litellm_params"]["model"] == "anthropic/model-b"
    assert config["router_settings"] == {"num_retries": 2, "fallbacks": [{"conformance": ["p1", "p2"]}]}
    assert config["general_settings"]["master_key"] == "sk-conformance"
    bedrock = [{**providers[0], "protocol": "bedrock"}]
    assert isinstance(litellm_proxy_config({"providers": bedrock, "budget_usd": None}, profile), str)
