"""Gateway mode against a real gateway: profiles, per-case configs, attribution, status classes, launch."""

from __future__ import annotations

import asyncio
import json
import os
import random
import socket
import time
import tomllib
from collections.abc import Mapping
from dataclasses import replace
from decimal import Decimal
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx

from routeproof.config import parse_config
from routeproof.conformance.cases import load_cases, select
from routeproof.conformance.judge import CallRun, judge_case
from routeproof.conformance.launch import (
    PROVIDER_KEY_ENV,
    LaunchedGateway,
    ephemeral_low,
    free_port,
    routeproof_serve_config,
)
from routeproof.conformance.report import write_breaks_report, write_report
from routeproof.conformance.run import CREDENTIALS, CaseResult, RunResult, run_case, run_suite
from routeproof.conformance.subjects import GatewaySubject, HarnessError, Launch, load_profile
from routeproof.gateway.settings import parse_gateway_settings
from routeproof.report import build_report

ROOT = Path(__file__).resolve().parents[2]
PROFILES = ROOT / "conformance" / "profiles"
SERVE = load_profile(PROFILES / "routeproof-serve.toml")
CASES = load_cases(ROOT / "conformance" / "cases")
pytestmark = pytest.mark.asyncio


def configure_message(*chain: tuple[str, str], budget_usd: str | None = None) -> dict[str, Any]:
    """A configure message for a chain of (protocol, hosting)."""
    providers = [
        {
            "name": f"p{i}",
            "protocol": protocol,
            "hosting": hosting,
            "base_url": f"http://127.0.0.1:{40000 + i}",
            "model": f"model-{i}",
            "credentials": dict(CREDENTIALS),
        }
        for i, (protocol, hosting) in enumerate(chain)
    ]
    return {"op": "configure", "case": "x", "providers": providers, "budget_usd": budget_usd}


async def test_the_routeproof_serve_profile_states_the_documented_502() -> None:
    """routeproof serve's profile says 502 stands for all_failed, invalid_response and auth, and launches serve."""
    assert SERVE.statuses[502] == ("all_failed", "invalid_response", "auth")
    assert SERVE.statuses[504] == ("deadline",)
    assert SERVE.launch is not None
    assert SERVE.launch.config == "routeproof-serve"
    assert set(SERVE.tier_keys) == {"standard", "private", "sovereign"}


async def test_the_written_agent_toml_is_one_routeproof_serve_accepts() -> None:
    """The per-case agent.toml loads in routeproof's own config and gateway loaders, chain in order."""
    written = routeproof_serve_config(
        configure_message(("openai", "public"), ("openai", "private"), ("anthropic", "public"), ("bedrock", "public")),
        SERVE,
    )
    assert not isinstance(written, str), written
    files, env = written
    data = tomllib.loads(files["agent.toml"], parse_float=Decimal)
    config = parse_config(data, environ=env, base_dir=Path("."))
    settings = parse_gateway_settings(data, environ=env)
    assert [(p.kind.value, p.model, p.base_url) for p in config.providers] == [
        ("openai", "model-0", "http://127.0.0.1:40000/v1"),
        ("vllm", "model-1", "http://127.0.0.1:40001/v1"),
        ("anthropic", "model-2", "http://127.0.0.1:40002"),
        ("bedrock", "model-3", "http://127.0.0.1:40003"),
    ]
    assert settings.aliases == (SERVE.model,)
    assert settings.tenant_for(SERVE.tier_keys["private"]) is not None
    assert env[PROVIDER_KEY_ENV] == CREDENTIALS["api_key"]


async def test_a_session_budget_is_written_with_its_prices(tmp_path: Path) -> None:
    """A case's budget becomes [driver.budget] session_usd with a pricing file routeproof loads."""
    message = configure_message(("openai", "public"), budget_usd="0.000001")
    message["providers"][0]["price"] = {"input_usd_per_mtok": "1.5", "output_usd_per_mtok": "2"}
    written = routeproof_serve_config(message, SERVE)
    assert not isinstance(written, str), written
    files, env = written
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    data = tomllib.loads(files["agent.toml"], parse_float=Decimal)
    config = parse_config(data, environ=env, base_dir=tmp_path)
    assert config.budget.session_usd == Decimal("0.000001")
    assert config.pricing_path == (tmp_path / "pricing.toml").resolve()
    assert parse_gateway_settings(data, environ=env).tenant_for("conformance-warm-up-key") is not None


