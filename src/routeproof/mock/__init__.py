"""Scriptable mock LLM provider servers on real loopback sockets (Anthropic, OpenAI, Bedrock shapes).

    async with MockProviderServer(Shape.OPENAI) as srv:
        srv.script(Scripted(status=429, headers=(("Retry-After", "1"),)), Scripted())
        ...  # point a client at srv.base_url
        assert srv.journal[0].auth_present

The same scripting is available over HTTP under ``/_mock/`` (see ``routeproof.mock.control``).
"""

from __future__ import annotations

from routeproof.mock.fleet import MockFleet, ServerConfig, load_fleet_config, parse_fleet_config
from routeproof.mock.journal import JournalEntry
from routeproof.mock.script import CutMode, MockScriptError, Scripted, Shape, step_from_json, step_to_json
from routeproof.mock.server import MockProviderServer
from routeproof.mock.shapes import DEFAULT_INPUT_TOKENS, DEFAULT_OUTPUT_TOKENS, DEFAULT_TEXT, DEFAULT_TOOL_INPUT

__all__ = [
    "DEFAULT_INPUT_TOKENS",
    "DEFAULT_OUTPUT_TOKENS",
    "DEFAULT_TEXT",
    "DEFAULT_TOOL_INPUT",
    "CutMode",
    "JournalEntry",
    "MockFleet",
    "MockProviderServer",
    "MockScriptError",
    "Scripted",
    "ServerConfig",
    "Shape",
    "load_fleet_config",
    "parse_fleet_config",
    "step_from_json",
    "step_to_json",
]
