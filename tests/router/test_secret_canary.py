"""A canary key, DEBUG logging everywhere and real sockets: the key is in no log record, exception,
repr or metric, whatever the call ends as (answer, 5xx, 401, reset, stream)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from routeproof.config import load_config
from routeproof.core.routing import resolve
from routeproof.core.types import ChatRequest, Message
from routeproof.deadline import deadline_in
from routeproof.errors import RouterError
from routeproof.factory import router_from_config, tenant_policy
from routeproof.mock import CutMode, MockProviderServer, Scripted, Shape
from routeproof.observe import RouterMetrics

pytestmark = pytest.mark.asyncio

CANARY = "sk-CANARY-7f3a9c-do-not-log"
AGENT = """
[driver.providers.anthropic]
base_url = "{anthropic}"
model = "claude-sonnet-4-20250514"
[driver.providers.openai]
base_url = "{openai}"
model = "gpt-4o"
[driver.failover]
failure_threshold = 100
"""


def _texts_of(exc: BaseException | None) -> list[str]:
    texts: list[str] = []
    while exc is not None:
        texts += [str(exc), repr(exc), repr(getattr(exc, "attempts", ())), repr(vars(exc))]
        exc = exc.__cause__ or exc.__context__
    return texts


@pytest.mark.parametrize("transport", ["httpx", "aiohttp"])
async def test_canary_key_reaches_no_log_exception_repr_or_metric(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch, transport: str
) -> None:
    """Every outcome runs under DEBUG on all loggers; the canary key appears in none of the artefacts.
    Over both transports: httpx's client logs every request it sends; on the default (aiohttp)
    transport plain and streamed calls skip httpx's client (``transport.direct_post``)."""
    monkeypatch.setenv("ROUTEPROOF_TRANSPORT", transport)
    reader = InMemoryMetricReader()
    metrics = RouterMetrics(MeterProvider(metric_readers=[reader]).get_meter("canary"))
    texts: list[str] = []
    async with MockProviderServer(Shape.ANTHROPIC) as anthropic, MockProviderServer(Shape.OPENAI) as openai:
        path = tmp_path / "agent.toml"
        path.write_text(AGENT.format(anthropic=anthropic.base_url, openai=openai.base_url + "/v1"))
        environ = {"ANTHROPIC_API_KEY": CANARY, "OPENAI_API_KEY": CANARY}
        config = load_config(path, environ=environ)
        router = router_from_config(config)
        router._metrics = metrics  # the same router, with readable metrics
        tenant = tenant_policy(config, "chat")
        alone = tenant_policy(config, "chat")
        alone = type(alone)(primary=alone.primary)  # anthropic only: its failures surface as errors
        req = ChatRequest(messages=(Message.user("2+2?"),), max_tokens=32, alias="chat")
        scripts = [
            (),  # a plain answer
            (Scripted(status=500), Scripted(status=500), Scripted(status=500)),  # fails over to openai
            (Scripted(status=401),),  # terminal auth error
            (Scripted(cut_after_bytes=10, cut_mode=CutMode.RESET),) * 3,  # resets
        ]
        with caplog.at_level(logging.DEBUG):
            for steps, policy in zip(scripts, (tenant, tenant, alone, alone), strict=True):
                anthropic.reset()
                anthropic.script(*steps)
                try:
                    resp = await router.call_provider(req, resolve("chat", policy), deadline_in(20), policy)
                    texts.append(repr(resp))
                except RouterError as exc:
                    texts += _texts_of(exc)
            anthropic.reset()
            stream = router.call_provider_streaming(req, resolve("chat", tenant), deadline_in(20), tenant)
            texts += [repr(event) async for event in stream]
            await router.aclose()
        texts += [repr(config), repr(config.providers), repr(router), repr(router.ledger), repr(router.health)]
    texts += [r.getMessage() for r in caplog.records] + [repr(r.__dict__) for r in caplog.records]
    texts += [caplog.text]
    data = reader.get_metrics_data()
    assert data is not None
    texts.append(data.to_json())
    if transport == "httpx":
        assert any("HTTP Request" in t for t in texts)  # httpx's DEBUG/INFO log really was captured
    assert any("router_auth_error_terminal" in t for t in texts)  # so was routeproof's own
    assert not [t for t in texts if CANARY in t or "CANARY" in t]
