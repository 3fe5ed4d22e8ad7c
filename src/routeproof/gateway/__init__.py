"""``routeproof serve``: the router as an OpenAI- and Anthropic-compatible HTTP gateway.

Needs the ``gateway`` extra (uvicorn, rich). See ``app.py`` for the endpoints and headers,
``failures.py`` for the error statuses, ``settings.py`` for the ``[gateway]`` table.
"""

from __future__ import annotations

from routeproof.gateway.app import ATTEMPTS_HEADER, DEADLINE_HEADER, GatewayApp
from routeproof.gateway.backend import Backend
from routeproof.gateway.settings import GatewaySettings, Tenant, load_gateway_settings, parse_gateway_settings

__all__ = [
    "ATTEMPTS_HEADER",
    "DEADLINE_HEADER",
    "Backend",
    "GatewayApp",
    "GatewaySettings",
    "Tenant",
    "load_gateway_settings",
    "parse_gateway_settings",
]
