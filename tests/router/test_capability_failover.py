"""Capability-aware failover through the Router: a request a model cannot take skips it, naming why."""

from __future__ import annotations

import asyncio

import pytest

from routeproof import NoEligibleProvider, Router
from routeproof.core.blocks import ImageBlock, SourceKind
from routeproof.core.routing import resolve
from routeproof.core.types import ChatRequest, FallbackProvider, Message, ProviderKind, Role, TenantPolicy, TextBlock
from routeproof.testing import Reply, ScriptedProvider

pytestmark = [pytest.mark.asyncio, pytest.mark.looptime(end=60)]

_IMAGE = ImageBlock(source=SourceKind.URL, data="https://x.test/cat.png")
_ASK = ChatRequest(
    messages=(Message(role=Role.USER, content=(TextBlock(text="what is this?"), _IMAGE)),), alias="a", max_tokens=64
)


def _tenant(*chain: tuple[ProviderKind, str]) -> TenantPolicy:
    (kind, model), *rest = chain
    return TenantPolicy(
        primary={"a": (kind, model)},
        fallback_chain=tuple(FallbackProvider(kind=k, model_alias_map={"a": m}) for k, m in rest),
    )


async def test_an_image_request_skips_a_text_only_model_and_the_next_answers() -> None:
    """gpt-3.5-turbo (images = false in models.toml) is skipped before any send; the Anthropic model answers."""
    text_only = ScriptedProvider(kind=ProviderKind.OPENAI, name="openai", default=Reply(text="never"))
    seeing = ScriptedProvider(kind=ProviderKind.ANTHROPIC, name="anthropic", default=Reply(text="a cat"))
    tenant = _tenant((ProviderKind.OPENAI, "gpt-3.5-turbo"), (ProviderKind.ANTHROPIC, "claude-sonnet-4-5"))
    resolved = resolve("a", tenant)
    router = Router([text_only, seeing])
    answer = await router.call_provider(_ASK, resolved, asyncio.get_running_loop().time() + 5, tenant)
    assert answer.choices[0].content == "a cat"
    assert text_only.calls == []
    assert [s.reason for s in answer.skipped] == ["capability: images"]


async def test_when_no_model_takes_images_the_error_names_the_capability() -> None:
    """With only text-only models in the chain, NoEligibleProvider names the capability and nothing is sent."""
    text_only = ScriptedProvider(kind=ProviderKind.OPENAI, name="openai", default=Reply(text="never"))
    tenant = _tenant((ProviderKind.OPENAI, "gpt-3.5-turbo"))
    router = Router([text_only])
    with pytest.raises(NoEligibleProvider, match="capability: images"):
        await router.call_provider(_ASK, resolve("a", tenant), asyncio.get_running_loop().time() + 5, tenant)
    assert text_only.calls == []
