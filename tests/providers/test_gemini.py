"""Google Gemini's OpenAI-compatible endpoint: Bearer key, list-wrapped errors, RESOURCE_EXHAUSTED and
UNAVAILABLE classified, RetryInfo as the wait, thinking tokens counted, config, ``check_provider``,
and the mock checked against the official ``openai`` client."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import openai
import pytest

from routeproof import ChatRequest, Message, ProviderCallFailed, ProviderKind
from routeproof.config import load_config
from routeproof.core.classify import Verdict, classify_failure
from routeproof.core.types import MessageStop
from routeproof.mock import DEFAULT_TEXT, MockProviderServer, Scripted, Shape
from routeproof.providers.gemini import GEMINI_BASE_URL, GeminiProvider, ThinkingCountedDecoder
from routeproof.testing import Scenario, Subject, check_provider, wire_scenario

KEY = "gemini-SECRET-key-0123456789"
HELLO = ChatRequest(messages=(Message.user("hi"),), max_tokens=16)
RETRY_INFO = [{"error": {"code": 429, "message": "Resource has been exhausted (e.g. check quota).",
               "status": "RESOURCE_EXHAUSTED", "details": [
                   {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "2s"}]}}]  # fmt: skip


def _provider(mock: MockProviderServer) -> GeminiProvider:
    return GeminiProvider(api_key=KEY, base_url=f"{mock.base_url}/v1beta/openai")


def _deadline() -> float:
    return asyncio.get_running_loop().time() + 10


@pytest.mark.asyncio
@pytest.mark.looptime(end=600)
async def test_the_gemini_provider_passes_check_provider() -> None:
    """GeminiProvider passes every check_provider scenario over Gemini-shaped wire answers."""

    def factory(scenario: Scenario) -> Subject:
        wire = wire_scenario(Shape.GEMINI, scenario, secret=KEY)
        provider = GeminiProvider(api_key=KEY, client=httpx.AsyncClient(transport=wire.transport))
        return Subject(provider=provider, secret=KEY, released=wire.released)

    assert await check_provider(factory) == ()


@pytest.mark.asyncio
async def test_a_call_and_a_stream_with_a_bearer_key() -> None:
    """A call and a stream reach /v1beta/openai/chat/completions with the key as a Bearer token."""
    async with MockProviderServer(Shape.GEMINI) as mock:
        provider = _provider(mock)
        try:
            answer = await provider.complete(HELLO, "gemini-2.5-flash", timeout_at=_deadline())
            events = [e async for e in provider.stream(HELLO, "gemini-2.5-flash", timeout_at=_deadline())]
        finally:
            await provider.aclose()
        entries = list(mock.journal)
    assert answer.choices[0].content == DEFAULT_TEXT
    assert "".join(getattr(e, "text", "") for e in events) == DEFAULT_TEXT
    assert [e.path for e in entries] == ["/v1beta/openai/chat/completions"] * 2
    assert all(e.auth_present for e in entries)


@pytest.mark.asyncio
@pytest.mark.parametrize(("status", "retried"), [(429, True), (503, True), (400, False), (403, False)])
async def test_list_wrapped_errors_are_read_and_classified(status: int, retried: bool) -> None:
    """The list-wrapped Google error's message reaches the failure; 429/503 are retryable, 400/403 not."""
    async with MockProviderServer(Shape.GEMINI) as mock:
        mock.script(Scripted(status=status))
        provider = _provider(mock)
        try:
            with pytest.raises(ProviderCallFailed) as caught:
                await provider.complete(HELLO, "gemini-2.5-flash", timeout_at=_deadline())
        finally:
            await provider.aclose()
    failure = caught.value.failure
    assert failure.http_status == status
    assert failure.message.startswith(f"HTTP {status}: scripted HTTP {status}")
    assert (classify_failure(failure).verdict is Verdict.RETRY) is retried


@pytest.mark.asyncio
async def test_retry_info_is_the_wait() -> None:
    """A RESOURCE_EXHAUSTED body's google.rpc.RetryInfo retryDelay (2s) is the failure's Retry-After."""
    async with MockProviderServer(Shape.GEMINI) as mock:
        mock.script(Scripted(status=429, body=json.dumps(RETRY_INFO)))  # a str: the list body is sent as is
        provider = _provider(mock)
        try:
            with pytest.raises(ProviderCallFailed) as caught:
                await provider.complete(HELLO, "gemini-2.5-flash", timeout_at=_deadline())
        finally:
            await provider.aclose()
    assert caught.value.failure.retry_after_ms == 2000
    assert "Resource has been exhausted" in caught.value.failure.message


