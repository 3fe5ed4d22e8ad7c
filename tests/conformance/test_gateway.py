"""Gateway mode: a profile selects the cases it can run and HTTP answers map to outcome classes."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
import respx

from routeproof.conformance.subjects import GatewaySubject, load_profile

URL = "http://gateway.test"
pytestmark = pytest.mark.asyncio
# A static profile: a gateway run outside the runner with two OpenAI-compatible deployments on fixed
# loopback ports (the shape of a hand-configured LiteLLM proxy; its own profile is launched now).
STATIC = """
name = "static-two-openai"
[gateway]
model = "conformance"
protocols = ["openai", "openai"]
ports = [18701, 18702]
capabilities = ["stream", "deadline"]
headers = { Authorization = "Bearer sk-conformance" }
"""


@pytest.fixture(scope="module")
def profile_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("profiles") / "static-two-openai.toml"
    path.write_text(STATIC, encoding="utf-8")
    return path


def call_message(**kw: object) -> dict[str, object]:
    """A non-streamed call with no deadline."""
    base: dict[str, object] = {
        "op": "call",
        "request": {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 8},
        "stream": False,
        "deadline_ms": None,
        "tier": "standard",
        "traceparent": None,
        "cancel_after_ms": None,
    }
    return {**base, **kw}


async def test_a_chain_unlike_the_profile_is_unsupported(profile_path: Path) -> None:
    """A case whose chain is not the gateway's configured chain is n/a."""
    driver = GatewaySubject(URL, load_profile(profile_path))
    reply = await driver.configure({"providers": [{"protocol": "anthropic"}]}, 1.0)
    same = await driver.configure({"providers": [{"protocol": "openai"}, {"protocol": "openai"}]}, 1.0)
    await driver.aclose()
    assert reply["op"] == "unsupported"
    assert same["op"] == "configured"


@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        (200, {"choices": [{"message": {"content": "from-a"}}]}, "success"),
        (401, {"error": "no"}, "auth"),
        (400, {"error": "bad"}, "terminal"),
        (503, {"error": "down"}, "all_failed"),
        (200, {"unexpected": True}, "invalid_response"),
    ],
)
async def test_http_answers_map_to_outcome_classes(
    status: int, body: dict[str, object], expected: str, profile_path: Path
) -> None:
    """The gateway's HTTP status (and body shape) give the outcome class."""
    driver = GatewaySubject(URL, load_profile(profile_path))
    with respx.mock:
        respx.post(f"{URL}/v1/chat/completions").mock(return_value=httpx.Response(status, json=body))
        outcome = await driver.call(call_message(), 5.0)
    await driver.aclose()
    assert outcome["class"] == expected


async def test_cancellation_cannot_be_expressed_over_http(profile_path: Path) -> None:
    """A call to cancel mid-way is n/a through a gateway."""
    driver = GatewaySubject(URL, load_profile(profile_path))
    outcome = await driver.call(call_message(cancel_after_ms=100), 5.0)
    await driver.aclose()
    assert outcome["op"] == "unsupported"