async def test_six_public_openai_compatible_providers_are_six_named_instances() -> None:
    """Six public OpenAI-compatible providers (cap.six-openai-compatible) load as six named instances,
    their kinds taking turns as before, where one provider per kind made the case n/a."""
    message = configure_message(*[("openai", "public")] * 6)
    written = routeproof_serve_config(message, SERVE)
    assert not isinstance(written, str), written
    files, env = written
    config = parse_config(tomllib.loads(files["agent.toml"], parse_float=Decimal), environ=env, base_dir=Path("."))
    assert [(p.name, p.kind.value) for p in config.providers] == [
        (f"p{i}", ("openai", "openrouter")[i % 2]) for i in range(6)
    ]


async def test_two_prices_for_one_kind_and_model_are_a_reason() -> None:
    """Pricing is per (kind, model): two instances of one kind and model priced apart are n/a, with why."""
    message = configure_message(("openai", "public"), ("openai", "public"), ("openai", "public"))
    for i, p in enumerate(message["providers"]):
        p["model"] = "same-model"
        p["price"] = {"input_usd_per_mtok": str(1 + i), "output_usd_per_mtok": "2"}
    written = routeproof_serve_config(message, SERVE)
    assert isinstance(written, str)
    assert "two prices for openai 'same-model'" in written


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        (configure_message(("openai", "public"), budget_usd="0.01"), "needs a price for every provider"),
        (configure_message(("anthropic", "private")), "always public"),
    ],
)
async def test_what_agent_toml_cannot_express_is_a_reason(message: Mapping[str, Any], reason: str) -> None:
    """A session budget without prices or a private Anthropic is n/a, with why."""
    written = routeproof_serve_config(message, SERVE)
    assert isinstance(written, str)
    assert reason in written


async def test_a_static_chain_shorter_than_the_case_is_na_not_a_crash() -> None:
    """A case with more providers than a static gateway's chain is n/a before its mocks start (no KeyError)."""
    subject = GatewaySubject("http://gateway.test", load_profile(PROFILES / "litellm-proxy.toml"))
    (case,) = select(CASES, ["cap.six-openai-compatible"])
    result = await run_case(subject, case)
    await subject.aclose()
    assert result.verdict == "n/a"
    assert "chain" in result.reason


class FixedModelGateway(GatewaySubject):
    """A stand-in gateway: forwards each call to the first mock with ITS OWN model name, as gateways do."""

    def __init__(self) -> None:
        super().__init__("http://unused.test", replace(SERVE, launch=None, capabilities=()))

    @property
    def ports(self) -> tuple[int, ...] | None:
        """Any free ports."""
        return None

    def unsupported_reason(self, case: Mapping[str, Any]) -> str | None:
        """Every chain will do."""
        return None

    async def configure(self, message: Mapping[str, Any], timeout_s: float) -> Mapping[str, Any]:
        """Remember where the primary mock is."""
        self.url = message["providers"][0]["base_url"]
        return {"op": "configured"}

    async def call(self, message: Mapping[str, Any], timeout_s: float) -> Mapping[str, Any]:
        """One provider request carrying the gateway's configured model."""
        async with httpx.AsyncClient(timeout=5) as client:
            resp = await client.post(
                f"{self.url}/v1/chat/completions",
                json={"model": "gateway-model", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 8},
                headers={"authorization": "Bearer k"},
            )
        text = resp.json()["choices"][0]["message"]["content"]
        return {"op": "outcome", "class": "success", "text": text, "elapsed_ms": 1.0}


