"""Each attempt span's usage equals the ledger's booking for that attempt (issue 26), on the plain and
the streamed path, retried and failed over, through the router and through the gateway: a streamed
attempt's span stays open past its first event and ends with the stream, carrying its final usage."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import httpx
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as ga
from opentelemetry.trace import StatusCode

from routeproof.config import load_config
from routeproof.core.balance import Member
from routeproof.core.hedge import HedgePolicy
from routeproof.core.routing import resolve
from routeproof.core.types import ChatRequest, Message, MessageStop, ProviderKind
from routeproof.deadline import deadline_in
from routeproof.errors import RouterError
from routeproof.factory import router_from_config, tenant_policy
from routeproof.gateway.backend import Backend
from routeproof.mock import MockProviderServer, Scripted, Shape
from routeproof.mock.journal import Bill
from routeproof.testing import Reply, ScriptedProvider
from routeproof.traffic import TrafficConfig
from tests.gateway.conftest import ENVIRON, FAST_BACKOFF, GATEWAY_KEY, agent_toml, serve
from tests.money.exact_money import AGENT, ANTHROPIC_MODEL, OPENAI_MODEL, PRICING_TEXT, SESSION, cut_stream
from tests.money.spans import Settlement, attempt_spans, check_attempts, record_settlements, recording_tracer
from tests.traffic import support as traffic_support

pytestmark = pytest.mark.asyncio
PRICING = Path(__file__).resolve().parents[2] / "config" / "pricing.toml"
FAILED = (Scripted(status=500),) * 3  # Anthropic's three attempts fail: the call fails over to OpenAI
SCRIPTS: dict[str, tuple[Scripted, ...]] = {
    "answered": (),
    "retried": (Scripted(status=503),),
    "failed over": FAILED,
}


@pytest.fixture
def spans(monkeypatch: pytest.MonkeyPatch) -> InMemorySpanExporter:
    """A recording tracer for routeproof's attempt spans."""
    return recording_tracer(monkeypatch)


@pytest.fixture
def settlements(monkeypatch: pytest.MonkeyPatch) -> list[Settlement]:
    """The ledger settlements the router makes, one per attempt, in order."""
    return record_settlements(monkeypatch)


def _bills(anthropic: MockProviderServer, openai: MockProviderServer) -> list[tuple[ProviderKind, Bill]]:
    """Every request's bill in attempt order (the chain tries Anthropic, then OpenAI)."""
    return [(ProviderKind.ANTHROPIC, b) for b in anthropic.bills] + [(ProviderKind.OPENAI, b) for b in openai.bills]


async def _router_call(tmp: Path, path: str, *, streamed: bool) -> tuple[MockProviderServer, MockProviderServer]:
    """One call along ``path`` through a router built from agent.toml (memory ledger, a session budget)."""
    async with MockProviderServer(Shape.ANTHROPIC) as anthropic, MockProviderServer(Shape.OPENAI) as openai:
        (tmp / "pricing.toml").write_text(PRICING_TEXT, encoding="utf-8")
        agent = tmp / "agent.toml"
        agent.write_text(
            AGENT.format(
                pricing=tmp / "pricing.toml",
                anthropic=anthropic.base_url,
                openai=openai.base_url + "/v1",
                anthropic_model=ANTHROPIC_MODEL,
                openai_model=OPENAI_MODEL,
                ledger="",
            ),
            encoding="utf-8",
        )
        config = load_config(agent, environ={"ANTHROPIC_API_KEY": "k", "OPENAI_API_KEY": "k"})
        router = router_from_config(config)
        policy = tenant_policy(config, "chat")
        req = ChatRequest(messages=(Message.user("2+2?"),), max_tokens=64, alias="chat")
        anthropic.script(*(cut_stream(after_usage=True) if path == "cut after usage" else SCRIPTS[path]))
        try:
            if streamed:
                stream = router.call_provider_streaming(
                    req, resolve("chat", policy), deadline_in(20), policy, session_id=SESSION
                )
                async for _ in stream:
                    pass
            else:
                await router.call_provider(req, resolve("chat", policy), deadline_in(20), policy, session_id=SESSION)
        finally:
            await router.aclose()
        return anthropic, openai


@pytest.mark.parametrize("streamed", [False, True], ids=["plain", "streamed"])
@pytest.mark.parametrize("path", list(SCRIPTS))
async def test_each_attempt_span_carries_the_usage_the_ledger_booked(
    tmp_path: Path, spans: InMemorySpanExporter, settlements: list[Settlement], path: str, streamed: bool
) -> None:
    """Router: per attempt, the span's input/output tokens are the bill's, and the ledger booked the
    bill's invoice (failed attempts: no usage, nothing booked); a streamed span ends after its usage."""
    anthropic, openai = await _router_call(tmp_path, path, streamed=streamed)
    attempts = check_attempts(spans, settlements, _bills(anthropic, openai))
    answered = attempts[-1]
    assert (answered.attributes or {})[ga.GEN_AI_RESPONSE_MODEL] in {ANTHROPIC_MODEL, OPENAI_MODEL}
    assert answered.status.status_code is StatusCode.UNSET


