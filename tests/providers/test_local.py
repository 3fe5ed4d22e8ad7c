"""The in-process Local provider: deterministic answers, tools, scripted failures, no network."""

from __future__ import annotations

import ast
import asyncio
import inspect
import socket

import pytest

from routeproof.core.types import (
    AttemptFailure,
    AttemptFailureKind,
    BlockStop,
    ChatRequest,
    FinishReason,
    Message,
    MessageStop,
    ProviderKind,
    Role,
    StreamEvent,
    TextDelta,
    ToolDefinition,
    ToolResultBlock,
    ToolUseBlock,
    ToolUseDelta,
    ToolUseStart,
)
from routeproof.errors import ProviderCallFailed
from routeproof.providers import local
from routeproof.providers.local import LocalProvider, answer, count_tokens

WEATHER = ToolDefinition(name="get_weather", description="weather for a city")


def _deadline(seconds: float = 5.0) -> float:
    return asyncio.get_running_loop().time() + seconds


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any socket use fails the test."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the local provider touched the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)


@pytest.mark.usefixtures("no_network")
@pytest.mark.asyncio
async def test_echo_answer_and_usage() -> None:
    """The default model echoes the last user text and counts words as tokens."""
    provider = LocalProvider()
    request = ChatRequest(messages=(Message.user("hello there"),), system="be kind")
    response = await provider.complete(request, "local-echo", timeout_at=_deadline())
    assert response.choices[0].content == "echo: hello there"
    assert response.finish_reason is FinishReason.STOP
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (4, 3)
    assert (response.provider, response.model, response.id) == (ProviderKind.LOCAL, "local-echo", "local-000001")
    assert provider.base_url is None
    assert provider.requests == [(request, "local-echo")]


@pytest.mark.asyncio
async def test_deterministic() -> None:
    """Two providers given the same request give the same response."""
    request = ChatRequest(messages=(Message.user("same input"),))
    first = await LocalProvider().complete(request, "m", timeout_at=_deadline())
    second = await LocalProvider().complete(request, "m", timeout_at=_deadline())
    assert first == second


def test_fixed_reply_truncated_by_max_tokens() -> None:
    """A configured reply longer than max_tokens is cut to max_tokens words with finish LENGTH."""
    request = ChatRequest(messages=(Message.user("hi"),), max_tokens=2)
    choice, tokens = answer(request, "one two three four")
    assert (choice.content, choice.finish_reason, tokens) == ("one two", FinishReason.LENGTH, 2)


def test_stop_sequence_cuts_answer() -> None:
    """The answer ends before the first stop sequence, with finish STOP."""
    request = ChatRequest(messages=(Message.user("alpha END beta"),), stop_sequences=("END",))
    choice, _ = answer(request)
    assert (choice.content, choice.finish_reason) == ("echo: alpha ", FinishReason.STOP)


def test_calls_tool_when_named() -> None:
    """When the user names an offered tool, the model calls it."""
    request = ChatRequest(messages=(Message.user("please call get_weather for Paris"),), tools=(WEATHER,))
    choice, _ = answer(request)
    assert choice.finish_reason is FinishReason.TOOL_CALLS
    assert [(c.name, c.arguments_json) for c in choice.tool_calls] == [("get_weather", "{}")]


def test_answers_tool_result() -> None:
    """After a tool result, the model reports it instead of calling the tool again."""
    request = ChatRequest(
        messages=(
            Message.user("call get_weather"),
            Message(role=Role.ASSISTANT, content=(ToolUseBlock(id="t1", name="get_weather"),)),
            Message(role=Role.USER, content=(ToolResultBlock(tool_use_id="t1", content="sunny 21C"),)),
        ),
        tools=(WEATHER,),
    )
    choice, _ = answer(request)
    assert (choice.content, choice.tool_calls) == ("tool result: sunny 21C", ())


def test_count_tokens_is_word_count() -> None:
    """A token is a whitespace-separated word."""
    assert (count_tokens(""), count_tokens("a  b\nc")) == (0, 3)


