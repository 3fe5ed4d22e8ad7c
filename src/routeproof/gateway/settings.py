"""The ``[gateway]`` table of ``agent.toml``: who may call the gateway, as which tenant, for what.

    [gateway]
    aliases = ["chat"]              # the model names clients may ask for (default: ["default"])
    max_body_bytes = 1048576        # request size limit (413 above it)
    grace_period_ms = 10000         # graceful shutdown: in-flight calls and streams get this long
    max_in_flight = 100             # calls in flight at once, shared among the tenants by weight
    header_timeout_ms = 10000       # a connection's request headers must arrive within this
    max_connections = 4096          # open client connections; past it: 503 and close
    # max_queued_per_tenant = 50    # waiters per tenant (default: the tenant's share of max_in_flight)
    forward_headers = ["anthropic-beta", "openai-beta"]  # feature headers passed to a same-protocol provider

    [gateway.tenants.team-a]
    key_env = "ROUTEPROOF_KEY_TEAM_A"   # the tenant's gateway key, from the environment ...
    # key = "..."                       # ... or inline (a test convenience; prefer key_env)
    privacy_tier = "standard"           # sovereign | private | standard (default standard)
    weight = 1                          # its share of max_in_flight, relative to the others' weights
    # rpm = 600                         # its requests per minute, shared by every replica (429 past it)
    # tpm = 200000                      # its tokens per minute (each call's worst-case estimate)

Validated when loaded: a bad value raises :class:`~routeproof.errors.ConfigError` naming the key
and the value, never a key's secret.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from routeproof.config import read_toml
from routeproof.config.read import secret_problem, warn_implausible_ms
from routeproof.core.admission import tenant_shares
from routeproof.core.types import PrivacyTier
from routeproof.errors import ConfigError

__all__ = [
    "DEFAULT_FORWARD_HEADERS",
    "DEFAULT_GRACE_PERIOD_MS",
    "DEFAULT_MAX_BODY_BYTES",
    "GatewaySettings",
    "Tenant",
    "load_gateway_settings",
    "parse_gateway_settings",
]

DEFAULT_MAX_BODY_BYTES = 1 << 20
DEFAULT_GRACE_PERIOD_MS = 10_000
DEFAULT_MAX_IN_FLIGHT = 100
"""The router's per-provider default: the tenants' shares together never queue below the gateway."""
DEFAULT_HEADER_TIMEOUT_MS = 10_000
"""A connection that has not sent a request's headers this long after opening (or after its first byte) is closed."""
DEFAULT_MAX_CONNECTIONS = 4096
"""Open client connections past this are answered 503 and closed (each holds a socket and buffers)."""
_KEYS = frozenset(
    {"aliases", "max_body_bytes", "grace_period_ms", "tenants", "max_in_flight", "max_queued_per_tenant",
     "header_timeout_ms", "max_connections", "forward_headers"}
)  # fmt: skip
_TENANT_KEYS = frozenset({"key_env", "key", "privacy_tier", "weight", "rpm", "tpm"})
DEFAULT_FORWARD_HEADERS = ("anthropic-beta", "openai-beta")
"""The caller's feature headers sent on to a provider of the caller's own protocol (never across)."""
_NEVER_FORWARDED = frozenset(
    {"authorization", "x-api-key", "api-key", "proxy-authorization", "cookie", "host", "content-length",
     "content-type", "transfer-encoding", "connection", "anthropic-version", "traceparent", "tracestate"}
)  # fmt: skip
_HEADER_NAME = re.compile(r"^[a-z0-9!#$%&'*+.^_`|~-]+$")
_TIERS = {tier.name.lower(): tier for tier in PrivacyTier}


