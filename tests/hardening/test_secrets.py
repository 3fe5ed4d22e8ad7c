"""No secret in any log line: keys are validated where they enter (constructor parameters, gateway keys
at start), and with every logger at DEBUG the failure paths print no provider key, gateway key, store
password or AWS session token."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from routeproof.errors import ConfigError, ProviderCallFailed
from routeproof.gateway.settings import parse_gateway_settings
from routeproof.mock import MockProviderServer, Scripted, Shape
from routeproof.providers.anthropic import AnthropicProvider
from routeproof.providers.bedrock import BedrockProvider
from routeproof.providers.openai import OpenAIProvider
from tests.gateway.conftest import ENVIRON, FAST_BACKOFF, GATEWAY_KEY, OTHER_KEY, StackFactory
from tests.providers.conftest import BEDROCK_MODEL, request_hello

LOGGERS = ("", "httpx", "httpcore", "botocore", "uvicorn", "uvicorn.error", "uvicorn.access", "routeproof", "redis")
BAD = {"trailing newline": "sk-ant-abc123\n", "leading space": " sk-ant-abc123", "inner tab": "sk-ant\tabc123",
       "non-ASCII": "sk-ant-abc123é", "control": "sk-ant-abc\x00123"}  # fmt: skip
PRICING = Path(__file__).resolve().parents[2] / "config" / "pricing.toml"
STORE_PASSWORD = "ledger-pw-5ecret"
SESSION_TOKEN = "FwoGZXIvYXdzEXAMPLEsessionTOKENcanary"
AWS_SECRET = "wJalrXUtnFEMI-secret-canary"
BODY = {"model": "chat", "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]}


@pytest.mark.parametrize("why", sorted(BAD))
def test_provider_constructors_refuse_bad_keys_naming_the_parameter(why: str) -> None:
    """Each constructor refuses a key with whitespace, a control or a non-ASCII character, naming the
    parameter and never the value (it used to reach httpcore, whose DEBUG log printed it)."""
    value = BAD[why]
    attempts: list[tuple[str, Callable[[], object]]] = [
        ("api_key", lambda: AnthropicProvider(api_key=value)),
        ("api_key", lambda: OpenAIProvider(api_key=value)),
        ("secret_access_key", lambda: BedrockProvider(region="r", access_key_id="AKID", secret_access_key=value)),
        ("session_token", lambda: BedrockProvider(region="r", access_key_id="AKID", secret_access_key="s",
                                                  session_token=value)),
    ]  # fmt: skip
    for parameter, build in attempts:
        with pytest.raises(ValueError, match=parameter) as caught:
            build()
        assert "abc" not in str(caught.value)


def test_gateway_key_with_a_trailing_newline_fails_at_start() -> None:
    """A gateway key env var ending in a newline is refused at load naming the variable (every client
    used to get 401 with no hint); the value is not shown. An inline key likewise."""
    table = {"gateway": {"tenants": {"a": {"key_env": "GW"}}}}
    with pytest.raises(ConfigError, match="GW") as caught:
        parse_gateway_settings(table, environ={"GW": "gw-secret-value\n"})
    assert "gw-secret-value" not in str(caught.value)
    with pytest.raises(ConfigError, match="whitespace") as inline:
        parse_gateway_settings({"gateway": {"tenants": {"a": {"key": " gw-secret-value"}}}}, environ={})
    assert "gw-secret-value" not in str(inline.value)


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []
        self.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))  # the message, and the traceback if any


@pytest.fixture
def debug_lines() -> Iterator[list[str]]:
    """Every logger that could see a secret at DEBUG, collected as formatted lines (tracebacks too)."""
    handler = _Lines()
    saved = []
    for name in LOGGERS:
        logger = logging.getLogger(name)
        saved.append((logger, logger.level))
        logger.setLevel(logging.DEBUG)
        logger.addHandler(handler)
    yield handler.lines
    for logger, level in saved:
        logger.setLevel(level)
        logger.removeHandler(handler)


def _leaks(lines: list[str], secrets: tuple[str, ...]) -> list[str]:
    return [line[:300] for line in lines for secret in secrets if secret in line]


@pytest.mark.asyncio
async def test_gateway_failure_paths_log_no_secret_at_debug(make_stack: StackFactory, debug_lines: list[str]) -> None:
    """Upstream 401 and 500 echoing the key, a hang past the deadline, wrong gateway keys, a Redis ledger
    (with a password) that is down: with every logger at DEBUG no line holds any of the secrets."""
    provider_keys = (ENVIRON["ANTHROPIC_API_KEY"], ENVIRON["OPENAI_API_KEY"])
    async with make_stack() as stack, httpx.AsyncClient(base_url=stack.url, timeout=20) as client:
        echo = {"error": {"type": "x", "message": f"bad key {provider_keys[0]} {provider_keys[1]}"}}
        stack.anthropic.script(Scripted(status=401, body=echo))
        assert (await client.post("/v1/messages", json=BODY, headers={"x-api-key": GATEWAY_KEY})).status_code == 502
        stack.anthropic.script(*[Scripted(status=500, body=echo)] * 4)
        stack.openai.script(*[Scripted(status=500, body=echo)] * 4)
        assert (
            await client.post("/v1/chat/completions", json=BODY, headers={"x-api-key": GATEWAY_KEY})
        ).status_code == 502
        stack.anthropic.script(Scripted(hang=True))
        slow = {"x-api-key": GATEWAY_KEY, "x-routeproof-deadline-ms": "300"}
        assert (await client.post("/v1/chat/completions", json=BODY, headers=slow)).status_code == 504
        for wrong in (GATEWAY_KEY + "x", OTHER_KEY[:-1], GATEWAY_KEY.upper()):
            answer = await client.post("/v1/chat/completions", json=BODY, headers={"authorization": f"Bearer {wrong}"})
            assert answer.status_code in {400, 401}
    ledger = f'\n[ledger]\nbackend = "redis"\nurl = "redis://:{STORE_PASSWORD}@127.0.0.1:9/0"\n'
    async with make_stack(extra=FAST_BACKOFF + ledger, pricing=str(PRICING), budget_usd="5") as stack, \
            httpx.AsyncClient(base_url=stack.url, timeout=20) as client:  # fmt: skip
        assert (await client.post("/v1/messages", json=BODY, headers={"x-api-key": GATEWAY_KEY})).status_code == 503
    assert any(line.startswith("httpcore") for line in debug_lines)  # DEBUG really was on
    assert _leaks(debug_lines, (*provider_keys, GATEWAY_KEY, OTHER_KEY, STORE_PASSWORD)) == []


@pytest.mark.asyncio
async def test_bedrock_failures_log_no_aws_secret_at_debug(debug_lines: list[str]) -> None:
    """Bedrock signing with a session token, answered 403 and 500 echoing it: no DEBUG line (botocore's
    signer included) holds the session token or the secret key."""
    async with MockProviderServer(Shape.BEDROCK) as mock:
        echo = {"message": f"token {SESSION_TOKEN} secret {AWS_SECRET}"}
        mock.script(Scripted(status=403, body=echo), Scripted(status=500, body=echo))
        provider = BedrockProvider(region="us-east-1", access_key_id="AKIDCANARY", secret_access_key=AWS_SECRET,
                                   session_token=SESSION_TOKEN, base_url=mock.base_url)  # fmt: skip
        try:
            for _ in range(2):
                with pytest.raises(ProviderCallFailed):
                    await provider.complete(
                        request_hello(), BEDROCK_MODEL, timeout_at=asyncio.get_running_loop().time() + 10
                    )
        finally:
            await provider.aclose()
    assert len(mock.journal) == 2
    assert _leaks(debug_lines, (SESSION_TOKEN, AWS_SECRET)) == []
