"""Provider clients behind one :class:`~routeproof.providers.protocol.Provider` protocol.

One module per provider (``anthropic``, ``openai``, ``bedrock``, ``local``); none imports another.
:class:`OpenAIProvider` also serves the OpenAI-compatible kinds (OpenRouter, Ollama, vLLM) by its
``kind``; :class:`AzureOpenAIProvider` and :class:`GeminiProvider` are configurations of it (deployment URLs
and ``api-key`` auth; Gemini's endpoint, errors and usage). :func:`routeproof.config.build_providers` builds them from configuration. The Bedrock
provider needs the ``bedrock`` extra (botocore); importing it here does not.
"""

from __future__ import annotations

from routeproof.core.capabilities import CapabilityRow, CapabilityTable, ModelCapabilities
from routeproof.providers.anthropic import AnthropicProvider
from routeproof.providers.azure import AzureOpenAIProvider
from routeproof.providers.bedrock import AwsCredentials, BedrockProvider
from routeproof.providers.gemini import GeminiProvider
from routeproof.providers.local import LocalProvider
from routeproof.providers.openai import OpenAIProvider
from routeproof.providers.protocol import Provider

__all__ = [
    "AnthropicProvider",
    "AwsCredentials",
    "AzureOpenAIProvider",
    "BedrockProvider",
    "CapabilityRow",
    "CapabilityTable",
    "GeminiProvider",
    "LocalProvider",
    "ModelCapabilities",
    "OpenAIProvider",
    "Provider",
]
