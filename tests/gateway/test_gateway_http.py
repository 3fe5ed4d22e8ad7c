"""The gateway's HTTP surface beyond the SDK calls: probes, metrics, tracing, limits, tenants, shutdown."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import httpx
import pytest

from routeproof.gateway import Backend
from routeproof.gateway.telemetry import MetricsSource
from routeproof.mock import MockProviderServer, Scripted, Shape
from tests.gateway.conftest import ENVIRON, GATEWAY_KEY, OTHER_KEY, Stack, StackFactory, agent_toml, serve

pytestmark = pytest.mark.asyncio
AUTH = {"authorization": f"Bearer {GATEWAY_KEY}"}
PRICING = Path(__file__).resolve().parents[2] / "config" / "pricing.toml"
BODY = {"model": "chat", "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]}


async def test_health_ready_and_metrics(stack: Stack) -> None:
    """healthz and readyz answer 200 while serving; /metrics shows the seed's metric names after a call."""
    async with httpx.AsyncClient(base_url=stack.url, timeout=10) as client:
        assert (await client.get("/healthz")).status_code == 200
        assert (await client.get("/readyz")).json()["ready"] is True  # per-tenant saturation beside it
        assert (await client.post("/v1/chat/completions", json=BODY, headers=AUTH)).status_code == 200
        metrics = await client.get("/metrics")
    assert metrics.headers["content-type"].startswith("text/plain; version=0.0.4")
    assert "# TYPE ai_router_latency_ms histogram" in metrics.text
    assert re.search(r'^ai_router_latency_ms_count\{model="claude-sonnet-4-20250514",provider="anthropic"\} \d+$',
                     metrics.text, re.MULTILINE)  # fmt: skip


async def test_traceparent_continues_as_a_child_span(stack: Stack) -> None:
    """An incoming traceparent reaches the provider with the same trace id and a new span id; tracestate too."""
    trace_id, span_id = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
    headers = {**AUTH, "traceparent": f"00-{trace_id}-{span_id}-01", "tracestate": "vendor=opaque"}
    async with httpx.AsyncClient(base_url=stack.url, timeout=10) as client:
        assert (await client.post("/v1/chat/completions", json=BODY, headers=headers)).status_code == 200
    outbound = stack.anthropic.journal[0].header("traceparent") or ""
    match = re.fullmatch(r"00-([0-9a-f]{32})-([0-9a-f]{16})-01", outbound)
    assert match is not None, outbound
    assert match.group(1) == trace_id
    assert match.group(2) != span_id
    assert stack.anthropic.journal[0].header("tracestate") == "vendor=opaque"


async def test_limits_and_bad_headers(stack: Stack) -> None:
    """Too big: 413; bad deadline header or body: 400, no provider call; a huge deadline is capped, not refused."""
    async with httpx.AsyncClient(base_url=stack.url, timeout=10) as client:
        huge = {**BODY, "messages": [{"role": "user", "content": "x" * 70_000}]}
        too_large = await client.post("/v1/messages", json=huge, headers=AUTH)
        bad_deadline = await client.post(
            "/v1/chat/completions", json=BODY, headers={**AUTH, "x-routeproof-deadline-ms": "soon"}
        )
        capped = await client.post(
            "/v1/chat/completions", json=BODY, headers={**AUTH, "x-routeproof-deadline-ms": "999999999"}
        )
        not_json = await client.post("/v1/chat/completions", content=b"{nope", headers=AUTH)
        wrong_method = await client.get("/v1/chat/completions", headers=AUTH)
    assert too_large.status_code == 413
    assert too_large.json()["error"]["type"] == "request_too_large"
    assert bad_deadline.status_code == 400
    assert "soon" in bad_deadline.json()["error"]["message"]
    assert not_json.status_code == 400
    assert wrong_method.status_code == 405
    assert stack.provider_requests() == 1  # only the capped one, which is served within 30 s
    assert capped.status_code == 200


async def test_tenant_policy_follows_the_key(stack: Stack) -> None:
    """team-b's key is Sovereign: no remote provider may take its call (503), none is contacted, even
    right after team-a's call to the same alias was routed (each tenant's route is its own)."""
    async with httpx.AsyncClient(base_url=stack.url, timeout=10) as client:
        first = await client.post("/v1/chat/completions", json=BODY, headers={"x-api-key": OTHER_KEY})
        team_a = await client.post("/v1/chat/completions", json=BODY, headers=AUTH)
        answer = await client.post("/v1/chat/completions", json=BODY, headers={"x-api-key": OTHER_KEY})
    assert team_a.status_code == 200
    for refused in (first, answer):
        assert refused.status_code == 503
        assert refused.json()["routeproof"]["code"] == "no_eligible_provider"
    assert stack.provider_requests() == 1  # team-a's only


async def test_unknown_aliases_are_not_kept(stack: Stack) -> None:
    """A route is made once per tenant and configured alias; a client's made-up model names are
    answered 404 and never kept, however many it sends."""
    async with httpx.AsyncClient(base_url=stack.url, timeout=10) as client:
        for n in range(50):
            answer = await client.post("/v1/chat/completions", json={**BODY, "model": f"made-up-{n}"}, headers=AUTH)
            assert answer.status_code == 404
        assert (await client.post("/v1/chat/completions", json=BODY, headers=AUTH)).status_code == 200
    assert len(stack.app.backend._routes) == 1  # team-a's route for its one alias