async def test_gateway_requests_count_without_the_runs_model_name() -> None:
    """A gateway's requests carry its configured model, not the run's; they are counted by the fleet they reach."""
    case = {
        "id": "fleet.count",
        "rule": "retry_schedule",
        "providers": [{"name": "a", "protocol": "openai", "default": {"answer": {"text": "from-a"}}}],
        "calls": [{"expect": {"outcome": "success", "text": "from-a", "requests": {"a": 1}}}],
    }
    by_fleet = await run_case(FixedModelGateway(), case)
    by_model_driver = FixedModelGateway()
    by_model_driver.attribution = "model"
    by_model = await run_case(by_model_driver, case)
    assert by_fleet.verdict == "pass", by_fleet.failures
    assert by_model.verdict == "fail"  # what issue 16 saw: "observed 0 requests"


async def test_a_502_agrees_with_each_class_the_profile_documents_for_it() -> None:
    """Under routeproof serve's profile a 502 passes a case expecting auth; under the default table it fails."""
    (case,) = [c for c in CASES if c["id"] == "terminal.401"]
    checks = {}
    for name, profile in {"serve": SERVE, "default": replace(SERVE, statuses={})}.items():
        subject = GatewaySubject("http://gateway.test", replace(profile, launch=None))
        with respx.mock:
            respx.post("http://gateway.test/v1/chat/completions").mock(
                return_value=httpx.Response(502, json={"error": {"message": "upstream rejected our key"}})
            )
            outcome = await subject.call(
                {"op": "call", "request": {"messages": [], "max_tokens": 8}, "tier": "standard"}, 5.0
            )
        await subject.aclose()
        run = CallRun(index=0, spec=case["calls"][0], sent_s=0.0, returned_s=0.0, outcome=outcome)
        checks[name] = [f for f in judge_case(case, [run], [], {}, {}) if f.check == "outcome"]
    assert checks["serve"] == []
    assert len(checks["default"]) == 1
    assert checks["default"][0].observed.startswith("all_failed")


async def test_a_tier_without_a_gateway_key_is_na() -> None:
    """A call at a privacy tier the profile has no gateway key for is unsupported (n/a), not sent."""
    subject = GatewaySubject("http://gateway.test", replace(SERVE, launch=None, tier_keys={"standard": "k"}))
    outcome = await subject.call({"op": "call", "request": {"messages": [], "max_tokens": 8}, "tier": "private"}, 5.0)
    await subject.aclose()
    assert outcome["op"] == "unsupported"


async def test_a_gateway_that_never_gets_ready_is_killed(tmp_path: Path) -> None:
    """A launched gateway not ready within its start timeout fails the configure and its process is gone."""
    launch = Launch(config="routeproof-serve", command=("{python}", "-c", "import time; time.sleep(60)"))
    subject = LaunchedGateway(replace(SERVE, launch=replace(launch, start_timeout_s=0.5)))
    with pytest.raises(HarnessError, match="not ready"):
        await subject.configure(configure_message(("openai", "public")), 5.0)
    proc = subject._proc
    assert proc is not None
    await subject.aclose()
    with pytest.raises(ProcessLookupError):
        os.kill(proc.pid, 0)


async def test_routeproof_serve_passes_sample_cases_end_to_end(tmp_path: Path) -> None:
    """routeproof serve, started per case, passes a retry, a provider 401 (its 502), a cut stream, a cancel
    and a Retry-After HTTP-date (which must count from the calls, not from before the gateway started)."""
    wanted = [
        "retry.503-then-200",
        "terminal.401",
        "sse.cut-after-the-first-token",
        "cancel.during-a-retry-sleep",
        "retry-after.http-date",
    ]
    cases = [c for c in CASES if c["id"] in wanted]
    assert len(cases) == len(wanted)
    async with asyncio.timeout(120):
        result = await run_suite(cases, gateway=LaunchedGateway(SERVE, log_path=tmp_path / "gw.log"), jobs=2)
    assert [(r.id, r.verdict) for r in result.results] == [(c["id"], "pass") for c in cases], [
        r.failures for r in result.results
    ]


