"""Configuration: the example loads, every bad value fails naming itself, secrets stay out of sight."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import httpx
import pytest

from routeproof.config import (
    BackoffKind,
    RoutingConfig,
    build_providers,
    load_config,
)
from routeproof.core.types import PrivacyTier, ProviderKind
from routeproof.errors import ConfigError
from routeproof.providers.protocol import Provider

EXAMPLE = Path(__file__).resolve().parents[2] / "config" / "agent.example.toml"
ENV = {
    "ANTHROPIC_API_KEY": "sk-ant-CONFIG-SECRET",
    "OPENAI_API_KEY": "sk-openai-CONFIG-SECRET",
    "OPENROUTER_API_KEY": "sk-or-CONFIG-SECRET",
    "AWS_ACCESS_KEY_ID": "AKIDCONFIG",
    "AWS_SECRET_ACCESS_KEY": "aws-CONFIG-SECRET",
    "AWS_SESSION_TOKEN": "aws-token-CONFIG-SECRET",
}
SECRETS = tuple(v for k, v in ENV.items() if k != "AWS_ACCESS_KEY_ID")

MINIMAL = """
[driver.providers.anthropic]
model = "claude-x"
"""


def _load(tmp_path: Path, text: str, environ: dict[str, str] | None = None) -> RoutingConfig:
    path = tmp_path / "agent.toml"
    path.write_text(text, encoding="utf-8")
    return load_config(path, environ=ENV if environ is None else environ)


def _error(tmp_path: Path, text: str, environ: dict[str, str] | None = None) -> str:
    with pytest.raises(ConfigError) as info:
        _load(tmp_path, text, environ)
    return str(info.value)


def test_example_loads() -> None:
    """The shipped example loads with every provider, in priority order, with kinds inferred from names."""
    config = load_config(EXAMPLE, environ=ENV)
    assert [p.name for p in config.providers] == ["realizar", "ollama", "vllm", "anthropic", "openrouter", "bedrock"]
    kinds = [p.kind for p in config.providers]
    assert kinds[0] is ProviderKind.LOCAL
    assert ProviderKind.OPENROUTER in kinds
    ollama = config.provider("ollama")
    assert (ollama.base_url, ollama.privacy_tier) == ("http://localhost:11434/v1", PrivacyTier.PRIVATE)
    assert config.provider("vllm").privacy_tier is PrivacyTier.PRIVATE  # via private_hosts
    assert config.provider("vllm").timeout_ms == 20000
    anthropic = config.provider("anthropic")
    assert (anthropic.daily_budget_usd, anthropic.api_key) == (Decimal("5.00"), ENV["ANTHROPIC_API_KEY"])
    assert config.provider("openrouter").base_url == "https://openrouter.ai/api/v1"
    bedrock = config.provider("bedrock")
    assert (bedrock.region, bedrock.aws_session_token) == ("us-east-1", ENV["AWS_SESSION_TOKEN"])
    assert (config.failover.failure_threshold, config.failover.cooldown_ms) == (2, 30000)
    assert config.backoff.policy is BackoffKind.BAND


def test_defaults(tmp_path: Path) -> None:
    """A minimal file gets the contract's defaults for failover and backoff, and the key from the env."""
    config = _load(tmp_path, MINIMAL)
    (provider,) = config.providers
    assert (provider.kind, provider.priority, provider.privacy_tier) == (
        ProviderKind.ANTHROPIC,
        1,
        PrivacyTier.STANDARD,
    )
    assert (provider.base_url, provider.api_key_env) == ("https://api.anthropic.com", "ANTHROPIC_API_KEY")
    assert (config.backoff.base_ms, config.backoff.cap_ms, config.backoff.max_retries) == (200, 30000, 10)
    assert config.pricing_path is None


def test_money_is_decimal_not_float(tmp_path: Path) -> None:
    """A TOML float budget becomes an exact Decimal (0.1 stays 0.1)."""
    config = _load(tmp_path, MINIMAL + "daily_budget_usd = 0.1\n")
    assert config.providers[0].daily_budget_usd == Decimal("0.1")


def test_custom_key_env(tmp_path: Path) -> None:
    """api_key_env names the variable the key comes from."""
    config = _load(tmp_path, MINIMAL + 'api_key_env = "MY_KEY"\n', {"MY_KEY": "sk-custom-SECRET"})
    assert config.providers[0].api_key == "sk-custom-SECRET"


def test_keyless_ollama_has_no_key(tmp_path: Path) -> None:
    """A self-hosted endpoint needs no key; none is required from the environment."""
    config = _load(tmp_path, '[driver.providers.ollama]\nmodel = "qwen3"\n', {})
    assert config.providers[0].api_key is None


