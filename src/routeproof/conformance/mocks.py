"""The mock providers of one case: routeproof's mock servers, plus when each connection ended."""

from __future__ import annotations

import asyncio
import socket
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


_HANDED_OUT: set[int] = set()
"""Every port this process has handed to a case's mock: none is handed out twice in one run."""


def fresh_port() -> int:
    """A free loopback port no earlier case of this run used, so a gateway that goes on working
    after a case ended can never reach the next case's mocks (its late requests find nobody)."""
    for _ in range(1000):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind(("127.0.0.1", 0))
            port = int(sock.getsockname()[1])
        if port not in _HANDED_OUT:
            _HANDED_OUT.add(port)
            return port
    raise RuntimeError(f"no fresh loopback port after 1000 tries ({len(_HANDED_OUT)} handed out)")


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
        fixed = list(ports) if ports is not None else [fresh_port() for _ in providers]
        self._servers = {
            str(p["name"]): TrackedServer(Shape(str(p["protocol"])), name=str(p["name"]), port=port)
            for p, port in zip(providers, fixed, strict=False)
        }
        self._initial_defaults = {name: server.default for name, server in self._servers.items()}
        self._steps = steps
        self._defaults = defaults

    async def __aenter__(self) -> CaseMocks:
        try:
            for server in self._servers.values():
                await server.start()
            self.load(self._steps, self._defaults)
        except BaseException:
            await self.aclose()
            raise
        return self

    def load(self, steps: Mapping[str, list[dict[str, Any]]], defaults: Mapping[str, Mapping[str, Any] | None]) -> None:
        """Queue each provider's scripted steps and set its default step."""
        for name, server in self._servers.items():
            server.script(*(step_from_json(s) for s in steps.get(name, [])))
            default = defaults.get(name)
            server.set_default(step_from_json(default) if default is not None else self._initial_defaults[name])

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop every server."""
        for server in self._servers.values():
            await server.stop()

    def base_url(self, name: str) -> str:
        """The base URL of provider ``name``."""
        return self._servers[name].base_url

    def observed(self, since_s: float | None = None) -> list[ObservedRequest]:
        """Every request any provider received (from ``since_s`` on, numbered from there), in arrival order."""
        skipped = {
            name: sum(1 for e in server.journal if since_s is not None and e.arrived_monotonic_s < since_s)
            for name, server in self._servers.items()
        }
        out = [
            ObservedRequest(
                provider=name,
                index=e.index - skipped[name],
                arrived_s=e.arrived_monotonic_s,
                closed_s=server.closed_at.get(e.connection_id),
                traceparent=e.traceparent,
                stream=e.stream,
                entry=e,
            )
            for name, server in self._servers.items()
            for e in server.journal
            if since_s is None or e.arrived_monotonic_s >= since_s
        ]
        return sorted(out, key=lambda r: r.arrived_s)
