"""Provider clients behind one :class:`~routeproof.providers.protocol.Provider` protocol.

One module per provider (``anthropic``, ``openai``, ``bedrock``, ``local``); none imports another.
Import the one you need; :func:`routeproof.config.build_providers` builds them from configuration.
"""

from __future__ import annotations

from routeproof.providers.protocol import Provider

__all__ = ["Provider"]