def test_bedrock_region_from_env(tmp_path: Path) -> None:
    """Bedrock's region falls back to AWS_REGION, then AWS_DEFAULT_REGION."""
    env = {"AWS_ACCESS_KEY_ID": "AKID", "AWS_SECRET_ACCESS_KEY": "s", "AWS_DEFAULT_REGION": "eu-west-1"}
    config = _load(tmp_path, '[driver.providers.bedrock]\nmodel = "m"\n', env)
    assert config.providers[0].region == "eu-west-1"
    assert config.providers[0].aws_session_token is None


def test_pricing_path_resolved(tmp_path: Path) -> None:
    """pricing is a path relative to the config file and must exist."""
    (tmp_path / "pricing.toml").write_text("", encoding="utf-8")
    config = _load(tmp_path, 'pricing = "pricing.toml"\n' + MINIMAL)
    assert config.pricing_path == (tmp_path / "pricing.toml").resolve()
    assert "'missing.toml'" in _error(tmp_path, 'pricing = "missing.toml"\n' + MINIMAL)


def test_full_jitter_policy(tmp_path: Path) -> None:
    """The full-jitter backoff policy and its numbers are read."""
    text = MINIMAL + '[driver.backoff]\npolicy = "full_jitter"\nbase_ms = 100\ncap_ms = 5000\nmax_retries = 4\n'
    backoff = _load(tmp_path, text).backoff
    assert (backoff.policy, backoff.base_ms, backoff.cap_ms, backoff.max_retries) == (
        BackoffKind.FULL_JITTER,
        100,
        5000,
        4,
    )


BAD = [
    ('[driver.providers.x]\nkind = "palm"\nmodel = "m"\n', "driver.providers.x.kind", "'palm'"),
    ('[driver.providers.vertex]\nmodel = "gemini-pro"\n', "driver.providers.vertex.kind", "not implemented"),
    ('[driver.providers.x]\nmodel = "m"\n', "driver.providers.x.kind", "not a provider kind"),
    (MINIMAL + 'base_url = "ftp://example.com"\n', "driver.providers.anthropic.base_url", "'ftp://example.com'"),
    (MINIMAL + 'base_url = "not a url"\n', "driver.providers.anthropic.base_url", "'not a url'"),
    (MINIMAL + "daily_budget_usd = -1.5\n", "driver.providers.anthropic.daily_budget_usd", "Decimal('-1.5')"),
    (MINIMAL + 'daily_budget_usd = "5"\n', "driver.providers.anthropic.daily_budget_usd", "'5'"),
    (MINIMAL + "daily_budget_usd = nan\n", "driver.providers.anthropic.daily_budget_usd", "NaN"),
    (MINIMAL + "priority = -1\n", "driver.providers.anthropic.priority", "-1"),
    (MINIMAL + 'timeout_ms = "30s"\n', "driver.providers.anthropic.timeout_ms", "'30s'"),
    (MINIMAL + "timeout_ms = 1.5\n", "driver.providers.anthropic.timeout_ms", "Decimal('1.5')"),
    (MINIMAL + "timeout_ms = 60000\n", "driver.providers.anthropic.timeout_ms", "60000"),
    (MINIMAL + "timeout_ms = true\n", "driver.providers.anthropic.timeout_ms", "True"),
    (MINIMAL + "prority = 1\n", "driver.providers.anthropic.prority", "unknown key"),
    (MINIMAL + 'privacy_tier = "secret"\n', "driver.providers.anthropic.privacy_tier", "'secret'"),
    (MINIMAL + 'privacy_tier = "private"\n', "driver.providers.anthropic.privacy_tier", "only standard"),
    (MINIMAL + 'region = "us-east-1"\n', "driver.providers.anthropic.region", "only bedrock"),
    (
        '[driver.providers.ollama]\nmodel = "m"\nbase_url = "http://8.8.8.8:11434"\nprivacy_tier = "private"\n',
        "driver.providers.ollama.privacy_tier",
        "only standard",
    ),
    ('[driver.providers.vllm]\nmodel = "m"\n', "driver.providers.vllm.base_url", "None"),
    (
        '[driver.providers.local]\nmodel = "m"\nbase_url = "http://localhost:1"\n',
        "driver.providers.local.base_url",
        "in-process",
    ),
    ("[driver.providers.anthropic]\npriority = 1\n", "driver.providers.anthropic.model", "missing"),
    ('[driver.providers.bedrock]\nmodel = "m"\nregion = "mars"\n', "driver.providers.bedrock.region", "'mars'"),
    ("[driver]\n", "driver.providers", "at least one"),
    (MINIMAL + "[driver.failover]\nfailure_threshold = 0\n", "driver.failover.failure_threshold", "0"),
    (MINIMAL + "[driver.failover]\ncooldown_ms = -5\n", "driver.failover.cooldown_ms", "-5"),
    (MINIMAL + '[driver.backoff]\npolicy = "linear"\n', "driver.backoff.policy", "'linear'"),
    (MINIMAL + "[driver.backoff]\nbase_ms = 500\ncap_ms = 100\n", "driver.backoff.cap_ms", "100"),
    (MINIMAL + "[driver.backoff]\nmax_retries = -1\n", "driver.backoff.max_retries", "-1"),
    ('[driver]\ntype = "single"\n' + MINIMAL, "driver.type", "'single'"),
    ("unknown = 1\n" + MINIMAL, "unknown", "unknown key"),
]


