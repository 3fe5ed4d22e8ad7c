"""An in-process, deterministic model behind the :class:`Provider` protocol: no network at all.

It is what the Sovereign tier uses and what tests use. The model is a handful of pure functions:

* the answer is ``reply`` when one is configured, else ``"echo: <last user text>"``;
* when the request offers tools and the last user text names one, the model calls that tool
  (arguments ``{}``); when the last message carries tool results, it answers ``"tool result: ..."``;
* a token is a whitespace-separated word; the answer is cut at the first stop sequence (finish
  ``stop``) or after ``max_tokens`` words (finish ``length``).

For tests, ``failures`` is a script of :class:`AttemptFailure` values raised, one per call, before
the model answers; ``latency_s`` delays each answer on the loop's clock, bounded by ``timeout_at``.
This module imports no HTTP client and opens no socket.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Iterable

from routeproof.core.types import (
    AttemptFailure,
    AttemptFailureKind,
    BlockStop,
    ChatRequest,
    Choice,
    ContentBlock,
    FinishReason,
    Message,
    MessageStop,
    ProviderKind,
    ProviderResponse,
    Role,
    StreamEvent,
    TextBlock,
    TextDelta,
    ToolCall,
    ToolResultBlock,
    ToolUseBlock,
    ToolUseDelta,
    ToolUseStart,
    Usage,
)
from routeproof.errors import ProviderCallFailed
from routeproof.providers._passthrough import chat_view

__all__ = ["DEFAULT_MODEL", "LocalProvider", "answer", "count_tokens", "prompt_tokens"]

DEFAULT_MODEL = "local-echo"


def count_tokens(text: str) -> int:
    """The local model's token count: whitespace-separated words."""
    return len(text.split())


def _block_text(block: ContentBlock) -> str:
    if isinstance(block, TextBlock):
        return block.text
    if isinstance(block, ToolUseBlock):
        return f"{block.name} {block.input_json}"
    if isinstance(block, ToolResultBlock):
        return block.content
    return ""  # images, documents, thinking: the local model reads text only


def prompt_tokens(request: ChatRequest) -> int:
    """Tokens of everything the model reads: system prompt, every block, every tool definition."""
    parts = [request.system or ""]
    parts.extend(_block_text(block) for message in request.messages for block in message.content)
    parts.extend(f"{tool.name} {tool.description}" for tool in request.tools)
    return sum(count_tokens(part) for part in parts)


def _text_of(message: Message) -> str:
    return " ".join(block.text for block in message.content if isinstance(block, TextBlock))


def _cut(text: str, request: ChatRequest) -> tuple[str, FinishReason]:
    cuts = [text.find(stop) for stop in request.stop_sequences if stop and stop in text]
    if cuts:
        text = text[: min(cuts)]
    words = text.split()
    if len(words) > request.max_tokens:
        return " ".join(words[: request.max_tokens]), FinishReason.LENGTH
    return text, FinishReason.STOP


def answer(request: ChatRequest, reply: str | None = None) -> tuple[Choice, int]:
    """The model's answer to ``request`` and its completion-token count (pure, deterministic)."""
    last = request.messages[-1]
    results = [block.content for block in last.content if isinstance(block, ToolResultBlock)]
    if results:
        text, finish = _cut("tool result: " + " ".join(results), request)
        return Choice(content=text, finish_reason=finish), count_tokens(text)
    user_text = _text_of(last)
    if request.tools and last.role is Role.USER:
        words = set(user_text.replace(",", " ").replace(".", " ").split())
        for tool in request.tools:
            if tool.name in words:
                call = ToolCall(id=f"toolu_local_{len(request.messages)}", name=tool.name, arguments_json="{}")
                return Choice(tool_calls=(call,), finish_reason=FinishReason.TOOL_CALLS), 1 + count_tokens(tool.name)
    text, finish = _cut(reply if reply is not None else f"echo: {user_text}", request)
    return Choice(content=text, finish_reason=finish), count_tokens(text)