@dataclass(frozen=True, slots=True, kw_only=True)
class Tenant:
    """One gateway key and the tenant it stands for; the key itself is kept only as a digest."""

    name: str
    privacy_tier: PrivacyTier = PrivacyTier.STANDARD
    key_sha256: bytes = field(repr=False)
    weight: int = 1
    max_in_flight: int = DEFAULT_MAX_IN_FLIGHT
    """Its share of the gateway's in-flight calls (``core.admission.tenant_shares``)."""
    max_queued: int = DEFAULT_MAX_IN_FLIGHT
    """How many of its calls may wait for a slot; more are refused (503 tenant_saturated)."""
    rpm: int | None = None
    """Its requests per minute across replicas (None: unlimited); past it, 429 with ``Retry-After``."""
    tpm: int | None = None
    """Its tokens per minute across replicas, each call counted at its worst-case estimate."""


@dataclass(frozen=True, slots=True, kw_only=True)
class GatewaySettings:
    """The validated ``[gateway]`` table."""

    tenants: tuple[Tenant, ...]
    aliases: tuple[str, ...] = ("default",)
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    grace_period_ms: int = DEFAULT_GRACE_PERIOD_MS
    header_timeout_ms: int = DEFAULT_HEADER_TIMEOUT_MS
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    forward_headers: tuple[str, ...] = DEFAULT_FORWARD_HEADERS  # lower-case names

    def tenant_for(self, presented: str | None) -> Tenant | None:
        """The tenant whose key is ``presented``, compared in constant time against every key."""
        digest = hashlib.sha256((presented or "").encode()).digest()
        found = None
        for tenant in self.tenants:  # no early exit: the time does not say which key matched
            if hmac.compare_digest(digest, tenant.key_sha256) and presented:
                found = tenant
        return found


def _fail(where: str, value: object, why: str) -> ConfigError:
    return ConfigError(f"{where} = {value!r}: {why}")


def _positive_int(table: Mapping[str, object], key: str, default: int, where: str = "gateway") -> int:
    value = table.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise _fail(f"{where}.{key}", value, "must be a positive integer")
    return value


def _forward_headers(table: Mapping[str, object]) -> tuple[str, ...]:
    raw = table.get("forward_headers", list(DEFAULT_FORWARD_HEADERS))
    if not isinstance(raw, list) or not all(isinstance(h, str) for h in raw):
        raise _fail("gateway.forward_headers", raw, "must be a list of header names")
    names = tuple(h.lower() for h in raw)
    for name in names:
        if not _HEADER_NAME.match(name):
            raise _fail("gateway.forward_headers", name, "is not an HTTP header name")
        if name in _NEVER_FORWARDED:
            raise _fail("gateway.forward_headers", name, "is set by the gateway itself (credentials, framing, version)")
    return names


def _tenant(name: str, raw: object, environ: Mapping[str, str]) -> Tenant:
    where = f"gateway.tenants.{name}"
    if not isinstance(raw, dict):
        raise _fail(where, raw, "must be a table")
    unknown = sorted(set(raw) - _TENANT_KEYS)
    if unknown:
        raise _fail(f"{where}.{unknown[0]}", "…", f"unknown key (known: {sorted(_TENANT_KEYS)})")
    key_env, inline = raw.get("key_env"), raw.get("key")
    if (key_env is None) == (inline is None):
        raise _fail(where, sorted(raw), "set exactly one of key_env or key")
    if key_env is not None:
        if not isinstance(key_env, str) or not key_env:
            raise _fail(f"{where}.key_env", key_env, "must be an environment variable name")
        key = environ.get(key_env, "")
        if not key:
            raise _fail(f"{where}.key_env", key_env, "environment variable is not set")
        problem = secret_problem(key)  # a trailing newline: every client would get 401 with no hint
        if problem is not None:
            raise _fail(f"{where}.key_env", key_env, f"the variable's value {problem}; the value is not shown")
    else:
        if not isinstance(inline, str) or not inline:
            raise _fail(f"{where}.key", "<hidden>", "must be a non-empty string")
        problem = secret_problem(inline)
        if problem is not None:
            raise _fail(f"{where}.key", "<hidden>", problem)
        key = inline
    tier_raw = raw.get("privacy_tier", "standard")
    if tier_raw not in _TIERS:
        raise _fail(f"{where}.privacy_tier", tier_raw, f"must be one of {sorted(_TIERS)}")
    weight = _positive_int(raw, "weight", 1, where)
    rpm, tpm = (_positive_int(raw, k, 1, where) if k in raw else None for k in ("rpm", "tpm"))
    return Tenant(
        name=name, privacy_tier=_TIERS[str(tier_raw)], key_sha256=hashlib.sha256(key.encode()).digest(), weight=weight,
        rpm=rpm, tpm=tpm,
    )  # fmt: skip


