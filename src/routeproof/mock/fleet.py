"""Several mock servers started together from a TOML file (used by ``routeproof mock --config FILE``).

[[server]]
name = "anthropic-primary"   # unique; defaults to the shape
shape = "anthropic"          # anthropic | openai | bedrock
port = 0                     # 0 = an ephemeral port
require_auth = true          # optional
default = { status = 200 }   # optional: a step, same keys as the control API
script = [{ status = 429, headers = { "Retry-After" = "1" } }]  # optional: queued steps
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from routeproof.mock.script import MockScriptError, Scripted, Shape, step_from_json
from routeproof.mock.server import MockProviderServer

__all__ = ["MockFleet", "ServerConfig", "load_fleet_config", "parse_fleet_config"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerConfig:
    """One ``[[server]]`` table, validated."""

    name: str
    shape: Shape
    port: int = 0
    require_auth: bool = True
    default: Scripted = field(default_factory=Scripted)
    script: tuple[Scripted, ...] = ()


_KEYS = frozenset({"name", "shape", "port", "require_auth", "default", "script"})


def _server_config(table: object, position: int) -> ServerConfig:
    if not isinstance(table, Mapping):
        raise MockScriptError(f"[[server]] #{position} must be a table, got {table!r}")
    unknown = set(table) - _KEYS
    if unknown:
        raise MockScriptError(f"[[server]] #{position}: unknown keys {sorted(unknown)!r}")
    try:
        shape = Shape(table.get("shape"))
    except ValueError as exc:
        raise MockScriptError(f"[[server]] #{position}: shape must be one of {[s.value for s in Shape]!r}") from exc
    port = table.get("port", 0)
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise MockScriptError(f"[[server]] #{position}: bad port {port!r}")
    require_auth = table.get("require_auth", True)
    if not isinstance(require_auth, bool):
        raise MockScriptError(f"[[server]] #{position}: require_auth must be a boolean, got {require_auth!r}")
    script = table.get("script", [])
    if not isinstance(script, list):
        raise MockScriptError(f"[[server]] #{position}: script must be a list of steps, got {script!r}")
    return ServerConfig(
        name=str(table.get("name", shape.value)),
        shape=shape,
        port=port,
        require_auth=require_auth,
        default=step_from_json(table["default"]) if "default" in table else Scripted(),
        script=tuple(step_from_json(s) for s in script),
    )


def parse_fleet_config(text: str) -> tuple[ServerConfig, ...]:
    """Parse and validate a fleet TOML document."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise MockScriptError(f"mock config is not valid TOML: {exc}") from exc
    tables = doc.get("server")
    if not isinstance(tables, list) or not tables:
        raise MockScriptError("mock config needs at least one [[server]] table")
    configs = tuple(_server_config(t, n) for n, t in enumerate(tables, start=1))
    names = [c.name for c in configs]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise MockScriptError(f"duplicate server names {duplicates!r}")
    return configs


def load_fleet_config(path: Path) -> tuple[ServerConfig, ...]:
    """Read and validate a fleet TOML file."""
    return parse_fleet_config(path.read_text(encoding="utf-8"))


class MockFleet:
    """Start and stop several ``MockProviderServer``s as one; ``fleet["name"]`` is a server."""

    def __init__(self, configs: tuple[ServerConfig, ...], *, host: str = "127.0.0.1") -> None:
        self._servers = {
            c.name: MockProviderServer(
                c.shape, name=c.name, host=host, port=c.port, default=c.default, require_auth=c.require_auth
            )
            for c in configs
        }
        self._configs = configs

    def __getitem__(self, name: str) -> MockProviderServer:
        return self._servers[name]

    def __iter__(self) -> Iterator[MockProviderServer]:
        return iter(self._servers.values())

    async def start(self) -> None:
        """Start every server (and queue its configured script); on a failure, stop those started."""
        try:
            for config in self._configs:
                server = self._servers[config.name]
                await server.start()
                server.script(*config.script)
        except BaseException:
            await self.stop()
            raise

    async def stop(self) -> None:
        """Stop every server."""
        for server in self._servers.values():
            await server.stop()

    async def __aenter__(self) -> MockFleet:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()