class LocalProvider:
    """The deterministic in-process model; ``requests`` journals every call (request, model)."""

    __slots__ = ("_count", "_failures", "base_url", "kind", "latency_s", "name", "reply", "requests")

    def __init__(
        self,
        *,
        name: str = "local",
        reply: str | None = None,
        failures: Iterable[AttemptFailure] = (),
        latency_s: float = 0.0,
    ) -> None:
        if latency_s < 0:
            raise ValueError(f"{name!r}: latency_s must be >= 0, got {latency_s!r}")
        self.kind = ProviderKind.LOCAL
        self.name = name
        self.base_url: str | None = None
        self.reply = reply
        self.latency_s = latency_s
        self.requests: list[tuple[ChatRequest, str]] = []
        self._failures: deque[AttemptFailure] = deque(failures)
        self._count = 0

    def __repr__(self) -> str:
        return f"LocalProvider(name={self.name!r}, pending_failures={len(self._failures)})"

    def script_failures(self, failures: Iterable[AttemptFailure]) -> None:
        """Queue more failures to raise, one per call, before answering again."""
        self._failures.extend(failures)

    async def _attempt(self, request: ChatRequest, model: str, timeout_at: float) -> str:
        """Journal the call, wait the scripted latency, raise the next scripted failure; the id."""
        self.requests.append((request, model))
        self._count += 1
        loop = asyncio.get_running_loop()
        remaining_s = timeout_at - loop.time()
        if remaining_s <= 0:
            raise ProviderCallFailed(AttemptFailure(kind=AttemptFailureKind.ATTEMPT_TIMEOUT, message="no time left"))
        if self.latency_s:
            await asyncio.sleep(min(self.latency_s, remaining_s))
            if self.latency_s >= remaining_s:
                message = f"local model took longer than {remaining_s:.3f}s"
                raise ProviderCallFailed(AttemptFailure(kind=AttemptFailureKind.ATTEMPT_TIMEOUT, message=message))
        if self._failures:
            raise ProviderCallFailed(self._failures.popleft())
        return f"local-{self._count:06d}"

    async def complete(self, request: ChatRequest, model: str, *, timeout_at: float) -> ProviderResponse:
        """Answer ``request`` in-process."""
        chat_view(request)  # a Responses request with state only OpenAI keeps is skipped, never faked
        response_id = await self._attempt(request, model, timeout_at)
        choice, completion_tokens = answer(request, self.reply)
        return ProviderResponse(
            id=response_id,
            usage=Usage(prompt_tokens=prompt_tokens(request), completion_tokens=completion_tokens),
            choices=(choice,),
            finish_reason=choice.finish_reason,
            provider=self.kind,
            model=model,
        )

    async def stream(
        self, request: ChatRequest, model: str, *, timeout_at: float, idle_timeout_s: float | None = None
    ) -> AsyncIterator[StreamEvent]:
        """The same answer as :meth:`complete`, as events: deltas, block stops, then MessageStop.

        ``idle_timeout_s`` is accepted for the protocol and unused: the answer is in memory.
        """
        del idle_timeout_s
        chat_view(request)  # as in complete
        await self._attempt(request, model, timeout_at)
        choice, completion_tokens = answer(request, self.reply)
        for call in choice.tool_calls:
            yield ToolUseStart(id=call.id, name=call.name)
            yield ToolUseDelta(id=call.id, partial_json=call.arguments_json)
            yield BlockStop()
        if choice.content:
            words = choice.content.split(" ")
            for index, word in enumerate(words):
                yield TextDelta(text=word if index == len(words) - 1 else word + " ")
            yield BlockStop()
        usage = Usage(prompt_tokens=prompt_tokens(request), completion_tokens=completion_tokens)
        yield MessageStop(stop_reason=choice.finish_reason, usage=usage)

    async def aclose(self) -> None:
        """Nothing to release."""
