"""Errors about a provider name the configured instance, not only its kind (two ``openai``
instances must be told apart), and a provider named after its kind keeps its short label."""

from __future__ import annotations

from pathlib import Path

import pytest

from routeproof.core.identity import ProviderKind, ProviderName
from routeproof.core.types import ProviderId
from routeproof.errors import AuthError, ConfigError, InvalidResponse, ProviderHTTPError, TerminalProviderError
from routeproof.ledger_store.config import load_ledger_config
from routeproof.providers.local import LocalProvider

EU = ProviderName("openai-eu", ProviderKind.OPENAI)


@pytest.mark.parametrize(
    ("provider", "named"),
    [
        (EU, "openai-eu (openai)"),
        (ProviderKind.OPENAI, "openai"),
        (ProviderName("not-bound-yet"), "not-bound-yet"),
    ],
    ids=["named-instance", "kind", "unbound-name"],
)
def test_provider_errors_name_the_instance(provider: ProviderId, named: str) -> None:
    """AuthError, the two HTTP-status errors and InvalidResponse begin with the instance's name."""
    messages = [
        str(AuthError(provider, 401)),
        str(TerminalProviderError(provider, 400, "bad")),
        str(ProviderHTTPError(provider, 503)),
        str(InvalidResponse("no choices", provider=provider)),
    ]
    assert messages == [
        f"{named} rejected the credentials (HTTP 401)",
        f"{named} answered HTTP 400: 'bad'",
        f"{named} answered HTTP 503: ''",
        f"invalid response: {named}: no choices",
    ]


def test_a_local_provider_refusal_names_the_instance() -> None:
    """A LocalProvider built with a negative latency is refused naming the instance and the value."""
    with pytest.raises(ValueError, match=r"^'edge-model': latency_s must be >= 0, got -1\.0$"):
        LocalProvider(name="edge-model", latency_s=-1.0)


def test_a_bad_daily_budget_names_the_instance_table(tmp_path: Path) -> None:
    """The ledger's reading of a provider's daily budget names its [driver.providers.NAME] key."""
    config = tmp_path / "agent.toml"
    config.write_text(
        '[driver.providers.openai-eu]\nkind = "openai"\nmodel = "m"\ndaily_budget_usd = "lots"\n', encoding="utf-8"
    )
    with pytest.raises(ConfigError) as refused:
        load_ledger_config(config, environ={})
    assert str(refused.value).startswith("driver.providers.openai-eu.daily_budget_usd: ")
    assert "'lots'" in str(refused.value)