class SlowToStartGateway(FixedModelGateway):
    """A stand-in gateway that takes 2 s to configure (a process start) and reports the Retry-After it got."""

    async def configure(self, message: Mapping[str, Any], timeout_s: float) -> Mapping[str, Any]:
        """Start slowly."""
        await asyncio.sleep(2.0)
        return await super().configure(message, timeout_s)

    async def call(self, message: Mapping[str, Any], timeout_s: float) -> Mapping[str, Any]:
        """One provider request; the outcome's text is how far ahead its Retry-After date was, in seconds."""
        async with httpx.AsyncClient(timeout=5) as client:
            resp = await client.post(
                f"{self.url}/v1/chat/completions", json={"model": "m"}, headers={"authorization": "Bearer k"}
            )
        ahead_s = parsedate_to_datetime(resp.headers["retry-after"]).timestamp() - time.time()
        return {"op": "outcome", "class": "success", "text": f"{ahead_s:.1f}", "elapsed_ms": 1.0}


async def test_a_retry_after_date_counts_from_the_calls_not_from_before_the_gateway_started() -> None:
    """The HTTP-date the mock sends is written after configure: a slow gateway start does not eat into it."""
    (case,) = [c for c in CASES if c["id"] == "retry-after.http-date"]
    async with asyncio.timeout(30):
        result = await run_case(SlowToStartGateway(), case)
    assert float(result.outcomes[0]["text"]) > 3.5


@pytest.mark.parametrize(
    ("end", "expected"), [("data: [DONE]", ("success", 1)), ('data: {"error": {}}', ("stream_error", 0))]
)
async def test_a_streamed_tool_call_counts_only_when_the_stream_completed(end: str, expected: tuple[str, int]) -> None:
    """Tool-call deltas followed by [DONE] are one tool call; followed by an error event, none."""
    chunk = {"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"name": "lookup", "arguments": "{}"}}]}}]}
    raw = f"data: {json.dumps(chunk)}\n\n{end}\n\n"
    subject = GatewaySubject("http://gateway.test", replace(SERVE, launch=None))
    with respx.mock:
        respx.post("http://gateway.test/v1/chat/completions").mock(
            return_value=httpx.Response(200, text=raw, headers={"content-type": "text/event-stream"})
        )
        outcome = await subject.call(
            {"op": "call", "request": {"messages": [], "max_tokens": 8}, "tier": "standard", "stream": True}, 5.0
        )
    await subject.aclose()
    assert (outcome["class"], len(outcome["tool_calls"])) == expected


async def test_the_html_report_reads_scorecards_next_to_the_kill_table(tmp_path: Path) -> None:
    """`routeproof report` shows the conformance scorecards even when conformance-breaks.json sits beside them."""
    result = RunResult(
        impl="routeproof-serve",
        version="0.1.0",
        capabilities=(),
        results=(CaseResult(id="retry.503-then-200", rule="retry_schedule", acs=(), title="t", verdict="pass"),),
        wall_s=1.0,
    )
    write_report(result, tmp_path)
    write_breaks_report(
        [{"break": "retry_400", "rules": ["terminal_statuses"], "cases": 1, "killed_by": ["x"]}], tmp_path
    )
    report = build_report(tmp_path)
    assert report.problems == ()
    assert "conformance" in report.sections


async def test_a_gateways_port_is_one_the_os_never_hands_to_bind_0_or_connect() -> None:
    """Each launched gateway's port lies below the ephemeral range (a case's mocks bind port 0 and
    every client connection takes an ephemeral port: neither can take it before the gateway binds
    it) and is never handed out twice by one runner."""
    ports = [free_port() for _ in range(40)]
    assert len(set(ports)) == len(ports)
    assert all(20_000 <= port < ephemeral_low() for port in ports), ports


async def test_a_port_something_listens_on_is_never_handed_out(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        for candidate in range(31_000, 31_100):  # a listener below the ephemeral range
            try:
                taken.bind(("127.0.0.1", candidate))
                break
            except OSError:
                continue
        taken.listen()
        busy = taken.getsockname()[1]
        draws = iter([busy, busy, busy + 1 if busy + 1 < ephemeral_low() else busy - 1])
        monkeypatch.setattr(random.SystemRandom, "randrange", lambda self, lo, hi: next(draws))
        assert free_port() != busy
