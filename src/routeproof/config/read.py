"""Readers of TOML values for :mod:`routeproof.config`: each returns the checked value or raises a
:class:`~routeproof.errors.ConfigError` naming the key and the offending value (never a secret).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal

from routeproof.core.constants import PROVIDER_DEFAULT_TIMEOUT_MS
from routeproof.errors import ConfigError

__all__ = [
    "IMPLAUSIBLY_SHORT_MS",
    "STORE_URL_SCHEMES",
    "Missing",
    "StoreTable",
    "check_secret",
    "fail",
    "read_int",
    "read_secret",
    "read_store_table",
    "read_str",
    "read_table",
    "read_timeout_ms",
    "read_usd",
    "secret_problem",
    "shown_url",
    "warn_implausible_ms",
]


def fail(where: str, value: object, why: str) -> ConfigError:
    return ConfigError(f"{where} = {value!r}: {why}")


def read_table(value: object, where: str, allowed: frozenset[str]) -> Mapping[str, object]:
    if not isinstance(value, dict):
        raise fail(where, value, "must be a table")
    unknown = sorted(set(value) - allowed)
    if unknown:
        raise fail(f"{where}.{unknown[0]}", value[unknown[0]], f"unknown key (known: {sorted(allowed)})")
    return value


def read_int(table: Mapping[str, object], key: str, where: str, default: int, *, minimum: int) -> int:
    value = table.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool):
        raise fail(f"{where}.{key}", value, "must be an integer")
    if value < minimum:
        raise fail(f"{where}.{key}", value, f"must be >= {minimum}")
    return value


def read_micro(table: Mapping[str, object], key: str, where: str, default_micro: int, *, maximum: int) -> int:
    """A positive number exact to millionths (``weight = 0.5``), as integer millionths: a value that
    would need rounding, or 0, is refused naming it (no fraction is truncated to 0)."""
    value = table.get(key)
    if value is None:
        return default_micro
    if isinstance(value, bool) or not isinstance(value, int | Decimal):
        raise fail(f"{where}.{key}", value, "must be a number")
    micro = Decimal(value) * 1_000_000
    if micro != micro.to_integral_value() or micro <= 0 or micro > maximum:
        raise fail(f"{where}.{key}", value, f"must be > 0, at most {maximum / 1_000_000:g}, in steps of 0.000001")
    return int(micro)


def read_str(table: Mapping[str, object], key: str, where: str) -> str | None:
    value = table.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise fail(f"{where}.{key}", value, "must be a non-empty string")
    return value


def read_usd(table: Mapping[str, object], where: str, key: str = "daily_budget_usd") -> Decimal | None:
    value = table.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | Decimal):
        raise fail(f"{where}.{key}", value, "must be a number")
    amount = Decimal(value)
    if not amount.is_finite() or amount < 0:
        raise fail(f"{where}.{key}", value, "must be a finite amount >= 0")
    return amount


class Missing:
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


def check_secret(where: str, parameter: str, value: str | None) -> None:
    """Refuse a credential passed in code (a provider's constructor) that :func:`secret_problem` rejects:
    a ``ValueError`` naming the provider and the parameter, never the value. Unchecked, a key with a
    trailing newline reached httpcore, whose DEBUG log printed it in full (``Illegal header value``)."""
    if value:
        problem = secret_problem(value)
        if problem is not None:
            raise ValueError(f"{where}: {parameter} {problem}; the value is not shown")


def read_secret(environ: Mapping[str, str], variable: str, where: str, missing: Missing) -> str:
    value = environ.get(variable, "")
    if not value:
        missing.variables.append((variable, where))
        return ""
    problem = secret_problem(value)
    if problem is not None:
        raise ConfigError(f"{where}: environment variable {variable} {problem}; the value is not shown")
    return value


IMPLAUSIBLY_SHORT_MS = 100
"""A timeout or grace period under this many milliseconds was almost surely meant in seconds."""
_log = logging.getLogger("routeproof.config")


def warn_implausible_ms(where: str, value: int) -> bool:
    """Log a warning (not an error: a tiny value is legal, if odd) when a duration in milliseconds is
    so short it was probably meant in seconds (``timeout_ms = 30``); True when it warned."""
    if 0 < value < IMPLAUSIBLY_SHORT_MS:
        _log.warning(
            "%s = %d: %d milliseconds is implausibly short; seconds meant? (%d s would be %d)",
            where, value, value, value, value * 1000,
        )  # fmt: skip
        return True
    return False


def read_timeout_ms(table: Mapping[str, object], where: str) -> int:
    value = read_int(table, "timeout_ms", where, PROVIDER_DEFAULT_TIMEOUT_MS, minimum=1)
    warn_implausible_ms(f"{where}.timeout_ms", value)
    if value > PROVIDER_DEFAULT_TIMEOUT_MS:
        raise fail(f"{where}.timeout_ms", value, f"must be <= {PROVIDER_DEFAULT_TIMEOUT_MS} (the per-attempt cap)")
    return value


STORE_URL_SCHEMES = ("redis://", "rediss://", "unix://")
"""What a shared store's ``url`` may start with (the schemes redis-py's ``from_url`` takes)."""


def shown_url(value: object) -> str:
    """``value`` as a config error may show it: a URL's ``user:password@`` and query are masked
    (``redis://***@host:6379/0``); a value that is not a string is not shown at all."""
    if not isinstance(value, str):
        return "<hidden>"
    shown, query, _ = value.partition("?")
    if "@" in shown:
        userinfo, _, host = shown.rpartition("@")
        scheme, separator, _ = userinfo.partition("://")
        shown = f"{scheme}{separator}***@{host}" if separator else f"***@{host}"
    return f"{shown}?***" if query else shown


@dataclass(frozen=True, slots=True, kw_only=True)
class StoreTable:
    """The keys every store table (``[health]``, ``[ledger]``) shares, checked; ``table`` is the
    whole validated table, for the keys only one store has."""

    table: Mapping[str, object]
    backend: str
    url: str | None
    """The Redis URL (from ``url`` or the variable ``url_env`` names); None unless the backend is redis."""
    namespace: str


def read_store_table(
    raw: object,
    where: str,
    *,
    keys: frozenset[str],
    backends: tuple[str, ...],
    environ: Mapping[str, str],
    string_keys: tuple[str, ...] = (),
) -> StoreTable:
    """Check a store table: only ``keys``; ``backend`` one of ``backends`` (default memory);
    ``url``/``url_env``/``namespace`` and ``string_keys`` non-empty strings; a namespace without
    braces (it goes inside a Redis hash tag); a redis backend's URL present and of a Redis scheme.
    Each refusal names the key and the offending value (a URL with its password masked)."""
    table = read_table(raw, where, keys)
    backend = table.get("backend", "memory")
    if backend not in backends:
        raise fail(f"{where}.backend", backend, f"must be one of {list(backends)}")
    for key in (*string_keys, "url", "url_env", "namespace"):
        value = table.get(key)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise fail(f"{where}.{key}", shown_url(value) if key == "url" else value, "must be a non-empty string")
    namespace = str(table.get("namespace", "default"))
    if "{" in namespace or "}" in namespace:
        raise fail(f"{where}.namespace", namespace, "must not contain braces")
    url = _read_store_url(table, where, environ) if backend == "redis" else None
    return StoreTable(table=table, backend=str(backend), url=url, namespace=namespace)


def _read_store_url(table: Mapping[str, object], where: str, environ: Mapping[str, str]) -> str:
    variable = table.get("url_env")
    if variable is None:
        url = table.get("url")
        if not url:
            raise fail(f"{where}.url", url, "the redis backend needs url")
    else:
        url = environ.get(str(variable), "")
        if not url:
            raise fail(f"{where}.url_env", variable, f"environment variable {variable!r} is not set")
    if not str(url).startswith(STORE_URL_SCHEMES):
        schemes = ", ".join(STORE_URL_SCHEMES[:-1]) + f" or {STORE_URL_SCHEMES[-1]}"
        if variable is None:
            raise fail(f"{where}.url", shown_url(url), f"must start with {schemes}")
        raise fail(f"{where}.url_env", variable, f"its URL {shown_url(url)!r} must start with {schemes}")
    return str(url)
