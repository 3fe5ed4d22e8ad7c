"""Test kit for code that uses routeproof, and for anyone writing a Provider (see check_provider)."""

from __future__ import annotations

__all__: list[str] = []
