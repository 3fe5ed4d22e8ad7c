"""Configuration: a TOML file (seed 003's ``agent.toml`` shape) plus the environment.

Everything is validated when it is loaded: a bad value raises :class:`~routeproof.errors.ConfigError`
naming the offending key and value (``!r``). Secrets come only from the environment (the
``environ`` argument, so tests are hermetic); they are never in an error message or a repr.
Money is :class:`~decimal.Decimal` (TOML floats are parsed as Decimal, never as float).

See ``config/agent.example.toml`` for every key.
"""

from __future__ import annotations

import enum
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlsplit

from routeproof.core.constants import (
    FAILURE_THRESHOLD,
    FULL_JITTER_BASE_MS,
    FULL_JITTER_CAP_MS,
    FULL_JITTER_MAX_RETRIES,
    MAX_ATTEMPTS_PER_PROVIDER,
    PROVIDER_DEFAULT_TIMEOUT_MS,
)
from routeproof.core.health import DEFAULT_COOLDOWN_MS
from routeproof.core.tiers import endpoint_tier
from routeproof.core.types import PrivacyTier, ProviderKind
from routeproof.errors import ConfigError

if TYPE_CHECKING:
    import httpx

    from routeproof.providers.bedrock import AwsCredentials
    from routeproof.providers.protocol import Provider

__all__ = [
    "DEFAULT_KEY_ENV",
    "DEFAULT_PROVIDER_ENV",
    "SESSION_BUDGET_ENV",
    "AdmissionConfig",
    "BackoffConfig",
    "BackoffPolicy",
    "BudgetConfig",
    "FailoverConfig",
    "ProviderConfig",
    "RoutingConfig",
    "build_providers",
    "load_config",
    "parse_config",
    "read_toml",
]

DEFAULT_KEY_ENV: Mapping[ProviderKind, str] = MappingProxyType(
    {
        ProviderKind.ANTHROPIC: "ANTHROPIC_API_KEY",
        ProviderKind.OPENAI: "OPENAI_API_KEY",
        ProviderKind.OPENROUTER: "OPENROUTER_API_KEY",
    }
)
"""Kinds that need an API key, and the variable it comes from unless ``api_key_env`` says otherwise."""

_KIND_ALIASES: Mapping[str, ProviderKind] = MappingProxyType({"realizar": ProviderKind.LOCAL})
"""Table names that imply a kind (seed 003 calls the local runtime ``realizar``)."""

_DEFAULT_BASE_URLS: Mapping[ProviderKind, str] = MappingProxyType(
    {
        ProviderKind.ANTHROPIC: "https://api.anthropic.com",
        ProviderKind.OPENAI: "https://api.openai.com/v1",
        ProviderKind.OPENROUTER: "https://openrouter.ai/api/v1",
        ProviderKind.OLLAMA: "http://localhost:11434/v1",
    }
)
_REGION = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d+$")
_PROFILE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+=,@/-]{0,63}$")  # an AWS config profile name
_AWS_KEY_ENV = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
_TIERS: Mapping[str, PrivacyTier] = MappingProxyType({tier.name.lower(): tier for tier in PrivacyTier})

_TOP_KEYS = frozenset({"driver", "pricing", "gateway", "ledger"}) | {"health"}  # [health]: health_store/config.py
_DRIVER_KEYS = frozenset({"type", "providers", "failover", "backoff", "private_hosts", "budget", "admission"})
_PROVIDER_KEYS = frozenset(
    {"kind", "base_url", "model", "priority", "privacy_tier", "daily_budget_usd", "api_key_env", "timeout_ms", "region"}
) | {"profile"}  # profile: Bedrock's AWS config profile
_FAILOVER_KEYS = frozenset({"failure_threshold", "latency_sla_ms", "cooldown_ms"})
_BACKOFF_KEYS = frozenset({"policy", "base_ms", "cap_ms", "max_retries"})
_BUDGET_KEYS = frozenset({"turn_warning_usd", "session_usd", "monthly_usd"})

DEFAULT_PROVIDER_ENV = ("ROUTEPROOF_DEFAULT_PROVIDER", "BATUTA_LLM_PROVIDER")
"""Variables naming the provider to try first (routeproof's name wins over the seed's)."""
SESSION_BUDGET_ENV = ("ROUTEPROOF_SESSION_BUDGET_USD", "BATUTA_LLM_BUDGET")
"""Variables overriding ``[driver.budget] session_usd`` (routeproof's name wins over the seed's)."""