async def test_graceful_shutdown_finishes_in_flight_calls(make_stack: StackFactory) -> None:
    """After the stop signal an in-flight slow call still completes, and new connections are refused."""
    async with make_stack() as stack, httpx.AsyncClient(base_url=stack.url, timeout=10) as client:
        stack.anthropic.script(Scripted(delay_before_headers_s=0.5))
        call = asyncio.create_task(client.post("/v1/chat/completions", json=BODY, headers=AUTH))
        async with asyncio.timeout(5):
            await stack.anthropic.wait_for_requests(1)
        stack.stop()
        await asyncio.sleep(0.1)  # bounded: lets uvicorn close its listening socket
        with pytest.raises(httpx.ConnectError):
            async with httpx.AsyncClient(timeout=2) as fresh:
                await fresh.get(f"{stack.url}/healthz")
        answer = await call
        assert answer.status_code == 200


def _sse(text: str) -> list[tuple[str | None, str]]:
    events = []
    for block in text.split("\n\n"):
        if block.strip():
            fields = dict(line.split(": ", 1) for line in block.split("\n"))
            events.append((fields.get("event"), fields["data"]))
    return events


async def test_sse_framing_is_each_apis_own(stack: Stack) -> None:
    """Streams are framed as each API emits them: OpenAI data-only chunks ending [DONE]; Anthropic's named events."""
    async with httpx.AsyncClient(base_url=stack.url, timeout=10) as client:
        oai = await client.post("/v1/chat/completions", json={**BODY, "stream": True}, headers=AUTH)
        ant = await client.post("/v1/messages", json={**BODY, "stream": True}, headers={"x-api-key": GATEWAY_KEY})
    assert oai.headers["content-type"] == "text/event-stream"
    oai_events = _sse(oai.text)
    assert all(name is None for name, _ in oai_events)
    assert oai_events[-1] == (None, "[DONE]")
    assert '"role":"assistant"' in oai_events[0][1]
    names = [name for name, _ in _sse(ant.text)]
    assert names[:3] == ["message_start", "ping", "content_block_start"]
    assert names[-3:] == ["content_block_stop", "message_delta", "message_stop"]
    assert set(names[3:-3]) == {"content_block_delta"}


async def test_budget_exhausted_is_402(make_stack: StackFactory) -> None:
    """A daily budget smaller than one call's worst case: 402 in the client's shape, no provider contacted."""
    async with make_stack(pricing=str(PRICING), budget_usd="0.000001") as stack:
        async with httpx.AsyncClient(base_url=stack.url, timeout=10) as client:
            oai = await client.post("/v1/chat/completions", json=BODY, headers=AUTH)
            ant = await client.post("/v1/messages", json=BODY, headers={"x-api-key": GATEWAY_KEY})
        assert oai.status_code == 402
        assert oai.json()["error"]["type"] == "insufficient_quota"
        assert ant.status_code == 402
        assert ant.json()["error"]["type"] == "billing_error"
        assert stack.provider_requests() == 0


async def test_shutdown_past_the_grace_period_cuts_streams_cleanly(make_stack: StackFactory) -> None:
    """A stream still running when the grace period ends is cancelled and ends with an SSE error event."""
    async with make_stack() as stack, httpx.AsyncClient(base_url=stack.url, timeout=20) as client:
        stack.anthropic.set_default(Scripted(delay_between_chunks_s=1.0))  # ~7 s of stream; the grace is 2 s
        async with client.stream("POST", "/v1/chat/completions", json={**BODY, "stream": True}, headers=AUTH) as answer:
            assert answer.status_code == 200
            attempts = json.loads(answer.headers["x-routeproof-attempts"])
            chunks = answer.aiter_text()
            received = await anext(chunks)
            stack.stop()
            received += "".join([chunk async for chunk in chunks])
    assert attempts[-1]["status"] == "succeeded"
    assert "stream interrupted: the gateway is shutting down" in received
    assert "[DONE]" not in received


async def test_health_store_starts_before_the_first_call_and_closes_at_shutdown(
    tmp_path: Path, metrics_reader: MetricsSource | None
) -> None:
    """The lifespan awaits the health store's start before serving (a shared store's state is loaded for
    the first call) and closes the store at shutdown."""
    events: list[str] = []
    async with MockProviderServer(Shape.ANTHROPIC) as anthropic, MockProviderServer(Shape.OPENAI) as openai:
        path = tmp_path / "agent.toml"
        path.write_text(agent_toml(anthropic.base_url, openai.base_url))
        backend = Backend.load(path, environ=ENVIRON)
        store = backend.router.health_store
        real_start, real_close = store.start, store.aclose

        async def start() -> None:
            await asyncio.sleep(0.05)  # a store that takes a moment to load: serving must wait for it
            await real_start()
            events.append("started")

        async def aclose() -> None:
            await real_close()
            events.append("closed")

        store.start, store.aclose = start, aclose  # type: ignore[method-assign]
        async with serve(backend, metrics_reader) as (url, _app, _stop), httpx.AsyncClient(base_url=url) as client:
            response = await client.post("/v1/chat/completions", json=BODY, headers=AUTH, timeout=10)
            events.append(f"served {response.status_code}")
        assert events == ["started", "served 200", "closed"]


async def test_a_same_protocol_answer_is_the_providers_own_bytes(stack: Stack) -> None:
    """An Anthropic caller answered by Anthropic gets the provider's body byte for byte (its spacing,
    its key order, its UTF-8), not a re-encoding of it."""
    own = (
        '{ "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-20250514",\n'
        '  "content": [{"type": "text", "text": "caf\u00e9 \u2615"}], "stop_reason": "end_turn",'
        ' "stop_sequence": null, "usage": {"input_tokens": 3, "output_tokens": 2} }'
    ).encode()
    stack.anthropic.script(Scripted(body=own))
    headers = {"x-api-key": GATEWAY_KEY, "anthropic-version": "2023-06-01"}
    async with httpx.AsyncClient(base_url=stack.url, timeout=10) as client:
        answer = await client.post("/v1/messages", json=BODY, headers=headers)
    assert answer.status_code == 200
    assert answer.content == own
