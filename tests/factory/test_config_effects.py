"""Every agent.toml key takes effect through load_router, or is refused at load naming itself: the
shipped example, secrets, environment overrides, budgets, pricing at load, timeouts, retries, tiers."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import respx

from routeproof.config import load_config
from routeproof.core.health import earliest_return_ms
from routeproof.core.routing import resolve
from routeproof.core.types import AttemptStatus, ChatRequest, Message, PrivacyTier, ProviderKind
from routeproof.errors import ConfigError, NoEligibleProvider
from routeproof.factory import load_router, tenant_policy

pytestmark = [pytest.mark.asyncio, pytest.mark.looptime(end=600)]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "config" / "agent.example.toml"
DUMMY_ENV = {
    "ANTHROPIC_API_KEY": "dummy-anthropic",
    "OPENROUTER_API_KEY": "dummy-openrouter",
    "AWS_ACCESS_KEY_ID": "dummy-akid",
    "AWS_SECRET_ACCESS_KEY": "dummy-secret",
}
ENV = {"ANTHROPIC_API_KEY": "sk-ant-effects", "OPENAI_API_KEY": "sk-openai-effects"}
ANTHROPIC_URL = "https://api.anthropic.com/v1/messages"
OPENAI_URL = "https://api.openai.com/v1/chat/completions"
PRICING = """
[anthropic."claude-sonnet-4-20250514"]
input_per_mtok = 3.00
output_per_mtok = 15.00
"""
TWO = """
pricing = "pricing.toml"
[driver.providers.anthropic]
model = "claude-sonnet-4-20250514"
{anthropic_extra}
[driver.providers.openai]
model = "gpt-4o"
"""


def write(tmp_path: Path, body: str) -> Path:
    """Write agent.toml and pricing.toml under ``tmp_path``."""
    (tmp_path / "pricing.toml").write_text(PRICING)
    path = tmp_path / "agent.toml"
    path.write_text(body)
    return path


def anthropic_ok() -> httpx.Response:
    """A documented Anthropic answer."""
    return httpx.Response(
        200,
        json={
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-20250514",
            "content": [{"type": "text", "text": "4"}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 10, "output_tokens": 2},
        },
    )


def openai_ok() -> httpx.Response:
    """A documented OpenAI answer."""
    return httpx.Response(
        200,
        json={
            "id": "c1",
            "object": "chat.completion",
            "created": 1,
            "model": "gpt-4o",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "4"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
        },
    )


async def _call(path: Path, environ: dict[str, str]) -> object:
    router = load_router(path, environ=environ)
    tenant = tenant_policy(load_config(path, environ=environ), "chat")
    req = ChatRequest(messages=(Message.user("2+2?"),), alias="chat")
    try:
        return await router.call_provider(req, resolve("chat", tenant), asyncio.get_running_loop().time() + 30, tenant)
    finally:
        await router.aclose()


async def test_shipped_example_and_pricing_load_into_a_router_with_dummy_keys() -> None:
    """config/agent.example.toml (with config/pricing.toml) loads as shipped; its budgets take effect."""
    router = load_router(EXAMPLE, environ=DUMMY_ENV)
    try:
        assert router.ledger is not None
        limits = router.ledger.limits
        assert (limits.turn_warning_pico_usd, limits.session_limit_pico_usd, limits.monthly_limit_pico_usd) == (
            500_000_000_000,
            10 * 10**12,
            200 * 10**12,
        )
        assert limits.provider_limit(ProviderKind.OPENROUTER) == 2_500_000_000_000
    finally:
        await router.aclose()


async def test_all_missing_environment_keys_are_reported_in_one_error() -> None:
    """Every unset key variable the example needs is named in the one ConfigError."""
    with pytest.raises(ConfigError) as info:
        load_config(EXAMPLE, environ={})
    for variable in ("ANTHROPIC_API_KEY", "OPENROUTER_API_KEY", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        assert variable in str(info.value)


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("sk-ant-CANARY-0001\n", "whitespace"),
        (" sk-ant-CANARY-0001", "whitespace"),
        ("sk-ant-CANARY\t0001", "whitespace or a control"),
        ("sk-ant-CANARY-000\u00e9", "non-ASCII"),
        ("sk-ant-CANARY\x00-0001", "control"),
    ],
)
async def test_malformed_key_is_refused_at_load_naming_the_variable_not_the_value(
    tmp_path: Path, value: str, problem: str
) -> None:
    """A key with whitespace, a control or non-ASCII character is a ConfigError naming the variable only."""
    path = write(tmp_path, TWO.format(anthropic_extra=""))
    with pytest.raises(ConfigError, match=problem) as info:
        load_config(path, environ={**ENV, "ANTHROPIC_API_KEY": value})
    assert "ANTHROPIC_API_KEY" in str(info.value)
    assert "CANARY" not in str(info.value)
    assert "CANARY" not in repr(info.value)


@pytest.mark.parametrize("variable", ["ROUTEPROOF_DEFAULT_PROVIDER", "BATUTA_LLM_PROVIDER"])
async def test_default_provider_override_from_the_environment(
    tmp_path: Path, mock: respx.MockRouter, variable: str
) -> None:
    """The default-provider variable (routeproof's or the seed's name) puts that provider first."""
    mock.post(ANTHROPIC_URL).mock(return_value=anthropic_ok())
    openai = mock.post(OPENAI_URL).mock(return_value=openai_ok())
    path = write(tmp_path, TWO.format(anthropic_extra=""))
    resp = await _call(path, {**ENV, variable: "openai"})
    assert getattr(resp, "provider", None) is ProviderKind.OPENAI
    assert openai.call_count == 1


async def test_routeproof_variable_wins_and_an_unknown_default_provider_is_refused(tmp_path: Path) -> None:
    """ROUTEPROOF_DEFAULT_PROVIDER beats BATUTA_LLM_PROVIDER; naming no configured provider is refused."""
    path = write(tmp_path, TWO.format(anthropic_extra=""))
    both = {**ENV, "ROUTEPROOF_DEFAULT_PROVIDER": "anthropic", "BATUTA_LLM_PROVIDER": "openai"}
    assert load_config(path, environ=both).providers[0].kind is ProviderKind.ANTHROPIC
    with pytest.raises(ConfigError, match=r"BATUTA_LLM_PROVIDER = 'nope'.*configured"):
        load_config(path, environ={**ENV, "BATUTA_LLM_PROVIDER": "nope"})


@pytest.mark.parametrize("variable", ["ROUTEPROOF_SESSION_BUDGET_USD", "BATUTA_LLM_BUDGET"])
async def test_session_budget_from_the_environment(tmp_path: Path, variable: str) -> None:
    """The session-budget variable overrides [driver.budget] session_usd (in exact pico-USD)."""
    body = TWO.format(anthropic_extra="") + "[driver.budget]\nsession_usd = 9.00\n"
    body = body.replace('[driver.providers.openai]\nmodel = "gpt-4o"\n', "")
    path = write(tmp_path, body)
    router = load_router(path, environ={**ENV, variable: "0.25"})
    try:
        assert router.ledger is not None
        assert router.ledger.limits.session_limit_pico_usd == 250_000_000_000
    finally:
        await router.aclose()
    with pytest.raises(ConfigError, match=variable):
        load_config(path, environ={**ENV, variable: "lots"})


async def test_budget_with_an_unpriced_model_fails_at_load_naming_it(tmp_path: Path) -> None:
    """With any budget set, an unpriced routable model is a ConfigError at load, naming the model."""
    path = write(tmp_path, TWO.format(anthropic_extra="") + "[driver.budget]\nmonthly_usd = 100\n")
    with pytest.raises(ConfigError, match=r"openai 'gpt-4o'"):
        load_router(path, environ=ENV)


async def test_without_budgets_an_unpriced_model_loads_and_costs_unknown(
    tmp_path: Path, mock: respx.MockRouter
) -> None:
    """No budget: an unpriced model is allowed and its answer's cost is None."""
    mock.post(ANTHROPIC_URL).mock(return_value=httpx.Response(500))
    mock.post(OPENAI_URL).mock(return_value=openai_ok())
    path = write(tmp_path, TWO.format(anthropic_extra="") + "[driver.backoff]\nmax_retries = 1\n")
    resp = await _call(path, ENV)
    assert getattr(resp, "provider", None) is ProviderKind.OPENAI
    assert getattr(resp, "cost_pico_usd", 0) is None


