"""Configuration: a TOML file (seed 003's ``agent.toml`` shape) plus the environment.

Everything is validated when it is loaded: a bad value raises :class:`~routeproof.errors.ConfigError`
naming the offending key and value (``!r``). Secrets come only from the environment (the
``environ`` argument, so tests are hermetic); they are never in an error message or a repr.
Money is :class:`~decimal.Decimal` (TOML floats are parsed as Decimal, never as float).

See ``config/agent.example.toml`` for every key. The modules by role (every name re-exported here):
:mod:`routeproof.config.types` (the frozen values), :mod:`routeproof.config.read` (value readers),
:mod:`routeproof.config.providers` (one provider table; the provider clients); :mod:`routeproof.config.load` reads
the file and the driver's other tables.
"""

from routeproof.config.load import (
    DEFAULT_PRICING_PATH,
    budget_config,
    default_pricing_path,
    load_config,
    parse_config,
    read_toml,
)
from routeproof.config.providers import build_providers, resolve_aws_credentials
from routeproof.config.read import secret_problem
from routeproof.config.types import (
    DEFAULT_KEY_ENV,
    DEFAULT_PROVIDER_ENV,
    SESSION_BUDGET_ENV,
    AdmissionConfig,
    BackoffConfig,
    BackoffKind,
    BudgetConfig,
    FailoverConfig,
    ProviderConfig,
    RoutingConfig,
    TrafficSettings,
)

__all__ = [
    "DEFAULT_KEY_ENV",
    "DEFAULT_PRICING_PATH",
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
    "budget_config",
    "build_providers",
    "default_pricing_path",
    "load_config",
    "parse_config",
    "read_toml",
    "resolve_aws_credentials",
    "secret_problem",
]
