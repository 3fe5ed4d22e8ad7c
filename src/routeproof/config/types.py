"""The configuration's frozen values: what ``agent.toml`` (seed 003's shape) says once validated.

:mod:`routeproof.config` builds them (and re-exports every name here).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING

from routeproof.core.balance import Strategy
from routeproof.core.constants import (
    FAILURE_THRESHOLD,
    FULL_JITTER_BASE_MS,
    FULL_JITTER_CAP_MS,
    FULL_JITTER_MAX_RETRIES,
    MAX_ATTEMPTS_PER_PROVIDER,
    PROVIDER_DEFAULT_TIMEOUT_MS,
)
from routeproof.core.health import DEFAULT_COOLDOWN_MS
from routeproof.core.hedge import HedgePolicy
from routeproof.core.retry_budget import RetryBudgetConfig
from routeproof.core.types import PrivacyTier, ProviderKind

if TYPE_CHECKING:  # the ledger_store package's front imports this package: only the annotation is needed
    from routeproof.ledger_store.table import LedgerConfig

__all__ = [
    "DEFAULT_KEY_ENV",
    "DEFAULT_PROVIDER_ENV",
    "SESSION_BUDGET_ENV",
    "AdmissionConfig",
    "BackoffConfig",
    "BackoffKind",
    "BudgetConfig",
    "FailoverConfig",
    "ProviderConfig",
    "RoutingConfig",
    "TrafficSettings",
]

DEFAULT_KEY_ENV: Mapping[ProviderKind, str] = MappingProxyType(
    {
        ProviderKind.ANTHROPIC: "ANTHROPIC_API_KEY",
        ProviderKind.OPENAI: "OPENAI_API_KEY",
        ProviderKind.OPENROUTER: "OPENROUTER_API_KEY",
        ProviderKind.AZURE: "AZURE_OPENAI_API_KEY",  # auth = "bearer": AZURE_OPENAI_AD_TOKEN
        ProviderKind.GEMINI: "GEMINI_API_KEY",
    }
)
"""Kinds that need an API key, and the variable it comes from unless ``api_key_env`` says otherwise."""

DEFAULT_PROVIDER_ENV = ("ROUTEPROOF_DEFAULT_PROVIDER", "BATUTA_LLM_PROVIDER")
"""Variables naming the provider to try first (routeproof's name wins over the seed's)."""
SESSION_BUDGET_ENV = ("ROUTEPROOF_SESSION_BUDGET_USD", "BATUTA_LLM_BUDGET")
"""Variables overriding ``[driver.budget] session_usd`` (routeproof's name wins over the seed's)."""


class BackoffKind(enum.Enum):
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
    weight_micro: int = 1_000_000  # its share of its priority group, in millionths (``weight = 0.5``)
    rpm: int | None = None  # declared requests per minute (None: not limited)
    tpm: int | None = None  # declared tokens per minute
    cache_ttl_ms: int | None = None  # cache_affinity_ttl_s: its prompt cache's lifetime (None: [driver.traffic]'s)
    api_version: str | None = None  # Azure only: the api-version query ("v1": the v1 API)
    bearer_auth: bool = False  # Azure only: the key is an Entra ID bearer token, not an api-key
    azure_credential: object | None = field(default=None, repr=False, compare=False)
    """Azure with ``auth = "azure-identity"``: the ``DefaultAzureCredential`` made at load."""
    responses_api: bool = False  # OpenAI/Azure: serves OpenAI's Responses API (Responses requests go verbatim)


@dataclass(frozen=True, slots=True, kw_only=True)
class FailoverConfig:
    """``[driver.failover]``: cross-request health (FALSIFY-MPA-002) and the latency SLA."""

    failure_threshold: int = FAILURE_THRESHOLD
    latency_sla_ms: int = PROVIDER_DEFAULT_TIMEOUT_MS
    cooldown_ms: int = DEFAULT_COOLDOWN_MS


@dataclass(frozen=True, slots=True, kw_only=True)
class BackoffConfig:
    """``[driver.backoff]``; ``base_ms``/``cap_ms``/``max_retries`` apply to ``full_jitter``."""

    policy: BackoffKind = BackoffKind.BAND
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
class TrafficSettings:
    """``[driver.traffic]`` (issue 32): the groups' strategy, the retry budget (None: off), waiting."""

    strategy: Strategy = Strategy.ORDERED
    retry_budget: RetryBudgetConfig | None = None
    wait_for_capacity: bool = True
    affinity_ttl_ms: int | None = None  # cache_affinity_ttl_s (opt-in): how long a prefix's pin lives
    hedges: Mapping[str, HedgePolicy] = field(default_factory=dict)  # [aliases.NAME.hedge] (opt-in)


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
    traffic: TrafficSettings = field(default_factory=TrafficSettings)
    ledger: LedgerConfig | None = None  # the [ledger] table; None: the file has none (memory)

    def provider(self, name: str) -> ProviderConfig:
        """The provider configured as ``name``."""
        for provider in self.providers:
            if provider.name == name:
                return provider
        raise KeyError(name)