async def test_a_stream_cut_after_its_usage_has_that_usage_on_its_errored_span(
    tmp_path: Path, spans: InMemorySpanExporter, settlements: list[Settlement]
) -> None:
    """Cut after message_delta: the span carries the reported usage the ledger booked, with ERROR status."""
    with contextlib.suppress(RouterError):
        anthropic, openai = await _router_call(tmp_path, "cut after usage", streamed=True)
    (span,) = check_attempts(spans, settlements, _bills(anthropic, openai), cut_after_usage=True)
    assert span.status.status_code is StatusCode.ERROR
    assert "stream interrupted" in (span.status.description or "")


GATEWAY_BUDGET = FAST_BACKOFF + "[driver.budget]\nsession_usd = 100.00\n"
SAMPLED = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


@pytest.mark.parametrize("streamed", [False, True], ids=["plain", "streamed"])
@pytest.mark.parametrize("path", ["answered", "failed over"])
async def test_gateway_attempt_spans_carry_the_usage_the_ledger_booked(
    tmp_path: Path, spans: InMemorySpanExporter, settlements: list[Settlement], path: str, streamed: bool
) -> None:
    """Gateway (OpenAI wire, a sampled incoming trace): the same per-attempt equality, on the
    caller's trace."""
    async with MockProviderServer(Shape.ANTHROPIC) as anthropic, MockProviderServer(Shape.OPENAI) as openai:
        config = tmp_path / "agent.toml"
        config.write_text(agent_toml(anthropic.base_url, openai.base_url, pricing=str(PRICING), extra=GATEWAY_BUDGET))
        anthropic.script(*SCRIPTS[path])
        async with serve(Backend.load(config, environ=ENVIRON), None) as (url, _app, _stop):
            body = {"model": "chat", "max_tokens": 64, "messages": [{"role": "user", "content": "2+2?"}]}
            headers = {"authorization": f"Bearer {GATEWAY_KEY}", "traceparent": SAMPLED}
            async with httpx.AsyncClient(base_url=url, timeout=20) as client:
                if streamed:
                    body |= {"stream": True, "stream_options": {"include_usage": True}}
                    async with client.stream("POST", "/v1/chat/completions", json=body, headers=headers) as answer:
                        assert answer.status_code == 200
                        text = (await answer.aread()).decode()
                    assert "[DONE]" in text
                else:
                    answer = await client.post("/v1/chat/completions", json=body, headers=headers)
                    assert answer.status_code == 200, answer.text
    attempts = check_attempts(spans, settlements, _bills(anthropic, openai))
    assert {s.context.trace_id for s in attempts if s.context is not None} == {int(SAMPLED.split("-")[1], 16)}
    assert all(s.kind is trace.SpanKind.CLIENT for s in attempts)


@pytest.mark.looptime(end=600)
async def test_a_hedge_race_loser_whose_stream_opened_ends_its_span(spans: InMemorySpanExporter) -> None:
    """Both streams open at the same instant (a at 0.4 s, b hedged at 0.3 s + 0.1 s): the loser's
    stream is closed unrelayed and its span ends too; the winner's ends with its usage."""
    a = ScriptedProvider(name="a", default=Reply(delay_s=0.4, text="from a"))
    b = ScriptedProvider(name="b", default=Reply(delay_s=0.1, text="from b"))
    tenant = traffic_support.policy(["a", "b"])
    hedges = {traffic_support.ALIAS: HedgePolicy(delay_ms=300, max_extra_ratio_milli=1000)}
    traffic = TrafficConfig(members={"a": Member(priority=0), "b": Member(priority=0)}, hedges=hedges)
    async with traffic_support.router([a, b], traffic) as router:
        stream = router.call_provider_streaming(
            traffic_support.request(), traffic_support.resolved(tenant), asyncio.get_running_loop().time() + 20, tenant
        )
        events = [event async for event in stream]
    assert isinstance(events[-1], MessageStop)
    assert (a.open_streams, b.open_streams) == (0, 0)
    assert len(a.calls) == len(b.calls) == 1
    finished = attempt_spans(spans)
    assert len(finished) == 2  # the loser's span too: an unended span is never exported
    with_usage = [s for s in finished if ga.GEN_AI_USAGE_OUTPUT_TOKENS in (s.attributes or {})]
    assert len(with_usage) == 1
    assert (with_usage[0].attributes or {})[ga.GEN_AI_USAGE_OUTPUT_TOKENS] == events[-1].usage.completion_tokens