@pytest.mark.asyncio
async def test_thinking_tokens_left_out_of_completion_tokens_are_counted() -> None:
    """When total_tokens exceeds prompt + completion (thinking left out), the output counts the difference."""
    body = {"id": "g", "object": "chat.completion", "created": 1, "model": "gemini-2.5-flash",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "4"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 20, "completion_tokens": 151, "total_tokens": 553}}  # fmt: skip
    async with MockProviderServer(Shape.GEMINI) as mock:
        mock.script(Scripted(body=body))
        provider = _provider(mock)
        try:
            answer = await provider.complete(HELLO, "gemini-2.5-flash", timeout_at=_deadline())
        finally:
            await provider.aclose()
    assert (answer.usage.prompt_tokens, answer.usage.completion_tokens) == (20, 533)


@pytest.mark.asyncio
async def test_streamed_thinking_tokens_are_counted_too() -> None:
    """A stream whose last usage chunk has the thinking tokens only in total_tokens ends in a MessageStop
    counting them as output, as a plain answer does (the chunk split anywhere on the wire)."""
    chunk = {"id": "g", "object": "chat.completion.chunk", "created": 1, "model": "gemini-2.5-flash"}
    events = (
        {"data": {**chunk, "choices": [{"index": 0, "delta": {"content": "4"}, "finish_reason": "stop"}]}},
        {"data": {**chunk, "choices": [], "usage": {"prompt_tokens": 20, "completion_tokens": 151,
                                                     "total_tokens": 553}}},
        "data: [DONE]\n\n",
    )  # fmt: skip
    async with MockProviderServer(Shape.GEMINI) as mock:
        mock.script(Scripted(stream_events=events))
        provider = _provider(mock)
        try:
            got = [e async for e in provider.stream(HELLO, "gemini-2.5-flash", timeout_at=_deadline())]
        finally:
            await provider.aclose()
    stop = got[-1]
    assert isinstance(stop, MessageStop)
    assert (stop.usage.prompt_tokens, stop.usage.completion_tokens) == (20, 533)
    decoder = ThinkingCountedDecoder()
    raw = b"".join(f"data: {json.dumps(e['data'])}\n\n".encode() for e in events[:2]) + b"data: [DONE]\n\n"
    split = [e for i in range(0, len(raw), 7) for e in decoder.feed(raw[i : i + 7])] + decoder.finish()
    assert split[-1] == stop


def test_the_mock_speaks_what_the_official_openai_client_expects() -> None:
    """The openai SDK pointed at the Gemini mock: an answer, and a 429 raised as RateLimitError."""

    async def run() -> tuple[str, int]:
        async with MockProviderServer(Shape.GEMINI) as mock:
            client = openai.AsyncOpenAI(base_url=f"{mock.base_url}/v1beta/openai/", api_key=KEY, max_retries=0)
            async with client:
                answer = await client.chat.completions.create(
                    model="gemini-2.5-flash", messages=[{"role": "user", "content": "hi"}]
                )
                mock.script(Scripted(status=429))
                with pytest.raises(openai.RateLimitError) as caught:
                    await client.chat.completions.create(
                        model="gemini-2.5-flash", messages=[{"role": "user", "content": "x"}]
                    )
        return answer.choices[0].message.content or "", caught.value.status_code

    assert asyncio.run(run()) == (DEFAULT_TEXT, 429)


def test_gemini_is_configured_from_agent_toml(tmp_path: Path) -> None:
    """kind = gemini defaults to Google's endpoint and GEMINI_API_KEY; Azure-only keys are refused by name."""
    path = tmp_path / "agent.toml"
    path.write_text('[driver.providers.gemini]\nmodel = "gemini-2.5-flash"\n')
    provider = load_config(path, environ={"GEMINI_API_KEY": KEY}).provider("gemini")
    assert provider.kind is ProviderKind.GEMINI
    assert provider.base_url == GEMINI_BASE_URL
    assert provider.api_key == KEY
    path.write_text('[driver.providers.gemini]\nmodel = "gemini-2.5-flash"\napi_version = "v1"\n')
    with pytest.raises(Exception, match="api_version"):
        load_config(path, environ={"GEMINI_API_KEY": KEY})
