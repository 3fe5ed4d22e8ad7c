"""Structural rules of the providers package: one protocol, no cross-provider imports."""

from __future__ import annotations

import ast
from pathlib import Path

import httpx
import pytest

from routeproof.core.types import ProviderKind
from routeproof.providers.anthropic import AnthropicProvider
from routeproof.providers.bedrock import BedrockProvider
from routeproof.providers.local import LocalProvider
from routeproof.providers.openai import OpenAIProvider
from routeproof.providers.protocol import Provider

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "routeproof" / "providers"
PROVIDER_MODULES = ("anthropic", "openai", "bedrock", "local")


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


@pytest.mark.parametrize("module", PROVIDER_MODULES)
def test_no_provider_imports_another(module: str) -> None:
    """A provider module imports no other provider module (shared code lives in _http / protocol)."""
    others = {f"routeproof.providers.{m}" for m in PROVIDER_MODULES if m != module}
    assert not _imports(PACKAGE / f"{module}.py") & others


def test_http_helper_imports_no_provider() -> None:
    """_http is shared plumbing: it imports no provider module either."""
    assert not _imports(PACKAGE / "_http.py") & {f"routeproof.providers.{m}" for m in PROVIDER_MODULES}


@pytest.mark.asyncio
async def test_every_provider_satisfies_protocol() -> None:
    """Each provider class is a runtime instance of Provider with the documented attributes."""
    async with httpx.AsyncClient() as client:
        providers: list[Provider] = [
            AnthropicProvider(api_key="k", client=client),
            OpenAIProvider(kind=ProviderKind.OPENROUTER, api_key="k", client=client),
            BedrockProvider(region="us-east-1", access_key_id="a", secret_access_key="s", client=client),
            LocalProvider(),
        ]
        for provider in providers:
            assert isinstance(provider, Provider)
            assert isinstance(provider.name, str)
            assert isinstance(provider.kind, ProviderKind)
            await provider.aclose()
        assert not client.is_closed
    assert [p.base_url is None for p in providers] == [False, False, False, True]
