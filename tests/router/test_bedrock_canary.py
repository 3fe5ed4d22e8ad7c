"""Canary AWS credentials, DEBUG logging on every logger and a real loopback Bedrock mock: the access
key, secret key and session token appear in no log record (botocore's signing log included),
exception, repr or metric, whatever the call ends as (answer, 5xx, 403, reset, stream)."""

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

CANARIES = {
    "AWS_ACCESS_KEY_ID": "AKIDCANARY7F3A9C0000",
    "AWS_SECRET_ACCESS_KEY": "secret-CANARY-7f3a9c-do-not-log",
    "AWS_SESSION_TOKEN": "token-CANARY-7f3a9c-do-not-log",
}
AGENT = """
[driver.providers.bedrock]
base_url = "{bedrock}"
region = "us-east-1"
model = "anthropic.claude-3-haiku"
[driver.failover]
failure_threshold = 100
"""


def _texts_of(exc: BaseException | None) -> list[str]:
    texts: list[str] = []
    while exc is not None:
        texts += [str(exc), repr(exc), repr(getattr(exc, "attempts", ())), repr(vars(exc))]
        exc = exc.__cause__ or exc.__context__
    return texts


async def test_bedrock_canary_credentials_reach_no_log_exception_repr_or_metric(tmp_path: Path) -> None:
    """Every outcome runs under DEBUG on all loggers; no canary credential appears in any artefact."""
    records: list[logging.LogRecord] = []

    class Capture(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    root = logging.getLogger()
    handler, old_level = Capture(level=logging.DEBUG), root.level
    reader = InMemoryMetricReader()
    metrics = RouterMetrics(MeterProvider(metric_readers=[reader]).get_meter("canary"))
    texts: list[str] = []
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        async with MockProviderServer(Shape.BEDROCK) as bedrock:
            path = tmp_path / "agent.toml"
            path.write_text(AGENT.format(bedrock=bedrock.base_url), encoding="utf-8")
            config = load_config(path, environ=CANARIES)
            router = router_from_config(config)
            router._metrics = metrics  # the same router, with readable metrics
            tenant = tenant_policy(config, "chat")
            req = ChatRequest(messages=(Message.user("2+2?"),), max_tokens=32, alias="chat")
            scripts = [
                (),  # a plain answer
                (Scripted(status=500),) * 3,  # retried, then fails
                (Scripted(status=403),),  # terminal auth error
                (Scripted(cut_after_bytes=10, cut_mode=CutMode.RESET),) * 3,  # resets
            ]
            for steps in scripts:
                bedrock.reset()
                bedrock.script(*steps)
                try:
                    resp = await router.call_provider(req, resolve("chat", tenant), deadline_in(20), tenant)
                    texts.append(repr(resp))
                except RouterError as exc:
                    texts += _texts_of(exc)
            bedrock.reset()
            stream = router.call_provider_streaming(req, resolve("chat", tenant), deadline_in(20), tenant)
            texts += [repr(event) async for event in stream]
            await router.aclose()
            texts += [repr(config), repr(config.providers), repr(router), repr(router.ledger), repr(router.health)]
    finally:
        root.removeHandler(handler)
        root.setLevel(old_level)
    formatter = logging.Formatter()
    texts += [formatter.format(r) for r in records] + [repr(r.__dict__) for r in records]
    data = reader.get_metrics_data()
    assert data is not None
    texts.append(data.to_json())
    assert any(r.name == "botocore.auth" and "CanonicalRequest" in r.getMessage() for r in records)  # really logged
    assert all("CANARY" in value for value in CANARIES.values())
    assert not [t[:200] for t in texts if "CANARY" in t]
    assert any("x-amz-security-token:<redacted>" in r.getMessage() for r in records)