class BackoffPolicy(enum.Enum):
    """``band``: 200/800 ms with a ±20 % band (TASK-AI-008); ``full_jitter``: the contract's policy."""

    BAND = "band"
    FULL_JITTER = "full_jitter"


@dataclass(frozen=True, slots=True, kw_only=True)
class ProviderConfig:
    """One ``[driver.providers.NAME]`` table, validated, with its secrets from the environment."""

    name: str
    kind: ProviderKind
    model: str
    priority: int
    privacy_tier: PrivacyTier
    base_url: str | None = None  # None: Local (in-process) or Bedrock's regional endpoint
    daily_budget_usd: Decimal | None = None
    api_key_env: str | None = None
    timeout_ms: int = PROVIDER_DEFAULT_TIMEOUT_MS
    region: str | None = None  # Bedrock only
    profile: str | None = None  # Bedrock only: the AWS config profile botocore's chain resolves
    api_key: str | None = field(default=None, repr=False)
    aws_access_key_id: str | None = field(default=None, repr=False)
    aws_secret_access_key: str | None = field(default=None, repr=False)
    aws_session_token: str | None = field(default=None, repr=False)
    aws_credentials: object | None = field(default=None, repr=False, compare=False)
    """Bedrock without explicit keys: the botocore credentials object its chain resolved at load."""


@dataclass(frozen=True, slots=True, kw_only=True)
class FailoverConfig:
    """``[driver.failover]``: cross-request health (FALSIFY-MPA-002) and the latency SLA."""

    failure_threshold: int = FAILURE_THRESHOLD
    latency_sla_ms: int = PROVIDER_DEFAULT_TIMEOUT_MS
    cooldown_ms: int = DEFAULT_COOLDOWN_MS


@dataclass(frozen=True, slots=True, kw_only=True)
class BackoffConfig:
    """``[driver.backoff]``; ``base_ms``/``cap_ms``/``max_retries`` apply to ``full_jitter``."""

    policy: BackoffPolicy = BackoffPolicy.BAND
    base_ms: int = FULL_JITTER_BASE_MS
    cap_ms: int = FULL_JITTER_CAP_MS
    max_retries: int = FULL_JITTER_MAX_RETRIES

    @property
    def max_attempts_per_provider(self) -> int:
        """Attempts per provider in one call: ``max_retries`` (seed 003 loops ``0..max_retries``),
        never more than the contract's ceiling of 3 (seed 000 §1.3)."""
        return min(MAX_ATTEMPTS_PER_PROVIDER, self.max_retries)


@dataclass(frozen=True, slots=True, kw_only=True)
class BudgetConfig:
    """``[driver.budget]`` (USD, None = unlimited): seed 003's per-turn warning, session and monthly stops."""

    turn_warning_usd: Decimal | None = None
    session_usd: Decimal | None = None
    monthly_usd: Decimal | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class AdmissionConfig:
    """``[driver.admission]`` (issue 13): in-flight limits (0: none) and the HTTP transport.

    The factory's providers share one client, so the router-wide limit defaults to its pool size.
    """

    max_in_flight: int = 100
    max_in_flight_per_provider: int = 100
    transport: str | None = None  # "aiohttp" | "httpx"; None: ROUTEPROOF_TRANSPORT, else httpx (transport.py)


@dataclass(frozen=True, slots=True, kw_only=True)
class RoutingConfig:
    """The whole file: providers in priority order, failover, backoff, the pricing file's path."""

    providers: tuple[ProviderConfig, ...]
    failover: FailoverConfig = field(default_factory=FailoverConfig)
    backoff: BackoffConfig = field(default_factory=BackoffConfig)
    pricing_path: Path | None = None
    private_hosts: frozenset[str] = frozenset()
    budget: BudgetConfig = field(default_factory=BudgetConfig)
    admission: AdmissionConfig = field(default_factory=AdmissionConfig)

    def provider(self, name: str) -> ProviderConfig:
        """The provider configured as ``name``."""
        for provider in self.providers:
            if provider.name == name:
                return provider
        raise KeyError(name)


def _fail(where: str, value: object, why: str) -> ConfigError:
    return ConfigError(f"{where} = {value!r}: {why}")


def _table(value: object, where: str, allowed: frozenset[str]) -> Mapping[str, object]:
    if not isinstance(value, dict):
        raise _fail(where, value, "must be a table")
    unknown = sorted(set(value) - allowed)
    if unknown:
        raise _fail(f"{where}.{unknown[0]}", value[unknown[0]], f"unknown key (known: {sorted(allowed)})")
    return value


