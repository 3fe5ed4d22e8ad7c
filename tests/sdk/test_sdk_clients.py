"""The official SDK clients against ``routeproof mock``, and their parsers as the oracle for ours.

Each SDK talks to a mock server (plain, streamed, every scripted error class) exactly as it would to
the real API; where routeproof's own provider reads the same answer, both readings must agree.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

anthropic = pytest.importorskip("anthropic", reason="the anthropic SDK is the test oracle (test extra)")
openai = pytest.importorskip("openai", reason="the openai SDK is the test oracle (test extra)")

from routeproof.core.formats.sse import fold_events  # noqa: E402 - after the importorskip above
from routeproof.core.types import ChatRequest, FinishReason, Message, ProviderKind  # noqa: E402
from routeproof.mock import MockProviderServer, Scripted, Shape  # noqa: E402
from routeproof.providers.anthropic import AnthropicProvider  # noqa: E402
from routeproof.providers.openai import OpenAIProvider  # noqa: E402

pytestmark = pytest.mark.asyncio
TIMEOUT_S = 10.0  # bounds every SDK call (max_retries=0: the SDK does not retry either)
KEY = "sk-test-sdk-key"
REQUEST = ChatRequest(messages=(Message.user("hi"),), max_tokens=32)


def _anthropic_sdk(server: MockProviderServer, *, bearer: bool = False) -> Any:
    """An AsyncAnthropic client on ``server`` (typed Any: the SDK module is imported at run time)."""
    if bearer:
        return anthropic.AsyncAnthropic(auth_token=KEY, base_url=server.base_url, max_retries=0, timeout=TIMEOUT_S)
    return anthropic.AsyncAnthropic(api_key=KEY, base_url=server.base_url, max_retries=0, timeout=TIMEOUT_S)


def _openai_sdk(server: MockProviderServer) -> Any:
    """An AsyncOpenAI client on ``server`` (typed Any: the SDK module is imported at run time)."""
    return openai.AsyncOpenAI(api_key=KEY, base_url=f"{server.base_url}/v1", max_retries=0, timeout=TIMEOUT_S)


@pytest.mark.parametrize("bearer", [False, True], ids=["x-api-key", "bearer"])
async def test_anthropic_sdk_plain_and_streamed_agree_with_routeproof(bearer: bool) -> None:
    """The SDK (x-api-key or Bearer) gets the mock's answer; its parse equals routeproof's, plain and streamed."""
    async with MockProviderServer(Shape.ANTHROPIC) as server, httpx.AsyncClient() as client:
        sdk = _anthropic_sdk(server, bearer=bearer)
        message = await sdk.messages.create(
            model="claude-mock-model", max_tokens=32, messages=[{"role": "user", "content": "hi"}]
        )
        async with sdk.messages.stream(
            model="claude-mock-model", max_tokens=32, messages=[{"role": "user", "content": "hi"}]
        ) as stream:
            streamed = await stream.get_final_message()
        ours = AnthropicProvider(api_key=KEY, client=client, base_url=server.base_url)
        loop = asyncio.get_running_loop()
        plain = await ours.complete(REQUEST, "claude-mock-model", timeout_at=loop.time() + TIMEOUT_S)
        events = [e async for e in ours.stream(REQUEST, "claude-mock-model", timeout_at=loop.time() + TIMEOUT_S)]
        await sdk.close()
    folded = fold_events(events, provider=ProviderKind.ANTHROPIC, model="claude-mock-model")
    for theirs, mine in ((message, plain), (streamed, folded)):
        text = "".join(block.text for block in theirs.content if block.type == "text")
        assert mine.choices[0].content == text
        assert mine.usage.prompt_tokens == theirs.usage.input_tokens
        assert mine.usage.completion_tokens == theirs.usage.output_tokens
        assert mine.finish_reason is FinishReason.STOP
        assert theirs.stop_reason == "end_turn"


async def test_openai_sdk_plain_and_streamed_agree_with_routeproof() -> None:
    """The OpenAI SDK reads the mock's answer and stream; routeproof's reading of the same bytes agrees."""
    async with MockProviderServer(Shape.OPENAI) as server, httpx.AsyncClient() as client:
        sdk = _openai_sdk(server)
        completion = await sdk.chat.completions.create(
            model="gpt-4o", max_completion_tokens=32, messages=[{"role": "user", "content": "hi"}]
        )
        chunks = await sdk.chat.completions.create(
            model="gpt-4o",
            max_completion_tokens=32,
            messages=[{"role": "user", "content": "hi"}],
            stream=True,
            stream_options={"include_usage": True},
        )
        pieces, usage = [], None
        async for chunk in chunks:
            pieces += [c.delta.content or "" for c in chunk.choices]
            usage = chunk.usage or usage
        ours = OpenAIProvider(api_key=KEY, client=client, base_url=f"{server.base_url}/v1")
        loop = asyncio.get_running_loop()
        plain = await ours.complete(REQUEST, "gpt-4o", timeout_at=loop.time() + TIMEOUT_S)
        events = [e async for e in ours.stream(REQUEST, "gpt-4o", timeout_at=loop.time() + TIMEOUT_S)]
        await sdk.close()
    folded = fold_events(events, provider=ProviderKind.OPENAI, model="gpt-4o")
    assert plain.choices[0].content == completion.choices[0].message.content
    assert completion.usage is not None
    assert plain.usage.completion_tokens == completion.usage.completion_tokens
    assert folded.choices[0].content == "".join(pieces)
    assert usage is not None
    assert folded.usage.completion_tokens == usage.completion_tokens


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (400, "BadRequestError"),
        (401, "AuthenticationError"),
        (403, "PermissionDeniedError"),
        (404, "NotFoundError"),
        (429, "RateLimitError"),
        (500, "InternalServerError"),
        (529, "OverloadedError"),
    ],
)
async def test_anthropic_sdk_reads_each_scripted_error_as_the_real_api_s(status: int, error: str) -> None:
    """Each scripted status is the SDK's own error class, with the type in the body and the request id."""
    async with MockProviderServer(Shape.ANTHROPIC) as server:
        server.script(Scripted(status=status))
        sdk = _anthropic_sdk(server)
        with pytest.raises(anthropic.APIStatusError) as info:
            await sdk.messages.create(model="m", max_tokens=8, messages=[{"role": "user", "content": "hi"}])
        await sdk.close()
    exc = info.value
    assert type(exc).__name__ == error
    assert exc.status_code == status
    assert exc.request_id is not None
    assert exc.request_id.startswith("req_")
    assert isinstance(exc.body, dict)
    assert exc.body["type"] == "error"