def parse_gateway_settings(data: Mapping[str, object], *, environ: Mapping[str, str]) -> GatewaySettings:
    """Validate the ``gateway`` table of parsed ``agent.toml`` data."""
    table = data.get("gateway")
    if not isinstance(table, dict):
        raise _fail("gateway", table, "add a [gateway] table with at least one [gateway.tenants.NAME]")
    unknown = sorted(set(table) - _KEYS)
    if unknown:
        raise _fail(f"gateway.{unknown[0]}", table[unknown[0]], f"unknown key (known: {sorted(_KEYS)})")
    aliases = table.get("aliases", ["default"])
    if not isinstance(aliases, list) or not aliases or not all(isinstance(a, str) and a for a in aliases):
        raise _fail("gateway.aliases", aliases, "must be a non-empty list of model names")
    if len(set(aliases)) != len(aliases):
        raise _fail("gateway.aliases", aliases, "has duplicates")
    tenants_raw = table.get("tenants")
    if not isinstance(tenants_raw, dict) or not tenants_raw:
        raise _fail("gateway.tenants", tenants_raw, "configure at least one [gateway.tenants.NAME] table")
    tenants = tuple(_tenant(name, raw, environ) for name, raw in tenants_raw.items())
    digests = [t.key_sha256 for t in tenants]
    if len(set(digests)) != len(digests):
        raise ConfigError("gateway.tenants: two tenants share one key")
    # the default grows with the tenants (one slot each at least); a value set too low is refused
    max_in_flight = _positive_int(table, "max_in_flight", max(DEFAULT_MAX_IN_FLIGHT, len(tenants)))
    if max_in_flight < len(tenants):
        raise _fail("gateway.max_in_flight", max_in_flight, f"must be at least one per tenant ({len(tenants)})")
    shares = tenant_shares(max_in_flight, tuple(t.weight for t in tenants))
    queued = table.get("max_queued_per_tenant")
    if queued is not None:
        queued = _positive_int(table, "max_queued_per_tenant", 1)
    tenants = tuple(
        replace(t, max_in_flight=share, max_queued=share if queued is None else queued)
        for t, share in zip(tenants, shares, strict=True)
    )
    for key in ("grace_period_ms", "header_timeout_ms"):
        raw_ms = table.get(key)
        if isinstance(raw_ms, int) and not isinstance(raw_ms, bool):
            warn_implausible_ms(f"gateway.{key}", raw_ms)
    return GatewaySettings(
        tenants=tenants,
        aliases=tuple(str(a) for a in aliases),
        max_body_bytes=_positive_int(table, "max_body_bytes", DEFAULT_MAX_BODY_BYTES),
        grace_period_ms=_positive_int(table, "grace_period_ms", DEFAULT_GRACE_PERIOD_MS),
        header_timeout_ms=_positive_int(table, "header_timeout_ms", DEFAULT_HEADER_TIMEOUT_MS),
        max_connections=_positive_int(table, "max_connections", DEFAULT_MAX_CONNECTIONS),
        forward_headers=_forward_headers(table),
    )


def load_gateway_settings(path: str | os.PathLike[str], *, environ: Mapping[str, str] | None = None) -> GatewaySettings:
    """Read ``agent.toml`` and validate its ``[gateway]`` table (keys from ``environ``)."""
    data = read_toml(path)
    return parse_gateway_settings(data, environ=os.environ if environ is None else environ)
