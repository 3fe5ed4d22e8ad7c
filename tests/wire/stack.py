"""A ``routeproof serve`` gateway and its mock providers on loopback, run in a thread of their own.

The field-table tests send dozens of requests, one per table row; starting a gateway per request
would cost more than the requests. The gateway runs on its own event loop in a daemon thread for a
whole module and the tests drive it with blocking ``httpx`` and the official SDKs' sync clients.
Each mock's journal is read from the test thread (a list the mock only appends to).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import AsyncExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from routeproof.gateway import Backend
from routeproof.mock import MockProviderServer, Shape
from routeproof.mock.journal import JournalEntry
from tests.gateway.conftest import ENVIRON, GATEWAY_KEY, TIMEOUT_S, serve

__all__ = ["BEDROCK_MODEL", "GATEWAY_KEY", "Check", "Running", "dropped_of", "gateway_in_thread", "provider_toml"]

BEDROCK_MODEL = "anthropic.claude-sonnet-4-5-20250929-v1:0"
AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "AKIDEXAMPLEKEY000000",
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
}


def provider_toml(shape: Shape, url: str, *, priority: int = 1, openai_model: str = "gpt-4o") -> str:
    """The ``[driver.providers.*]`` table of a mock of ``shape`` at ``url``."""
    if shape is Shape.BEDROCK:
        return (
            f'[driver.providers.bedrock]\nbase_url = "{url}"\nmodel = "{BEDROCK_MODEL}"\n'
            f'region = "us-east-1"\npriority = {priority}\n'
        )
    if shape is Shape.OPENAI:
        return f'[driver.providers.openai]\nbase_url = "{url}/v1"\nmodel = "{openai_model}"\npriority = {priority}\n'
    if shape is Shape.GEMINI:
        gemini = f'base_url = "{url}/v1beta/openai"\nmodel = "gemini-2.5-flash"\npriority = {priority}\n'
        return f"[driver.providers.gemini]\n{gemini}"
    return f'[driver.providers.anthropic]\nbase_url = "{url}"\nmodel = "claude-sonnet-4-5"\npriority = {priority}\n'


def _agent_toml(shape: Shape, url: str, openai_model: str) -> str:
    return (
        provider_toml(shape, url, openai_model=openai_model)
        + '[driver.backoff]\npolicy = "full_jitter"\nbase_ms = 1\ncap_ms = 2\nmax_retries = 1\n'
        + '[gateway]\naliases = ["chat"]\n\n[gateway.tenants.team-a]\nkey_env = "GW_KEY_A"\n'
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Running:
    """A gateway (``url``) whose only provider is ``mock``."""

    url: str
    mock: MockProviderServer

    def sent(self, since: int) -> list[JournalEntry]:
        """What the mock received after its first ``since`` requests."""
        return list(self.mock.journal[since:])

    def count(self) -> int:
        """How many requests the mock has received."""
        return len(self.mock.journal)


@contextmanager
def gateway_in_thread(tmp: Path, shape: Shape, *, openai_model: str = "gpt-4o") -> Iterator[Running]:
    """A gateway in front of one mock of ``shape`` (an OpenAI one serving ``openai_model``), running
    until the block ends."""
    ready = threading.Event()
    state: dict[str, Any] = {}

    async def run() -> None:
        try:
            async with AsyncExitStack() as stack:
                mock = await stack.enter_async_context(MockProviderServer(shape))
                path = tmp / f"agent-{shape.value}-{openai_model}.toml"
                path.write_text(_agent_toml(shape, mock.base_url, openai_model))
                backend = Backend.load(path, environ={**ENVIRON, **AWS_ENV, "GEMINI_API_KEY": "gemini-test"})
                url, _app, _stop = await stack.enter_async_context(serve(backend, None))
                done = asyncio.Event()
                state.update(running=Running(url=url, mock=mock), loop=asyncio.get_running_loop(), done=done)
                ready.set()
                await done.wait()
        except Exception as exc:  # handed to the test thread, which raises it
            state["error"] = exc
        finally:
            ready.set()

    thread = threading.Thread(target=lambda: asyncio.run(run()), name=f"gateway-{shape.value}", daemon=True)
    thread.start()
    assert ready.wait(TIMEOUT_S), "the gateway did not start"
    if "error" in state:
        raise RuntimeError("the gateway did not start") from state["error"]
    try:
        yield state["running"]
    finally:
        state["loop"].call_soon_threadsafe(state["done"].set)
        thread.join(TIMEOUT_S)


def dropped_of(headers: Mapping[str, str]) -> list[str]:
    """The names in a response's ``x-routeproof-dropped`` header (none: [])."""
    value = headers.get("x-routeproof-dropped", "")
    return [name for name in value.split(",") if name]


Check = Callable[[JournalEntry], object]