def _int(table: Mapping[str, object], key: str, where: str, default: int, *, minimum: int) -> int:
    value = table.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool):
        raise _fail(f"{where}.{key}", value, "must be an integer")
    if value < minimum:
        raise _fail(f"{where}.{key}", value, f"must be >= {minimum}")
    return value


def _str(table: Mapping[str, object], key: str, where: str) -> str | None:
    value = table.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise _fail(f"{where}.{key}", value, "must be a non-empty string")
    return value


def _kind(name: str, table: Mapping[str, object], where: str) -> ProviderKind:
    raw = table.get("kind")
    if raw is None:
        implied = _KIND_ALIASES.get(name) or next((k for k in ProviderKind if k.value == name), None)
        if implied is None:
            raise _fail(f"{where}.kind", raw, f"missing, and {name!r} is not a provider kind")
        kind = implied
    elif isinstance(raw, str) and raw in {k.value for k in ProviderKind}:
        kind = ProviderKind(raw)
    else:
        raise _fail(f"{where}.kind", raw, f"unknown kind (known: {sorted(k.value for k in ProviderKind)})")
    if not kind.is_supported:
        raise _fail(f"{where}.kind", kind.value, "declared but not implemented yet; use another provider")
    return kind


def _base_url(kind: ProviderKind, table: Mapping[str, object], where: str) -> str | None:
    raw = _str(table, "base_url", f"{where}")
    if raw is None:
        if kind is ProviderKind.VLLM:
            raise _fail(f"{where}.base_url", raw, "vllm needs the base URL it is served at")
        return _DEFAULT_BASE_URLS.get(kind)
    if kind is ProviderKind.LOCAL:
        raise _fail(f"{where}.base_url", raw, "the local provider is in-process and has no URL")
    parts = urlsplit(raw)
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        raise _fail(f"{where}.base_url", raw, "must be an http:// or https:// URL with a host")
    url = raw.rstrip("/")
    if kind in {ProviderKind.OLLAMA, ProviderKind.VLLM} and parts.path in {"", "/"}:
        url += "/v1"  # their documented OpenAI-compatible prefix
    return url


def _budget(table: Mapping[str, object], where: str, key: str = "daily_budget_usd") -> Decimal | None:
    value = table.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | Decimal):
        raise _fail(f"{where}.{key}", value, "must be a number")
    amount = Decimal(value)
    if not amount.is_finite() or amount < 0:
        raise _fail(f"{where}.{key}", value, "must be a finite amount >= 0")
    return amount


class _Missing:
    """Environment variables found missing while loading: reported together in one error."""

    def __init__(self) -> None:
        self.variables: list[tuple[str, str]] = []

    def raise_if_any(self) -> None:
        if self.variables:
            listed = "; ".join(f"{variable} (for {where})" for variable, where in self.variables)
            raise ConfigError(f"environment variable(s) not set: {listed}")


def secret_problem(value: str) -> str | None:
    """Why ``value`` cannot be a credential (it would corrupt or leak through an HTTP header), or None.

    Never includes the value itself: the message names the problem only.
    """
    if value != value.strip():
        return "has leading or trailing whitespace (a stray newline or space?)"
    if not value.isascii():
        return "contains a non-ASCII character"
    if any(not ch.isprintable() or ch.isspace() for ch in value):
        return "contains whitespace or a control character"
    return None


def _secret(environ: Mapping[str, str], variable: str, where: str, missing: _Missing) -> str:
    value = environ.get(variable, "")
    if not value:
        missing.variables.append((variable, where))
        return ""
    problem = secret_problem(value)
    if problem is not None:
        raise ConfigError(f"{where}: environment variable {variable} {problem}; the value is not shown")
    return value


