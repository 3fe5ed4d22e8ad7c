"""Gateway fixtures: two mock providers (Anthropic, then OpenAI), an ``agent.toml`` naming them, and
the gateway serving it on uvicorn in this event loop, on real loopback sockets (no virtual time)."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
import pytest_asyncio

from routeproof.gateway import Backend, GatewayApp
from routeproof.gateway.server import bind, make_server
from routeproof.gateway.telemetry import MetricsSource, install_telemetry
from routeproof.mock import MockProviderServer, Shape

GATEWAY_KEY = "gw-test-key-123"
OTHER_KEY = "gw-other-key-456"
ENVIRON = {"ANTHROPIC_API_KEY": "sk-ant-test", "OPENAI_API_KEY": "sk-oai-test", "GW_KEY_A": GATEWAY_KEY}
FAST_BACKOFF = '[driver.backoff]\npolicy = "full_jitter"\nbase_ms = 1\ncap_ms = 2\nmax_retries = 3\n'
TIMEOUT_S = 20.0  # bounds each fixture's start and stop


@dataclass(frozen=True, slots=True, kw_only=True)
class Stack:
    """A running gateway and the mocks behind it."""

    url: str
    anthropic: MockProviderServer
    openai: MockProviderServer
    app: GatewayApp
    stop: Callable[[], None]

    def provider_requests(self) -> int:
        """Requests the two mock providers have received so far."""
        return len(self.anthropic.journal) + len(self.openai.journal)


def agent_toml(
    anthropic_url: str, openai_url: str, *, extra: str = FAST_BACKOFF, pricing: str = "", budget_usd: str = ""
) -> str:
    """An agent.toml: Anthropic first, OpenAI second, aliases chat/fast, two tenants (optional budgets)."""
    top = f'pricing = "{pricing}"' if pricing else ""
    budget = f"daily_budget_usd = {budget_usd}" if budget_usd else ""
    return f"""
{top}

[driver.providers.anthropic]
base_url = "{anthropic_url}"
model = "claude-sonnet-4-20250514"
priority = 1
{budget}

[driver.providers.openai]
base_url = "{openai_url}/v1"
model = "gpt-4o"
priority = 2
{budget}

{extra}

[gateway]
aliases = ["chat", "fast"]
max_body_bytes = 65536
grace_period_ms = 2000

[gateway.tenants.team-a]
key_env = "GW_KEY_A"

[gateway.tenants.team-b]
key = "{OTHER_KEY}"
privacy_tier = "sovereign"
"""


@functools.cache
def process_metrics_reader() -> MetricsSource | None:
    """The process-wide SDK providers, installed once per process (a second ``install_telemetry``
    finds them installed and returns None), so every module that imports ``metrics_reader`` shares it."""
    return install_telemetry()


@pytest.fixture(scope="session")
def metrics_reader() -> MetricsSource | None:
    """The process-wide SDK providers, installed once; the reader ``/metrics`` prints."""
    return process_metrics_reader()


@asynccontextmanager
async def serve(
    backend: Backend, reader: MetricsSource | None
) -> AsyncIterator[tuple[str, GatewayApp, Callable[[], None]]]:
    """Serve ``backend`` on an ephemeral loopback port until the block ends (a graceful stop)."""
    server = make_server(backend, metrics_reader=reader)
    sock = bind("127.0.0.1", 0)
    port = sock.getsockname()[1]
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        async with asyncio.timeout(TIMEOUT_S):
            while not server.started:  # noqa: ASYNC110 - uvicorn exposes a flag, not an event
                await asyncio.sleep(0.005)
        app = server.config.app
        assert isinstance(app, GatewayApp)

        def stop() -> None:
            server.should_exit = True

        yield f"http://127.0.0.1:{port}", app, stop
    finally:
        server.should_exit = True
        async with asyncio.timeout(TIMEOUT_S):
            await task
        sock.close()


StackFactory = Callable[..., AbstractAsyncContextManager[Stack]]


@pytest.fixture
def make_stack(tmp_path: Path, metrics_reader: MetricsSource | None) -> StackFactory:
    """Build a stack with a custom ``[driver]`` tail (``extra``), a pricing file and a daily budget."""

    @asynccontextmanager
    async def factory(*, extra: str = FAST_BACKOFF, pricing: str = "", budget_usd: str = "") -> AsyncIterator[Stack]:
        async with MockProviderServer(Shape.ANTHROPIC) as anthropic, MockProviderServer(Shape.OPENAI) as openai:
            path = tmp_path / "agent.toml"
            path.write_text(
                agent_toml(anthropic.base_url, openai.base_url, extra=extra, pricing=pricing, budget_usd=budget_usd)
            )
            async with serve(Backend.load(path, environ=ENVIRON), metrics_reader) as (url, app, stop):
                yield Stack(url=url, anthropic=anthropic, openai=openai, app=app, stop=stop)

    return factory


@pytest_asyncio.fixture
async def stack(make_stack: StackFactory) -> AsyncIterator[Stack]:
    """The default stack: fast full-jitter backoff so failover tests take milliseconds."""
    async with make_stack() as running:
        yield running
