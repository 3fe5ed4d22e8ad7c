"""The mock providers of one case: routeproof's mock servers, plus when each connection ended."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from routeproof.mock import MockProviderServer, Shape, step_from_json
from routeproof.mock.journal import JournalEntry

__all__ = ["CaseMocks", "ObservedRequest", "TrackedServer"]


class TrackedServer(MockProviderServer):
    """A mock server that also records when each TCP connection ended (the client went away, or a cut)."""

    def __init__(self, shape: Shape, *, name: str, port: int = 0) -> None:
        super().__init__(shape, name=name, port=port)
        self.closed_at: dict[int, float] = {}  # connection id -> time.monotonic() when it ended

    async def _on_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connection_id = self.connections_accepted + 1
        try:
            await super()._on_connection(reader, writer)
        finally:
            self.closed_at[connection_id] = time.monotonic()


@dataclass(frozen=True, slots=True, kw_only=True)
class ObservedRequest:
    """One provider request as the judge sees it."""

    provider: str
    index: int  # position in that provider's journal (= which scripted step served it)
    arrived_s: float  # time.monotonic() on the runner's clock
    closed_s: float | None  # when its connection ended, if it has
    traceparent: str | None
    stream: bool
    entry: JournalEntry


class CaseMocks:
    """Start one server per provider of a case, queue its script, and read the journals back."""

    def __init__(
        self,
        providers: Sequence[Mapping[str, Any]],
        steps: Mapping[str, list[dict[str, Any]]],
        defaults: Mapping[str, Mapping[str, Any] | None],
        *,
        ports: Sequence[int] | None = None,
    ) -> None:
        fixed = list(ports) if ports is not None else [0] * len(providers)
        self._servers = {
            str(p["name"]): TrackedServer(Shape(str(p["protocol"])), name=str(p["name"]), port=port)
            for p, port in zip(providers, fixed, strict=False)
        }
        self._steps = steps
        self._defaults = defaults

    async def __aenter__(self) -> CaseMocks:
        try:
            for name, server in self._servers.items():
                await server.start()
                server.script(*(step_from_json(s) for s in self._steps.get(name, [])))
                default = self._defaults.get(name)
                if default is not None:
                    server.set_default(step_from_json(default))
        except BaseException:
            await self.aclose()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop every server."""
        for server in self._servers.values():
            await server.stop()

    def base_url(self, name: str) -> str:
        """The base URL of provider ``name``."""
        return self._servers[name].base_url

    def observed(self) -> list[ObservedRequest]:
        """Every request any provider received, in arrival order."""
        out = [
            ObservedRequest(
                provider=name,
                index=e.index,
                arrived_s=e.arrived_monotonic_s,
                closed_s=server.closed_at.get(e.connection_id),
                traceparent=e.traceparent,
                stream=e.stream,
                entry=e,
            )
            for name, server in self._servers.items()
            for e in server.journal
        ]
        return sorted(out, key=lambda r: r.arrived_s)