def _provider(
    name: str,
    raw: object,
    position: int,
    environ: Mapping[str, str],
    private_hosts: frozenset[str],
    *,
    missing: _Missing,
) -> ProviderConfig:
    where = f"driver.providers.{name}"
    table = _table(raw, where, _PROVIDER_KEYS)
    kind = _kind(name, table, where)
    base_url = _base_url(kind, table, where)
    model = _str(table, "model", where)
    if model is None:
        raise _fail(f"{where}.model", None, "missing: every provider needs a model")
    actual_tier = endpoint_tier(kind, base_url, private_hosts)
    tier_raw = table.get("privacy_tier", actual_tier.name.lower())
    if tier_raw not in _TIERS:
        raise _fail(f"{where}.privacy_tier", tier_raw, f"must be one of {sorted(_TIERS)}")
    tier = _TIERS[str(tier_raw)]
    if tier < actual_tier:
        raise _fail(f"{where}.privacy_tier", tier_raw, f"the endpoint {base_url!r} is only {actual_tier.name.lower()}")
    key_env = _str(table, "api_key_env", where) or DEFAULT_KEY_ENV.get(kind)
    api_key = None if key_env is None else _secret(environ, key_env, f"{where}.api_key_env", missing)
    if kind is ProviderKind.LOCAL and api_key is not None:
        raise _fail(f"{where}.api_key_env", key_env, "the local provider takes no key")
    region = _str(table, "region", where)
    if region is not None and kind is not ProviderKind.BEDROCK:
        raise _fail(f"{where}.region", region, "only bedrock takes a region")
    aws: dict[str, str | None] = {}
    profile: str | None = None
    aws_credentials: object | None = None
    if kind is ProviderKind.BEDROCK:
        region = region or environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION")
        if region is None or not _REGION.match(region):
            raise _fail(f"{where}.region", region, "set region, AWS_REGION or AWS_DEFAULT_REGION to an AWS region")
        profile = _str(table, "profile", where)
        if profile is not None and not _PROFILE.match(profile):
            raise _fail(f"{where}.profile", profile, "must be an AWS config profile name (letters, digits, _.-+=,@/)")
        if profile is None and any(environ.get(variable) for variable in _AWS_KEY_ENV):
            aws = {
                "aws_access_key_id": _secret(environ, "AWS_ACCESS_KEY_ID", f"{where} credentials", missing),
                "aws_secret_access_key": _secret(environ, "AWS_SECRET_ACCESS_KEY", f"{where} credentials", missing),
                "aws_session_token": None,
            }
            if environ.get("AWS_SESSION_TOKEN"):
                aws["aws_session_token"] = _secret(environ, "AWS_SESSION_TOKEN", f"{where} credentials", missing)
        else:
            credentials = resolve_aws_credentials(profile, where)
            if credentials is None:
                tried = f"profile {profile!r}" if profile else "AWS_PROFILE or the default profile"
                missing.variables.append(
                    (
                        " and ".join(_AWS_KEY_ENV),
                        f"{where} credentials; botocore's chain ({tried} in the shared config and"
                        " credentials files, SSO, container credentials, instance metadata) found none either",
                    )
                )
            aws_credentials = credentials
    elif table.get("profile") is not None:
        raise _fail(f"{where}.profile", table.get("profile"), "only bedrock takes an AWS profile")
    return ProviderConfig(
        name=name,
        kind=kind,
        model=model,
        priority=_int(table, "priority", where, position, minimum=0),
        privacy_tier=tier,
        base_url=base_url,
        daily_budget_usd=_budget(table, where),
        api_key_env=key_env,
        timeout_ms=_timeout_ms(table, where),
        region=region,
        profile=profile,
        api_key=api_key,
        aws_credentials=aws_credentials,
        **aws,
    )


def resolve_aws_credentials(profile: str | None, where: str) -> object | None:
    """What botocore's own credential chain resolves (``profile``, or ``AWS_PROFILE``/default when None):
    environment, shared config and credentials files, SSO, assume-role, container credentials,
    instance metadata. None when it finds nothing.

    Blocking I/O (files; the container and instance-metadata endpoints over HTTP), so it runs at
    load, never on a call's path. It reads the process environment, as botocore does (set
    ``AWS_EC2_METADATA_DISABLED=true`` where no instance metadata service should be asked). A
    botocore error (an unknown profile, an unreachable container endpoint) is a ``ConfigError``
    naming the profile and the error, never a credential.
    """
    import botocore.session  # type: ignore[import-untyped]  # lazily: only Bedrock needs it
    from botocore.exceptions import BotoCoreError  # type: ignore[import-untyped]

    try:
        session = botocore.session.Session(profile=profile)
        credentials: object | None = session.get_credentials()
        return credentials
    except (BotoCoreError, ValueError) as exc:  # ValueError: botocore refusing a container URL's host
        raise ConfigError(
            f"{where}: botocore could not resolve AWS credentials (profile {profile!r}): {type(exc).__name__}: {exc}"
        ) from exc


