"""The [gateway] table: validation with the offending key named and no secret shown; constant-time lookup."""

from __future__ import annotations

from typing import Any

import pytest

from routeproof.core.types import PrivacyTier
from routeproof.errors import ConfigError
from routeproof.gateway import parse_gateway_settings

SECRET = "gw-super-secret-value"


def _table(**gateway: Any) -> dict[str, Any]:
    return {"gateway": {"tenants": {"a": {"key": SECRET}}, **gateway}}


def test_defaults_and_lookup() -> None:
    """A minimal table: alias 'default', 1 MiB limit, 10 s grace; the key finds its tenant, others none."""
    settings = parse_gateway_settings(_table(), environ={})
    assert settings.aliases == ("default",)
    assert settings.max_body_bytes == 1 << 20
    assert settings.grace_period_ms == 10_000
    tenant = settings.tenant_for(SECRET)
    assert tenant is not None
    assert tenant.name == "a"
    assert tenant.privacy_tier is PrivacyTier.STANDARD
    assert settings.tenant_for(SECRET + "x") is None
    assert settings.tenant_for("") is None
    assert settings.tenant_for(None) is None
    assert SECRET not in repr(settings)


def test_key_from_the_environment() -> None:
    """key_env reads the variable; an unset variable is a ConfigError naming the variable, not a value."""
    table = {"gateway": {"tenants": {"a": {"key_env": "GW_A", "privacy_tier": "private"}}}}
    tenant = parse_gateway_settings(table, environ={"GW_A": SECRET}).tenant_for(SECRET)
    assert tenant is not None
    assert tenant.privacy_tier is PrivacyTier.PRIVATE
    with pytest.raises(ConfigError, match="GW_A"):
        parse_gateway_settings(table, environ={})


@pytest.mark.parametrize(
    ("data", "named"),
    [
        ({}, "gateway"),
        ({"gateway": {"tenants": {}}}, "gateway.tenants"),
        (_table(aliases=[]), "gateway.aliases"),
        (_table(aliases=["a", "a"]), "gateway.aliases"),
        (_table(max_body_bytes=0), "gateway.max_body_bytes"),
        (_table(grace_period_ms="soon"), "gateway.grace_period_ms"),
        (_table(colour="blue"), "gateway.colour"),
        ({"gateway": {"tenants": {"a": {"key": SECRET, "key_env": "X"}}}}, "gateway.tenants.a"),
        ({"gateway": {"tenants": {"a": {"key": SECRET, "privacy_tier": "secret"}}}}, "privacy_tier"),
        ({"gateway": {"tenants": {"a": {"key": SECRET}, "b": {"key": SECRET}}}}, "share one key"),
    ],
)
def test_invalid_tables_are_refused(data: dict[str, Any], named: str) -> None:
    """Each invalid table raises ConfigError naming the offending key, and never shows a key."""
    with pytest.raises(ConfigError, match=named) as caught:
        parse_gateway_settings(data, environ={})
    assert SECRET not in str(caught.value)


@pytest.mark.parametrize(("header", "seconds"), [(None, 30.0), ("250", 0.25), ("30000", 30.0), ("999999999", 30.0)])
def test_deadline_header_is_capped_at_the_budget(header: str | None, seconds: float) -> None:
    """x-routeproof-deadline-ms is relative milliseconds, absent means 30 s, and nothing exceeds 30 s."""
    from routeproof.gateway.app import _timeout_s

    assert _timeout_s(header) == seconds


def test_forward_headers_default_and_lower_cased() -> None:
    """The feature-header allow-list defaults to anthropic-beta and openai-beta; names are lower-cased."""
    assert parse_gateway_settings(_table(), environ={}).forward_headers == ("anthropic-beta", "openai-beta")
    settings = parse_gateway_settings(_table(forward_headers=["Anthropic-Beta", "x-feature"]), environ={})
    assert settings.forward_headers == ("anthropic-beta", "x-feature")


@pytest.mark.parametrize(
    ("headers", "named"),
    [
        (["authorization"], "'authorization'"),
        (["X-Api-Key"], "'x-api-key'"),
        (["anthropic-version"], "'anthropic-version'"),
        (["bad header"], "'bad header'"),
        ("anthropic-beta", "'anthropic-beta'"),
    ],
)
def test_forward_headers_refuse_credentials_framing_and_bad_names(headers: object, named: str) -> None:
    """A header the gateway sets itself (credentials, version, framing) or a non-name fails at load, naming it."""
    with pytest.raises(ConfigError, match=f"gateway.forward_headers.*{named}"):
        parse_gateway_settings(_table(forward_headers=headers), environ={})
