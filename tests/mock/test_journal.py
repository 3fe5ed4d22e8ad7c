"""The request journal: arrival times, headers kept, secrets never stored, parsed bodies."""

from __future__ import annotations

import dataclasses
import time

import httpx
import pytest

from routeproof.mock import MockProviderServer, Shape
from tests.mock.helpers import PATHS, SECRET, TIMEOUT_S, auth_headers, request_body

TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


@pytest.mark.asyncio
@pytest.mark.parametrize("shape", list(Shape))
async def test_journal_keeps_trace_headers_and_never_the_secret(shape: Shape) -> None:
    """traceparent/tracestate are kept, auth is a boolean, and the secret appears nowhere."""
    before_mono, before_wall = time.monotonic(), time.time()
    headers = {**auth_headers(shape), "traceparent": TRACEPARENT, "tracestate": "rp=1"}
    async with MockProviderServer(shape) as srv, httpx.AsyncClient(base_url=srv.base_url, timeout=TIMEOUT_S) as client:
        await client.post(PATHS[shape], json=request_body(shape), headers=headers)
        (entry,) = srv.journal
    assert entry.traceparent == TRACEPARENT
    assert entry.tracestate == "rp=1"
    assert entry.auth_present is True
    assert entry.method == "POST"
    assert entry.path == PATHS[shape]
    assert before_mono <= entry.arrived_monotonic_s <= time.monotonic()
    assert before_wall - 1 <= entry.arrived_wall_s <= time.time() + 1
    assert SECRET not in repr(entry)
    assert entry.header("authorization") is None
    assert entry.header("x-api-key") is None
    assert entry.header("traceparent") == TRACEPARENT
    assert entry.body_json == request_body(shape)


@pytest.mark.asyncio
async def test_journal_entries_are_frozen_and_ordered() -> None:
    """Entries are immutable values with increasing indexes and arrival times."""
    async with (
        MockProviderServer(Shape.OPENAI) as srv,
        httpx.AsyncClient(base_url=srv.base_url, timeout=TIMEOUT_S) as client,
    ):
        for _ in range(3):
            await client.post(
                PATHS[Shape.OPENAI], json=request_body(Shape.OPENAI, stream=True), headers=auth_headers(Shape.OPENAI)
            )
        journal = srv.journal
    assert [e.index for e in journal] == [0, 1, 2]
    assert journal[0].arrived_monotonic_s <= journal[1].arrived_monotonic_s <= journal[2].arrived_monotonic_s
    assert all(e.stream and e.model == "mock-model" for e in journal)
    with pytest.raises(dataclasses.FrozenInstanceError):
        journal[0].path = "/x"  # type: ignore[misc]  # proving the entry is frozen


@pytest.mark.asyncio
async def test_non_json_body_is_journaled_as_none_with_its_size() -> None:
    """A body that is not JSON is recorded as None, with its byte size."""
    async with (
        MockProviderServer(Shape.OPENAI) as srv,
        httpx.AsyncClient(base_url=srv.base_url, timeout=TIMEOUT_S) as client,
    ):
        await client.post(PATHS[Shape.OPENAI], content=b"not json", headers=auth_headers(Shape.OPENAI))
        (entry,) = srv.journal
    assert entry.body_json is None
    assert entry.body_size == 8
