"""Responses API fixtures: the gateway stack of ``tests/gateway`` (Anthropic mock, then OpenAI mock)."""

from __future__ import annotations

from tests.gateway.conftest import make_stack, metrics_reader, stack

__all__ = ["make_stack", "metrics_reader", "stack"]
