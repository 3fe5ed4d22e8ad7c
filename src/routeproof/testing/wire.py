"""Scenarios on the wire: :func:`wire_scenario` plays a :class:`~routeproof.testing.Scenario` as an
``httpx.MockTransport`` in one of the three wire shapes (Anthropic, OpenAI-compatible, Bedrock), so an
httpx-based provider can be checked without a network."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

import httpx

from routeproof.mock.script import Shape
from routeproof.mock.shapes import (
    RequestView,
    default_body,
    default_stream,
    encode_stream_item,
    error_answer,
    stream_content_type,
)
from routeproof.testing.scenario import Scenario

__all__ = ["WireScenario", "wire_scenario"]


class _Body(httpx.AsyncByteStream):
    """A response body: ``chunks``, then (``stall``) nothing ever; records when it is closed."""

    def __init__(self, chunks: tuple[bytes, ...], *, stall: bool, on_close: Callable[[], None]) -> None:
        self._chunks = chunks
        self._stall = stall
        self._on_close = on_close

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self._chunks:
            yield chunk
        if self._stall:
            await asyncio.Event().wait()

    async def aclose(self) -> None:
        self._on_close()


@dataclass(slots=True)
class WireScenario:
    """A scenario played by an ``httpx.MockTransport``: give ``transport`` to the provider's client."""

    shape: Shape
    scenario: Scenario
    secret: str | None = None
    opened: int = 0
    closed: int = 0
    transport: httpx.MockTransport = field(init=False)

    def __post_init__(self) -> None:
        self.transport = httpx.MockTransport(self._handle)

    def released(self) -> bool:
        """Every response this transport opened has been closed."""
        return self.closed >= self.opened

    def _close(self) -> None:
        self.closed += 1

    def _body(self, chunks: tuple[bytes, ...], *, stall: bool = False) -> _Body:
        self.opened += 1
        return _Body(chunks, stall=stall, on_close=self._close)

    async def _handle(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content or b"{}")
        streamed = bool(body.get("stream")) or request.url.path.endswith("converse-stream")
        view = RequestView(
            model=str(body.get("model", "test-model")), stream=streamed, tool_name=None, include_usage=True
        )
        if self.scenario is Scenario.HANG:
            self.opened += 1
            try:
                await asyncio.Event().wait()
            finally:
                self.closed += 1
        if self.scenario in (Scenario.SERVER_ERROR, Scenario.AUTH_ERROR_ECHOING_KEY):
            status = 503 if self.scenario is Scenario.SERVER_ERROR else 401
            message = "overloaded" if status == 503 else f"Incorrect API key provided: {self.secret}"
            payload, headers = error_answer(self.shape, status, message)
            content = json.dumps(payload).encode()
            return httpx.Response(
                status, headers=[*headers, ("content-type", "application/json")], stream=self._body((content,))
            )
        if not streamed:
            content = json.dumps(default_body(self.shape, view)).encode()
            return httpx.Response(200, headers={"content-type": "application/json"}, stream=self._body((content,)))
        items = tuple(encode_stream_item(self.shape, item) for item in default_stream(self.shape, view))
        stall = self.scenario is Scenario.STALL_AFTER_FIRST_EVENT
        chunks = items[:4] if stall else items  # in all three shapes: up to the first text delta
        return httpx.Response(
            200, headers={"content-type": stream_content_type(self.shape)}, stream=self._body(chunks, stall=stall)
        )


def wire_scenario(shape: Shape, scenario: Scenario, *, secret: str | None = None) -> WireScenario:
    """``scenario`` as the upstream of a ``shape`` provider (``secret``: the key a 401 body quotes)."""
    return WireScenario(shape=shape, scenario=scenario, secret=secret)
