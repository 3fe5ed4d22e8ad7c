"""Context-window-fit routing: a model whose window cannot hold the request is skipped before anything is sent.

The window sizes come from models.toml (``context_window_tokens``); the request's size is
``core/input_size.input_tokens_estimate`` plus its output cap ``max_tokens``
(``core/routing.context_misfits``).
"""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given
from hypothesis import strategies as st

from routeproof import NoEligibleProvider, Router
from routeproof.core.identity import parse_provider
from routeproof.core.input_size import BYTES_PER_TOKEN_ESTIMATE, input_tokens_estimate
from routeproof.core.routing import context_misfits, resolve
from routeproof.core.types import ChainEntry, ChatRequest, FallbackProvider, Message, ProviderKind, TenantPolicy
from routeproof.testing import Reply, ScriptedProvider

GPT_4O_WINDOW = 128_000  # models.toml: ^gpt-4o
GPT_41_WINDOW = 1_047_576  # models.toml: ^gpt-4\.1


def _ask(input_tokens: int, max_tokens: int = 64) -> ChatRequest:
    """A request whose input estimate is exactly ``input_tokens``."""
    text = "x" * (input_tokens * BYTES_PER_TOKEN_ESTIMATE)
    return ChatRequest(messages=(Message.user(text),), alias="a", max_tokens=max_tokens)


def _tenant(*chain: tuple[ProviderKind, str]) -> TenantPolicy:
    (kind, model), *rest = chain
    return TenantPolicy(
        primary={"a": (kind, model)},
        fallback_chain=tuple(FallbackProvider(kind=k, model_alias_map={"a": m}) for k, m in rest),
    )


def _providers() -> tuple[ScriptedProvider, ScriptedProvider]:
    small = ScriptedProvider(kind=ProviderKind.OPENAI, name="openai", default=Reply(text="small"))
    large = ScriptedProvider(kind=ProviderKind.ANTHROPIC, name="anthropic", default=Reply(text="large"))
    return small, large


@pytest.mark.asyncio
@pytest.mark.looptime(end=60)
async def test_a_request_too_large_for_the_first_model_goes_to_the_one_that_fits() -> None:
    """gpt-4o (128,000) cannot hold 128,000 input + 64 output: skipped unsent; gpt-4.1 (1,047,576) answers."""
    small, _ = _providers()
    large_openai = ScriptedProvider(kind=ProviderKind.OPENAI, name="openai-large", default=Reply(text="large"))
    tenant = TenantPolicy(
        primary={"a": (ProviderKind.OPENAI, "gpt-4o")},
        fallback_chain=(FallbackProvider(kind=parse_provider("openai-large"), model_alias_map={"a": "gpt-4.1"}),),
    )
    router = Router([small, large_openai])
    answer = await router.call_provider(
        _ask(GPT_4O_WINDOW), resolve("a", tenant), asyncio.get_running_loop().time() + 5, tenant
    )
    assert answer.choices[0].content == "large"
    assert small.calls == []
    assert [s.reason for s in answer.skipped] == [
        "context_window: input ~128000 + max_tokens 64 = 128064 tokens > gpt-4o's context window of 128000"
    ]
    assert [(s.provider.value, s.model, s.fallback_position) for s in answer.skipped] == [("openai", "gpt-4o", 0)]


@pytest.mark.asyncio
@pytest.mark.looptime(end=60)
async def test_a_request_that_just_fits_is_sent() -> None:
    """Input estimate + output cap equal to the window: the model is tried (never skip what fits)."""
    small, _ = _providers()
    tenant = _tenant((ProviderKind.OPENAI, "gpt-4o"))
    router = Router([small])
    answer = await router.call_provider(
        _ask(GPT_4O_WINDOW - 64), resolve("a", tenant), asyncio.get_running_loop().time() + 5, tenant
    )
    assert answer.choices[0].content == "small"
    assert answer.skipped == ()


@pytest.mark.asyncio
@pytest.mark.looptime(end=60)
async def test_when_no_model_fits_the_refusal_names_the_sizes() -> None:
    """Every model too small: NoEligibleProvider naming each model's window and the request's size; nothing sent."""
    small, large = _providers()
    tenant = _tenant((ProviderKind.OPENAI, "gpt-4o"), (ProviderKind.ANTHROPIC, "claude-sonnet-4-20250514"))
    router = Router([small, large])
    with pytest.raises(NoEligibleProvider) as caught:
        await router.call_provider(_ask(300_000), resolve("a", tenant), asyncio.get_running_loop().time() + 5, tenant)
    message = str(caught.value)
    assert "input ~300000 + max_tokens 64 = 300064 tokens > gpt-4o's context window of 128000" in message
    assert "claude-sonnet-4-20250514's context window of 200000" in message
    assert small.calls == []
    assert large.calls == []


def test_the_estimate_counts_text_bytes_and_not_images() -> None:
    """4 UTF-8 bytes a token, rounded up; an image adds nothing (its size is not measurable from the request)."""
    assert input_tokens_estimate(ChatRequest(messages=(Message.user("abcde"),))) == 2
    assert input_tokens_estimate(ChatRequest(messages=(Message.user("é"),), system="ab")) == 1


_ENTRY = ChainEntry(provider=parse_provider("openai"), model="m", fallback_position=0)


@given(st.one_of(st.none(), st.integers(0, 10**7)), st.integers(0, 10**7), st.integers(0, 10**6))
def test_a_model_is_skipped_exactly_when_its_known_window_is_too_small(
    window: int | None, input_tokens: int, output_tokens: int
) -> None:
    """Unknown window: never skipped; known: skipped iff input + output > window."""
    result = context_misfits(
        (_ENTRY,), {_ENTRY.provider: window}, input_tokens=input_tokens, output_tokens=output_tokens
    )
    assert (_ENTRY.provider in result) == (window is not None and input_tokens + output_tokens > window)