def _timeout_ms(table: Mapping[str, object], where: str) -> int:
    value = _int(table, "timeout_ms", where, PROVIDER_DEFAULT_TIMEOUT_MS, minimum=1)
    if value > PROVIDER_DEFAULT_TIMEOUT_MS:
        raise _fail(f"{where}.timeout_ms", value, f"must be <= {PROVIDER_DEFAULT_TIMEOUT_MS} (the per-attempt cap)")
    return value


def _failover(raw: object) -> FailoverConfig:
    table = _table(raw, "driver.failover", _FAILOVER_KEYS)
    where = "driver.failover"
    return FailoverConfig(
        failure_threshold=_int(table, "failure_threshold", where, FAILURE_THRESHOLD, minimum=1),
        latency_sla_ms=_int(table, "latency_sla_ms", where, PROVIDER_DEFAULT_TIMEOUT_MS, minimum=1),
        cooldown_ms=_int(table, "cooldown_ms", where, DEFAULT_COOLDOWN_MS, minimum=0),
    )


def _admission(raw: object) -> AdmissionConfig:
    where = "driver.admission"
    table = _table(raw, where, frozenset({"max_in_flight", "max_in_flight_per_provider", "transport"}))
    transport = _str(table, "transport", where)
    if transport is not None and transport not in ("aiohttp", "httpx"):
        raise _fail(f"{where}.transport", transport, "must be 'aiohttp' or 'httpx'")
    return AdmissionConfig(
        max_in_flight=_int(table, "max_in_flight", where, 100, minimum=0),
        max_in_flight_per_provider=_int(table, "max_in_flight_per_provider", where, 100, minimum=0),
        transport=transport,
    )


def _backoff(raw: object) -> BackoffConfig:
    where = "driver.backoff"
    table = _table(raw, where, _BACKOFF_KEYS)
    policy_raw = table.get("policy", BackoffPolicy.BAND.value)
    if policy_raw not in {p.value for p in BackoffPolicy}:
        raise _fail(f"{where}.policy", policy_raw, f"must be one of {sorted(p.value for p in BackoffPolicy)}")
    base_ms = _int(table, "base_ms", where, FULL_JITTER_BASE_MS, minimum=1)
    cap_ms = _int(table, "cap_ms", where, FULL_JITTER_CAP_MS, minimum=1)
    if cap_ms < base_ms:
        raise _fail(f"{where}.cap_ms", cap_ms, f"must be >= base_ms ({base_ms!r})")
    return BackoffConfig(
        policy=BackoffPolicy(policy_raw),
        base_ms=base_ms,
        cap_ms=cap_ms,
        max_retries=_int(table, "max_retries", where, FULL_JITTER_MAX_RETRIES, minimum=1),
    )


def _env_usd(environ: Mapping[str, str], names: tuple[str, ...]) -> tuple[str, Decimal] | None:
    for name in names:
        raw = environ.get(name)
        if raw is None or raw == "":
            continue
        try:
            amount = Decimal(raw.strip())
        except ArithmeticError as exc:
            raise _fail(name, raw, "must be a USD amount such as 2.50") from exc
        if not amount.is_finite() or amount < 0:
            raise _fail(name, raw, "must be a finite USD amount >= 0")
        return name, amount
    return None


def _budget_config(raw: object, environ: Mapping[str, str]) -> BudgetConfig:
    where = "driver.budget"
    table = _table(raw, where, _BUDGET_KEYS)
    session = _budget(table, where, "session_usd")
    override = _env_usd(environ, SESSION_BUDGET_ENV)
    if override is not None:
        session = override[1]
    return BudgetConfig(
        turn_warning_usd=_budget(table, where, "turn_warning_usd"),
        session_usd=session,
        monthly_usd=_budget(table, where, "monthly_usd"),
    )


def _default_provider(providers: list[ProviderConfig], environ: Mapping[str, str]) -> list[ProviderConfig]:
    """Move the provider the environment names to the front (seed 003's ``BATUTA_LLM_PROVIDER``)."""
    for variable in DEFAULT_PROVIDER_ENV:
        name = environ.get(variable)
        if not name:
            continue
        chosen = [p for p in providers if name in {p.name, p.kind.value}]
        if not chosen:
            raise _fail(variable, name, f"names no configured provider (configured: {[p.name for p in providers]})")
        return [chosen[0], *(p for p in providers if p is not chosen[0])]
    return providers