@pytest.mark.parametrize(
    ("status", "error", "code"),
    [
        (400, "BadRequestError", None),
        (401, "AuthenticationError", "invalid_api_key"),
        (404, "NotFoundError", "model_not_found"),
        (429, "RateLimitError", "rate_limit_exceeded"),
        (500, "InternalServerError", None),
    ],
)
async def test_openai_sdk_reads_each_scripted_error_as_the_real_api_s(
    status: int, error: str, code: str | None
) -> None:
    """Each scripted status is the SDK's error class with the real API's code and an x-request-id."""
    async with MockProviderServer(Shape.OPENAI) as server:
        server.script(Scripted(status=status))
        sdk = _openai_sdk(server)
        with pytest.raises(openai.APIStatusError) as info:
            await sdk.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
        await sdk.close()
    exc = info.value
    assert type(exc).__name__ == error
    assert exc.code == code
    assert exc.request_id is not None
    assert exc.request_id.startswith("req_")


async def test_a_request_without_credentials_gets_the_shape_s_401() -> None:
    """Neither x-api-key nor Bearer: the Anthropic mock answers 401 authentication_error, as the API does."""
    async with MockProviderServer(Shape.ANTHROPIC) as server, httpx.AsyncClient() as client:
        answer = await client.post(
            f"{server.base_url}/v1/messages",
            json={"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": "hi"}]},
            headers={"anthropic-version": "2023-06-01"},
        )
    assert answer.status_code == 401
    assert answer.json()["error"]["type"] == "authentication_error"
    assert answer.headers["request-id"].startswith("req_")
