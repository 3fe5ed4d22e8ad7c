"""The scripted provider: an in-process :class:`~routeproof.providers.Provider` whose calls answer,
fail or stall as scripted (steps :class:`Reply`, :class:`Failure`, :class:`Stall`)."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field

from routeproof.core.constants import STREAM_INTERRUPTED
from routeproof.core.types import (
    AttemptFailure,
    AttemptFailureKind,
    ChatRequest,
    Choice,
    FinishReason,
    MessageStop,
    ProviderKind,
    ProviderResponse,
    StreamError,
    StreamEvent,
    TextDelta,
    Usage,
)
from routeproof.errors import ProviderCallFailed

__all__ = ["Failure", "Reply", "ScriptedProvider", "Stall", "Step"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Reply:
    """Answer ``text`` after ``delay_s`` (a stream sends it word by word, then ``MessageStop``)."""

    text: str = "Hello from the scripted provider."
    delay_s: float = 0.0
    usage: Usage = field(default_factory=lambda: Usage(prompt_tokens=10, completion_tokens=5))


@dataclass(frozen=True, slots=True, kw_only=True)
class Failure:
    """Raise ``ProviderCallFailed(failure)`` after ``delay_s``."""

    failure: AttemptFailure
    delay_s: float = 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Stall:
    """Send ``first_text`` (streams only; a non-streamed call waits) and then nothing, ever."""

    first_text: str = "Hello"


Step = Reply | Failure | Stall
"""One scripted call: answer, fail, or stall."""


class ScriptedProvider:
    """An in-process Provider whose calls follow a script, one step per call (then ``default``).

    Waits (``delay_s``, a :class:`Stall`) end at ``timeout_at`` with an ``ATTEMPT_TIMEOUT`` failure
    before the first event, as a real client's do; a cancelled call propagates ``CancelledError``.
    ``calls`` journals each (request, model); ``open_streams`` counts streams not yet closed.
    """

    def __init__(
        self,
        script: Iterable[Step] = (),
        *,
        name: str = "scripted",
        kind: ProviderKind = ProviderKind.LOCAL,
        default: Step | None = None,
        base_url: str | None = None,
    ) -> None:
        self._name = name
        self._kind = kind
        self._base_url = base_url
        self._script: deque[Step] = deque(script)
        self._default: Step = default if default is not None else Reply()
        self.calls: list[tuple[ChatRequest, str]] = []
        self.open_streams = 0
        self.closed = False

    def __repr__(self) -> str:
        return f"ScriptedProvider(name={self._name!r}, kind={self._kind.value!r}, pending={len(self._script)})"

    @property
    def kind(self) -> ProviderKind:
        """The provider family this stand-in plays."""
        return self._kind

    @property
    def name(self) -> str:
        """The configured name."""
        return self._name

    @property
    def base_url(self) -> str | None:
        """Where requests would go (None: in process)."""
        return self._base_url

    def script(self, steps: Iterable[Step]) -> None:
        """Queue more steps, one per call."""
        self._script.extend(steps)

    def _next(self, request: ChatRequest, model: str) -> Step:
        self.calls.append((request, model))
        return self._script.popleft() if self._script else self._default

    async def _wait(self, delay_s: float | None, timeout_at: float) -> None:
        """Sleep ``delay_s`` (None: forever), but raise the attempt timeout at ``timeout_at``."""
        loop = asyncio.get_running_loop()
        remaining_s = timeout_at - loop.time()
        if remaining_s <= 0:
            raise ProviderCallFailed(AttemptFailure(kind=AttemptFailureKind.ATTEMPT_TIMEOUT, message="no time left"))
        if delay_s is not None and delay_s < remaining_s:
            await asyncio.sleep(delay_s)
            return
        await asyncio.sleep(remaining_s)
        raise ProviderCallFailed(
            AttemptFailure(kind=AttemptFailureKind.ATTEMPT_TIMEOUT, message=f"no answer within {remaining_s:.3f}s")
        )

    async def complete(self, request: ChatRequest, model: str, *, timeout_at: float) -> ProviderResponse:
        """Play the next step as a non-streamed call."""
        step = self._next(request, model)
        if isinstance(step, Stall):
            await self._wait(None, timeout_at)
            raise AssertionError("unreachable: a stall ends at timeout_at")  # pragma: no cover
        await self._wait(step.delay_s, timeout_at)
        if isinstance(step, Failure):
            raise ProviderCallFailed(step.failure)
        choice = Choice(content=step.text, finish_reason=FinishReason.STOP)
        return ProviderResponse(
            id=f"scripted-{len(self.calls):06d}",
            usage=step.usage,
            choices=(choice,),
            finish_reason=FinishReason.STOP,
            provider=self._kind,
            model=model,
        )

    async def stream(
        self, request: ChatRequest, model: str, *, timeout_at: float, idle_timeout_s: float | None = None
    ) -> AsyncIterator[StreamEvent]:
        """Play the next step as a streamed call."""
        step = self._next(request, model)
        self.open_streams += 1
        try:
            if isinstance(step, Stall):
                await self._wait(0.0, timeout_at)
                yield TextDelta(text=step.first_text)
                try:
                    async with asyncio.timeout(idle_timeout_s):
                        await asyncio.Event().wait()  # nothing more, ever
                except TimeoutError:
                    yield StreamError(message=f"{STREAM_INTERRUPTED}: no data for {idle_timeout_s}s")
                return
            await self._wait(step.delay_s, timeout_at)
            if isinstance(step, Failure):
                raise ProviderCallFailed(step.failure)
            words = step.text.split(" ")
            for index, word in enumerate(words):
                yield TextDelta(text=word if index == len(words) - 1 else word + " ")
            yield MessageStop(stop_reason=FinishReason.STOP, usage=step.usage)
        finally:
            self.open_streams -= 1

    async def aclose(self) -> None:
        """Mark the provider closed (nothing else to release)."""
        self.closed = True