@pytest.mark.parametrize(("text", "key", "shown"), BAD, ids=[f"{key}:{shown}" for _, key, shown in BAD])
def test_bad_value_names_key_and_value(tmp_path: Path, text: str, key: str, shown: str) -> None:
    """Each invalid value raises ConfigError at load time, naming the key and showing the value."""
    message = _error(tmp_path, text)
    assert key in message
    assert shown in message


@pytest.mark.parametrize(
    ("text", "variable"),
    [
        (MINIMAL, "ANTHROPIC_API_KEY"),
        ('[driver.providers.openai]\nmodel = "gpt-4o"\n', "OPENAI_API_KEY"),
        ('[driver.providers.openrouter]\nmodel = "x"\n', "OPENROUTER_API_KEY"),
        (MINIMAL + 'api_key_env = "MY_KEY"\n', "MY_KEY"),
        ('[driver.providers.ollama]\nmodel = "m"\napi_key_env = "OLLAMA_KEY"\n', "OLLAMA_KEY"),
        ('[driver.providers.bedrock]\nmodel = "m"\nregion = "us-east-1"\n', "AWS_ACCESS_KEY_ID"),
    ],
)
def test_missing_key_env_var(tmp_path: Path, text: str, variable: str) -> None:
    """A provider that needs a key fails to load when its environment variable is unset or empty."""
    assert variable in _error(tmp_path, text, {"ANTHROPIC_API_KEY": ""} if variable == "ANTHROPIC_API_KEY" else {})


def test_bedrock_without_region(tmp_path: Path) -> None:
    """Bedrock with no region in the file or the environment fails naming the region key."""
    env = {"AWS_ACCESS_KEY_ID": "AKID", "AWS_SECRET_ACCESS_KEY": "s"}
    assert "driver.providers.bedrock.region" in _error(tmp_path, '[driver.providers.bedrock]\nmodel = "m"\n', env)


def test_invalid_toml_and_missing_file(tmp_path: Path) -> None:
    """Unreadable or unparsable files are ConfigErrors naming the file."""
    assert "not valid TOML" in _error(tmp_path, "[driver\n")
    with pytest.raises(ConfigError, match=r"nowhere\.toml"):
        load_config(tmp_path / "nowhere.toml", environ={})


def test_secrets_never_in_repr_or_errors(tmp_path: Path) -> None:
    """Key values appear in no repr of the config and in no ConfigError message."""
    config = load_config(EXAMPLE, environ=ENV)
    texts = [repr(config), str(config), *(repr(p) for p in config.providers)]
    texts.append(_error(tmp_path, MINIMAL + "priority = -1\n"))
    for secret in SECRETS:
        assert all(secret not in text for text in texts), secret
    assert "ANTHROPIC_API_KEY" in repr(config)  # the variable's name is fine


@pytest.mark.asyncio
async def test_build_providers_from_example() -> None:
    """build_providers makes one provider per entry, of the configured kind, sharing the client."""
    config = load_config(EXAMPLE, environ=ENV)
    async with httpx.AsyncClient() as client:
        providers = build_providers(config, client)
    assert list(providers) == [p.name for p in config.providers]
    for provider_config in config.providers:
        provider = providers[provider_config.name]
        assert isinstance(provider, Provider)
        assert provider.kind is provider_config.kind
        assert provider.base_url == (
            provider_config.base_url
            if provider_config.kind is not ProviderKind.BEDROCK
            else "https://bedrock-runtime.us-east-1.amazonaws.com"
        )
        assert all(secret not in repr(provider) for secret in SECRETS)
    assert providers["realizar"].base_url is None
