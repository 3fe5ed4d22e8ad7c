"""What a real client sees of money at the gateway: the openai and anthropic SDKs' 402 error names
spent, reserved and limit (clients nobody here wrote, over a real loopback socket)."""

from __future__ import annotations

from pathlib import Path

import anthropic
import openai
import pytest

from routeproof.gateway.backend import Backend
from routeproof.mock import MockProviderServer, Shape
from tests.gateway.conftest import ENVIRON, GATEWAY_KEY, agent_toml, serve

pytestmark = pytest.mark.asyncio
PRICING = Path(__file__).resolve().parents[2] / "config" / "pricing.toml"
SESSION_LIMIT = "[driver.budget]\nsession_usd = 0.000001\n"


async def test_sdks_see_spent_reserved_and_limit_in_the_402(tmp_path: Path) -> None:
    """A session limit below one call's worst case: both SDKs raise a 402 whose message has all three."""
    async with MockProviderServer(Shape.ANTHROPIC) as ant, MockProviderServer(Shape.OPENAI) as oai:
        path = tmp_path / "agent.toml"
        path.write_text(agent_toml(ant.base_url, oai.base_url, pricing=str(PRICING), extra=SESSION_LIMIT))
        async with serve(Backend.load(path, environ=ENVIRON), None) as (url, _app, _stop):
            openai_client = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key=GATEWAY_KEY, max_retries=0)
            with pytest.raises(openai.APIStatusError) as oai_error:
                await openai_client.chat.completions.create(
                    model="chat", max_tokens=16, messages=[{"role": "user", "content": "hi"}]
                )
            await openai_client.close()
            anthropic_client = anthropic.AsyncAnthropic(base_url=url, api_key=GATEWAY_KEY, max_retries=0)
            with pytest.raises(anthropic.APIStatusError) as ant_error:
                await anthropic_client.messages.create(
                    model="chat", max_tokens=16, messages=[{"role": "user", "content": "hi"}]
                )
            await anthropic_client.close()
        assert len(ant.journal) + len(oai.journal) == 0  # refused before anything was sent
    for error in (oai_error.value, ant_error.value):
        assert error.status_code == 402
        text = str(error)
        for part in ("scope='session'", "limit='$0.000001'", "$0.00 spent", "reserved by calls in flight"):
            assert part in text, text
