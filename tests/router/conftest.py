"""Router test fixtures: one pooled httpx client, respx routes, a router with in-memory metrics."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
import pytest_asyncio
import respx
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from routeproof.observe import RouterMetrics
from tests.router.fixtures import providers


@pytest.fixture
def mock() -> Iterator[respx.MockRouter]:
    """respx intercepting every httpx request; nothing reaches the network."""
    with respx.mock(assert_all_called=False, assert_all_mocked=True) as router:
        yield router


@pytest_asyncio.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    """The pooled client the providers share."""
    async with httpx.AsyncClient() as http_client:
        yield http_client


@pytest.fixture
def metric_reader() -> InMemoryMetricReader:
    """An in-memory reader for the router's OpenTelemetry metrics."""
    return InMemoryMetricReader()


@pytest.fixture
def metrics(metric_reader: InMemoryMetricReader) -> RouterMetrics:
    """RouterMetrics on a private meter provider read by ``metric_reader``."""
    return RouterMetrics(MeterProvider(metric_readers=[metric_reader]).get_meter("test"))


@pytest.fixture
def all_providers(client: httpx.AsyncClient) -> list[object]:
    """Bedrock, Anthropic, OpenAI and Local providers on the shared client."""
    return list(providers(client))
