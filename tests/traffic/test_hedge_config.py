"""Hedging through agent.toml: ``[aliases.NAME.hedge]`` loads into the router's traffic config, a bad
value fails at load naming it, and the official ``openai`` SDK through ``serve`` sees a hedged call."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from pathlib import Path

import openai
import pytest
from openai.types.chat import ChatCompletionMessageParam

from routeproof.config import parse_config
from routeproof.errors import ConfigError
from routeproof.factory import traffic_config
from routeproof.gateway import ATTEMPTS_HEADER, Backend
from routeproof.mock import MockProviderServer, Scripted, Shape
from routeproof.traffic import HedgePolicy
from tests.gateway.conftest import ENVIRON, GATEWAY_KEY, serve

PROVIDERS = {"p": {"kind": "local", "model": "m"}}


def load(hedge: dict[str, object]) -> dict[str, HedgePolicy]:
    """The hedge policies a config with ``[aliases.chat.hedge] = hedge`` loads into."""
    config = parse_config({"driver": {"providers": PROVIDERS}, "aliases": {"chat": {"hedge": hedge}}}, environ={},
                          base_dir=Path("."))  # fmt: skip
    return dict(traffic_config(config).hedges)


def test_a_fixed_and_a_p95_delay_load() -> None:
    """delay_ms, delay = "p95", max_extra_ratio and burst reach the policy exactly."""
    assert load({"delay_ms": 300}) == {"chat": HedgePolicy(delay_ms=300, max_extra_ratio_milli=100)}
    assert load({"delay_ms": 300})["chat"].burst_milli == 10_000  # ten hedges when no burst is given
    policy = load({"delay": "p95", "max_extra_ratio": Decimal("0.05"), "burst": 2})["chat"]
    assert (policy.p95, policy.delay_ms, policy.max_extra_ratio_milli, policy.burst_milli) == (True, 1000, 50, 2000)


@pytest.mark.parametrize(
    ("hedge", "named"),
    [
        ({"delay_ms": -1}, "aliases.chat.hedge.delay_ms = -1"),
        ({"delay_ms": 40_000}, "aliases.chat.hedge.delay_ms = 40000"),
        ({"delay": "p99"}, "aliases.chat.hedge.delay = 'p99'"),
        ({}, "aliases.chat.hedge.delay_ms = None"),
        ({"delay_ms": 1, "max_extra_ratio": 2}, "aliases.chat.hedge.max_extra_ratio = 2"),
        ({"delay_ms": 1, "burst": 0}, "aliases.chat.hedge.burst = 0"),
        ({"delay_ms": 1, "ratio": 1}, "aliases.chat.hedge.ratio = 1"),
    ],
)
def test_a_bad_hedge_value_fails_at_load_naming_it(hedge: dict[str, object], named: str) -> None:
    """Each bad value is refused when the file is loaded, with its key and value."""
    with pytest.raises(ConfigError, match="^" + re.escape(named)):
        load(hedge)


def test_an_unknown_alias_key_is_refused() -> None:
    """[aliases.chat] knows only hedge."""
    with pytest.raises(ConfigError, match=re.escape("aliases.chat.retry")):
        parse_config({"driver": {"providers": PROVIDERS}, "aliases": {"chat": {"retry": {}}}}, environ={},
                     base_dir=Path("."))  # fmt: skip


def agent(url_a: str, url_b: str) -> str:
    """Two OpenAI deployments of one model at one priority, the alias hedged after 200 ms."""
    return f"""
[driver.providers.oa-1]
kind = "openai"
base_url = "{url_a}/v1"
model = "gpt-4o"
priority = 1

[driver.providers.oa-2]
kind = "openai"
base_url = "{url_b}/v1"
model = "gpt-4o"
priority = 1

[aliases.chat.hedge]
delay_ms = 200
max_extra_ratio = 1

[gateway]
aliases = ["chat"]

[gateway.tenants.team-a]
key_env = "GW_KEY_A"
"""


@pytest.mark.asyncio
@pytest.mark.looptime(False)
async def test_the_sdk_gets_the_hedges_answer_with_the_loser_recorded(tmp_path: Path) -> None:
    """oa-1 stalls 3 s, oa-2 answers at once: the SDK's answer comes from oa-2 after ~200 ms, and the
    attempts header records oa-1 as hedge_cancelled; each mock received one request."""
    slow = Scripted(delay_before_headers_s=3.0)
    async with MockProviderServer(Shape.OPENAI, default=slow) as a, MockProviderServer(Shape.OPENAI) as b:
        path = tmp_path / "agent.toml"
        path.write_text(agent(a.base_url, b.base_url), encoding="utf-8")
        backend = Backend.load(path, environ=ENVIRON)
        async with (
            serve(backend, None) as (url, _app, _stop),
            openai.AsyncOpenAI(base_url=f"{url}/v1", api_key=GATEWAY_KEY, max_retries=0, timeout=15) as sdk,
        ):
            hello: list[ChatCompletionMessageParam] = [{"role": "user", "content": "hi"}]
            raw = await sdk.chat.completions.with_raw_response.create(model="chat", messages=hello, max_tokens=8)
    attempts = json.loads(raw.headers[ATTEMPTS_HEADER])
    assert [a["status"] for a in attempts] == ["hedge_cancelled", "succeeded"]
    assert raw.parse().choices[0].message.content
    assert (len(a.journal), len(b.journal)) == (1, 1)