async def test_timeout_ms_cuts_each_attempt_on_that_provider(tmp_path: Path, mock: respx.MockRouter) -> None:
    """timeout_ms = 500 on a hanging primary: attempts end at 500 ms and the fallback answers."""

    async def hang(request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(10_000)
        raise AssertionError("unreachable")

    mock.post(ANTHROPIC_URL).mock(side_effect=hang)
    fallback = mock.post(OPENAI_URL).mock(return_value=openai_ok())
    path = write(tmp_path, TWO.format(anthropic_extra="timeout_ms = 500"))
    resp = await _call(path, ENV)
    attempts = getattr(resp, "attempts", ())
    assert [a.elapsed_ms for a in attempts[:3]] == [500, 500, 500]
    assert fallback.call_count == 1


async def test_max_retries_sets_attempts_per_provider(tmp_path: Path, mock: respx.MockRouter) -> None:
    """max_retries = 2 gives two attempts on a 503ing provider (default 10 -> the contract's 3)."""
    primary = mock.post(ANTHROPIC_URL).mock(return_value=httpx.Response(503))
    mock.post(OPENAI_URL).mock(return_value=openai_ok())
    path = write(tmp_path, TWO.format(anthropic_extra="") + "[driver.backoff]\nmax_retries = 2\n")
    resp = await _call(path, ENV)
    assert [a.status for a in getattr(resp, "attempts", ())][-1] is AttemptStatus.SUCCEEDED
    assert primary.call_count == 2
    primary.reset()
    await _call(write(tmp_path, TWO.format(anthropic_extra="")), ENV)
    assert primary.call_count == 3
    with pytest.raises(ConfigError, match="max_retries"):
        load_config(
            write(tmp_path, TWO.format(anthropic_extra="") + "[driver.backoff]\nmax_retries = 0\n"), environ=ENV
        )


async def test_declared_standard_tier_on_localhost_takes_effect(tmp_path: Path, mock: respx.MockRouter) -> None:
    """An Ollama on localhost declared 'standard' is not used by a Private policy."""
    route = mock.post("http://localhost:11434/v1/chat/completions").mock(return_value=openai_ok())
    body = '[driver.providers.ollama]\nbase_url = "http://localhost:11434"\nmodel = "q"\nprivacy_tier = "standard"\n'
    path = write(tmp_path, body)
    router = load_router(path, environ={})
    tenant = tenant_policy(load_config(path, environ={}), "chat", privacy_tier=PrivacyTier.PRIVATE)
    req = ChatRequest(messages=(Message.user("hi"),), alias="chat")
    try:
        with pytest.raises(NoEligibleProvider, match="tier"):
            await router.call_provider(req, resolve("chat", tenant), asyncio.get_running_loop().time() + 5, tenant)
    finally:
        await router.aclose()
    assert route.call_count == 0


@pytest.fixture
def mock() -> Iterator[respx.MockRouter]:
    """respx intercepting every httpx request."""
    with respx.mock(assert_all_called=False, assert_all_mocked=True) as router:
        yield router


async def test_latency_sla_ms_reaches_the_router(tmp_path: Path) -> None:
    """[driver.failover] latency_sla_ms is the SLA the router's latency trigger judges against."""
    path = write(tmp_path, TWO.format(anthropic_extra="") + "[driver.failover]\nlatency_sla_ms = 1500\n")
    router = load_router(path, environ=ENV)
    try:
        assert router.latency.config.sla_ms == 1500
    finally:
        await router.aclose()


async def test_backoff_keys_take_effect(tmp_path: Path, mock: respx.MockRouter) -> None:
    """policy = "full_jitter" with base_ms = cap_ms = 1 sleeps <= 1 ms before a retry; "band" sleeps 160-240 ms."""
    route = mock.post(ANTHROPIC_URL).mock(side_effect=[httpx.Response(503), anthropic_ok()] * 2)
    loop = asyncio.get_running_loop()
    jitter = TWO.format(anthropic_extra="") + '[driver.backoff]\npolicy = "full_jitter"\nbase_ms = 1\ncap_ms = 1\n'
    t0 = loop.time()
    await _call(write(tmp_path, jitter), ENV)
    assert loop.time() - t0 <= 0.002
    t0 = loop.time()
    await _call(write(tmp_path, TWO.format(anthropic_extra="")), ENV)
    assert 0.16 <= loop.time() - t0 <= 0.24
    assert route.call_count == 4


async def test_failure_threshold_and_cooldown_ms_take_effect(tmp_path: Path, mock: respx.MockRouter) -> None:
    """failure_threshold = 1, cooldown_ms = 1000: one failed call cools anthropic for exactly 1 s."""
    mock.post(ANTHROPIC_URL).mock(return_value=httpx.Response(503))
    mock.post(OPENAI_URL).mock(return_value=openai_ok())
    body = TWO.format(anthropic_extra="") + "[driver.failover]\nfailure_threshold = 1\ncooldown_ms = 1000\n"
    body += "[driver.backoff]\nmax_retries = 1\n"
    path = write(tmp_path, body)
    router = load_router(path, environ=ENV)
    tenant = tenant_policy(load_config(path, environ=ENV), "chat")
    req = ChatRequest(messages=(Message.user("2+2?"),), alias="chat")
    loop = asyncio.get_running_loop()
    try:
        await router.call_provider(req, resolve("chat", tenant), loop.time() + 30, tenant)
        now_ms = round(loop.time() * 1000)  # respx answers at once: the failure was at this instant
        assert earliest_return_ms(router.health, (ProviderKind.ANTHROPIC,), now_ms) == now_ms + 1000
    finally:
        await router.aclose()


async def test_private_hosts_admit_a_named_host_to_the_private_tier(tmp_path: Path, mock: respx.MockRouter) -> None:
    """A vLLM on gpu-box.internal serves a Private policy only when private_hosts lists it."""
    route = mock.post("http://gpu-box.internal:8000/v1/chat/completions").mock(return_value=openai_ok())
    provider = '[driver.providers.vllm]\nbase_url = "http://gpu-box.internal:8000/v1"\nmodel = "m"\n'
    for listed in (True, False):
        body = ('[driver]\nprivate_hosts = ["gpu-box.internal"]\n' if listed else "") + provider
        path = write(tmp_path, body)
        router = load_router(path, environ={})
        tenant = tenant_policy(load_config(path, environ={}), "chat", privacy_tier=PrivacyTier.PRIVATE)
        req = ChatRequest(messages=(Message.user("hi"),), alias="chat")
        try:
            call = router.call_provider(req, resolve("chat", tenant), asyncio.get_running_loop().time() + 5, tenant)
            if listed:
                assert (await call).provider is ProviderKind.VLLM
            else:
                with pytest.raises(NoEligibleProvider, match="tier"):
                    await call
        finally:
            await router.aclose()
    assert route.call_count == 1
