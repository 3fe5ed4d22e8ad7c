"""Readers of TOML values for :mod:`routeproof.config`: each returns the checked value or raises a
:class:`~routeproof.errors.ConfigError` naming the key and the offending value (never a secret).
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal

from routeproof.core.constants import PROVIDER_DEFAULT_TIMEOUT_MS
from routeproof.errors import ConfigError

__all__ = [
    "Missing",
    "fail",
    "read_int",
    "read_secret",
    "read_str",
    "read_table",
    "read_timeout_ms",
    "read_usd",
    "secret_problem",
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


def read_secret(environ: Mapping[str, str], variable: str, where: str, missing: Missing) -> str:
    value = environ.get(variable, "")
    if not value:
        missing.variables.append((variable, where))
        return ""
    problem = secret_problem(value)
    if problem is not None:
        raise ConfigError(f"{where}: environment variable {variable} {problem}; the value is not shown")
    return value


def read_timeout_ms(table: Mapping[str, object], where: str) -> int:
    value = read_int(table, "timeout_ms", where, PROVIDER_DEFAULT_TIMEOUT_MS, minimum=1)
    if value > PROVIDER_DEFAULT_TIMEOUT_MS:
        raise fail(f"{where}.timeout_ms", value, f"must be <= {PROVIDER_DEFAULT_TIMEOUT_MS} (the per-attempt cap)")
    return value