@pytest.mark.asyncio
async def test_failure_script_then_success() -> None:
    """Scripted failures are raised one per call, in order, before the model answers again."""
    script = [
        AttemptFailure(kind=AttemptFailureKind.HTTP_STATUS, http_status=503, retry_after_ms=200),
        AttemptFailure(kind=AttemptFailureKind.CONN_RESET),
    ]
    provider = LocalProvider(failures=script)
    request = ChatRequest(messages=(Message.user("hi"),))
    seen = []
    for _ in script:
        with pytest.raises(ProviderCallFailed) as info:
            await provider.complete(request, "m", timeout_at=_deadline())
        seen.append(info.value.failure)
    assert seen == script
    assert (await provider.complete(request, "m", timeout_at=_deadline())).choices[0].content == "echo: hi"
    assert len(provider.requests) == 3


@pytest.mark.looptime(end=600)
@pytest.mark.asyncio
async def test_latency_bounded_by_timeout_at() -> None:
    """A scripted latency past timeout_at ends at timeout_at with ATTEMPT_TIMEOUT, on loop time."""
    provider = LocalProvider(latency_s=60)
    loop = asyncio.get_running_loop()
    start = loop.time()
    with pytest.raises(ProviderCallFailed) as info:
        await provider.complete(ChatRequest(messages=(Message.user("hi"),)), "m", timeout_at=start + 2)
    assert info.value.failure.kind is AttemptFailureKind.ATTEMPT_TIMEOUT
    assert loop.time() - start == pytest.approx(2, abs=0.01)


@pytest.mark.looptime(end=600)
@pytest.mark.asyncio
async def test_latency_within_budget_answers() -> None:
    """A scripted latency shorter than the budget delays the answer by exactly that much."""
    provider = LocalProvider(latency_s=1.5)
    loop = asyncio.get_running_loop()
    start = loop.time()
    await provider.complete(ChatRequest(messages=(Message.user("hi"),)), "m", timeout_at=start + 10)
    assert loop.time() - start == pytest.approx(1.5, abs=0.01)


@pytest.mark.asyncio
async def test_stream_text_events() -> None:
    """Streaming yields the same text as deltas, a block stop, then MessageStop with usage."""
    provider = LocalProvider(reply="one two three")
    events: list[StreamEvent] = [
        event
        async for event in provider.stream(ChatRequest(messages=(Message.user("x"),)), "m", timeout_at=_deadline())
    ]
    texts = [e.text for e in events if isinstance(e, TextDelta)]
    assert "".join(texts) == "one two three"
    assert isinstance(events[-2], BlockStop)
    last = events[-1]
    assert isinstance(last, MessageStop)
    assert (last.stop_reason, last.usage.completion_tokens) == (FinishReason.STOP, 3)


@pytest.mark.asyncio
async def test_stream_tool_events() -> None:
    """A streamed tool call is ToolUseStart, ToolUseDelta with the arguments, BlockStop, MessageStop."""
    provider = LocalProvider()
    request = ChatRequest(messages=(Message.user("use get_weather"),), tools=(WEATHER,))
    events = [event async for event in provider.stream(request, "m", timeout_at=_deadline())]
    kinds = [type(e) for e in events]
    assert kinds == [ToolUseStart, ToolUseDelta, BlockStop, MessageStop]


@pytest.mark.asyncio
async def test_stream_scripted_failure_before_first_event() -> None:
    """A scripted failure surfaces before any event is yielded."""
    provider = LocalProvider(failures=[AttemptFailure(kind=AttemptFailureKind.READ_TIMEOUT)])
    stream = provider.stream(ChatRequest(messages=(Message.user("x"),)), "m", timeout_at=_deadline())
    with pytest.raises(ProviderCallFailed):
        await anext(stream)


def test_local_module_imports_no_network_code() -> None:
    """The local module imports no HTTP client and no socket library."""
    tree = ast.parse(inspect.getsource(local))
    imported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module.split(".")[0])
    assert not imported & {"httpx", "socket", "ssl", "urllib", "http", "aiohttp", "requests", "botocore"}
    assert not hasattr(LocalProvider(), "_client")
