"""Provider clients behind one :class:`~routeproof.providers.protocol.Provider` protocol.

One module per provider (``anthropic``, ``openai``, ``bedrock``, ``local``); none imports another.
:class:`OpenAIProvider` also serves the OpenAI-compatible kinds (OpenRouter, Ollama, vLLM) by its
``kind``; :class:`AzureOpenAIProvider` and :class:`GeminiProvider` are configurations of it (deployment
URLs and ``api-key`` auth; Gemini's endpoint, errors and usage). :func:`routeproof.config.build_providers`
builds them from configuration. The Bedrock provider needs the ``bedrock`` extra (botocore); importing it
here does not.

A provider writer's names are here too: the ``Provider`` protocol, the failure a provider raises
for one attempt (``ProviderCallFailed(AttemptFailure(kind, ...))``), the errors of translating a
request and of local congestion, and the content and cache values a provider builds.
"""

from __future__ import annotations

from routeproof.core.capabilities import CapabilityRow, CapabilityTable, ModelCapabilities
from routeproof.core.frozen import FrozenMap
from routeproof.core.types import AttemptFailure, AttemptFailureKind, CacheState, CacheStatus, ContentBlock
from routeproof.errors import LocalCongestion, ProviderCallFailed, ProviderHTTPError, TranslationError
from routeproof.providers.anthropic import AnthropicProvider
from routeproof.providers.azure import AzureOpenAIProvider, TokenCredential
from routeproof.providers.bedrock import AwsCredentials, BedrockProvider
from routeproof.providers.gemini import GeminiProvider
from routeproof.providers.local import LocalProvider
from routeproof.providers.openai import OpenAIProvider
from routeproof.providers.protocol import Provider

__all__ = [
    "AnthropicProvider",
    "AttemptFailure",
    "AttemptFailureKind",
    "AwsCredentials",
    "AzureOpenAIProvider",
    "BedrockProvider",
    "CacheState",
    "CacheStatus",
    "CapabilityRow",
    "CapabilityTable",
    "ContentBlock",
    "FrozenMap",
    "GeminiProvider",
    "LocalCongestion",
    "LocalProvider",
    "ModelCapabilities",
    "OpenAIProvider",
    "Provider",
    "ProviderCallFailed",
    "ProviderHTTPError",
    "TokenCredential",
    "TranslationError",
]