def _private_hosts(driver: Mapping[str, object]) -> frozenset[str]:
    raw = driver.get("private_hosts", [])
    if not isinstance(raw, list) or not all(isinstance(h, str) and h for h in raw):
        raise _fail("driver.private_hosts", raw, "must be a list of host names")
    return frozenset(str(h).lower() for h in raw)


def parse_config(data: Mapping[str, object], *, environ: Mapping[str, str], base_dir: Path) -> RoutingConfig:
    """Validate parsed TOML (floats as Decimal); relative paths resolve against ``base_dir``."""
    top = _table(dict(data), "<top level>", _TOP_KEYS)
    driver = _table(top.get("driver", {}), "driver", _DRIVER_KEYS)
    if driver.get("type", "routing") != "routing":
        raise _fail("driver.type", driver.get("type"), "only 'routing' is supported")
    private_hosts = _private_hosts(driver)
    providers_raw = driver.get("providers", {})
    if not isinstance(providers_raw, dict) or not providers_raw:
        raise _fail("driver.providers", providers_raw, "configure at least one [driver.providers.NAME] table")
    missing = _Missing()
    providers = [
        _provider(name, raw, position, environ, private_hosts, missing=missing)
        for position, (name, raw) in enumerate(providers_raw.items(), start=1)
    ]
    missing.raise_if_any()
    providers.sort(key=lambda p: p.priority)  # stable: ties keep file order
    providers = _default_provider(providers, environ)
    pricing_path = None
    pricing_raw = _str(top, "pricing", "<top level>")
    if pricing_raw is not None:
        pricing_path = (base_dir / pricing_raw).resolve()
        if not pricing_path.is_file():
            raise _fail("pricing", pricing_raw, f"no such file: {str(pricing_path)!r}")
    return RoutingConfig(
        providers=tuple(providers),
        failover=_failover(driver.get("failover", {})),
        backoff=_backoff(driver.get("backoff", {})),
        pricing_path=pricing_path,
        private_hosts=private_hosts,
        budget=_budget_config(driver.get("budget", {}), environ),
        admission=_admission(driver.get("admission", {})),
    )


def read_toml(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The TOML file at ``path`` parsed (floats as Decimal); ConfigError naming the file otherwise.
    The one reader for agent.toml, whichever table a caller wants from it."""
    file = Path(path)
    try:
        with file.open("rb") as handle:
            return tomllib.load(handle, parse_float=Decimal)
    except OSError as exc:
        raise ConfigError(f"cannot read config file {str(file)!r}: {exc.strerror}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {str(file)!r} is not valid TOML: {exc}") from exc


def load_config(path: str | os.PathLike[str], *, environ: Mapping[str, str] | None = None) -> RoutingConfig:
    """Read and validate the TOML file at ``path``; secrets come from ``environ`` (default os.environ)."""
    file = Path(path)
    data = read_toml(file)
    return parse_config(data, environ=os.environ if environ is None else environ, base_dir=file.parent)


def build_providers(config: RoutingConfig, client: httpx.AsyncClient) -> dict[str, Provider]:
    """One provider client per configured provider, keyed by name, sharing ``client``.

    The one place that imports every provider module (lazily: loading config needs none of them).
    """
    from routeproof.providers.anthropic import AnthropicProvider
    from routeproof.providers.bedrock import BedrockProvider
    from routeproof.providers.local import LocalProvider
    from routeproof.providers.openai import OpenAIProvider

    built: dict[str, Provider] = {}
    for p in config.providers:
        if p.kind is ProviderKind.ANTHROPIC:
            assert p.api_key is not None, "parse_config guarantees a key"
            assert p.base_url is not None, "parse_config guarantees a URL"
            built[p.name] = AnthropicProvider(api_key=p.api_key, client=client, base_url=p.base_url, name=p.name)
        elif p.kind is ProviderKind.BEDROCK:
            assert p.region is not None, "parse_config guarantees a region"
            built[p.name] = BedrockProvider(
                region=p.region,
                access_key_id=p.aws_access_key_id,
                secret_access_key=p.aws_secret_access_key,
                session_token=p.aws_session_token,
                credentials=cast("AwsCredentials | None", p.aws_credentials),
                client=client,
                base_url=p.base_url,
                name=p.name,
            )
        elif p.kind is ProviderKind.LOCAL:
            built[p.name] = LocalProvider(name=p.name)
        else:
            built[p.name] = OpenAIProvider(
                kind=p.kind, api_key=p.api_key, client=client, base_url=p.base_url, name=p.name
            )
    return built
