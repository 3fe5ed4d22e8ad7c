"""A test kit: a scripted in-process provider, and the checks any Provider implementation must pass.

- :class:`ScriptedProvider` answers, fails or stalls per call as scripted (steps :class:`Reply`,
  :class:`Failure`, :class:`Stall`), in process, honouring ``timeout_at`` and cancellation like a
  real client. It journals every call. Use it to test code that sits on a Router.
- :func:`check_provider` is the behaviour every :class:`~routeproof.providers.Provider` must show,
  modelled on ``trio.testing.check_one_way_stream``: a factory puts the provider under test in each
  :class:`Scenario` and the check asserts the contract — an answer is normalised and a stream ends
  in exactly one ``MessageStop``; failures are classified (``ProviderCallFailed`` with the right
  kind and status); ``timeout_at`` is honoured; cancellation propagates and closes the response;
  and no secret (the API key) appears in any exception's message or repr, nor the provider's repr.
- :func:`wire_scenario` plays each scenario as an ``httpx.MockTransport`` in one of the three wire
  shapes (Anthropic, OpenAI-compatible, Bedrock), so an httpx-based provider can be checked
  without a network; routeproof runs it against every shipped provider.

Run :func:`check_provider` under virtual time (looptime) or accept about a second of real waiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import json
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass, field

import httpx

from routeproof.core.types import (
    AttemptFailure,
    AttemptFailureKind,
    ChatRequest,
    Choice,
    FinishReason,
    Message,
    MessageStop,
    ProviderKind,
    ProviderResponse,
    StreamError,
    StreamEvent,
    TextDelta,
    Usage,
)
from routeproof.errors import ProviderCallFailed
from routeproof.mock.script import Shape
from routeproof.mock.shapes import (
    RequestView,
    default_body,
    default_stream,
    encode_stream_item,
    error_answer,
    stream_content_type,
)
from routeproof.providers.protocol import Provider

__all__ = [
    "CHECK_TIMEOUT_S",
    "TIMEOUT_KINDS",
    "TIMEOUT_SLACK_S",
    "Factory",
    "Failure",
    "ProviderCheckFailed",
    "Reply",
    "Scenario",
    "ScriptedProvider",
    "Shape",
    "Stall",
    "Step",
    "Subject",
    "WireScenario",
    "check_provider",
    "wire_scenario",
]

TIMEOUT_KINDS = frozenset(
    {AttemptFailureKind.ATTEMPT_TIMEOUT, AttemptFailureKind.READ_TIMEOUT, AttemptFailureKind.CONNECT_TIMEOUT}
)
"""The failure kinds a provider may report when ``timeout_at`` passes."""

CHECK_TIMEOUT_S = 0.5
"""How far ahead ``timeout_at`` is set in the checks that expect it to fire."""

TIMEOUT_SLACK_S = 0.05
"""How late after ``timeout_at`` a provider may give up (the contract's 50 ms)."""


# --- the scripted provider -----------------------------------------------------------------------


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
                    yield StreamError(message=f"stream interrupted: no data for {idle_timeout_s}s")
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


# --- the conformance check -----------------------------------------------------------------------


class Scenario(enum.Enum):
    """A situation :func:`check_provider` asks the factory to put a provider in."""

    ANSWER = "answer"  # the upstream answers well (both a plain and a streamed call)
    SERVER_ERROR = "server_error"  # the upstream answers 503
    AUTH_ERROR_ECHOING_KEY = "auth_error_echoing_key"  # 401, and the error body quotes the key sent
    HANG = "hang"  # the upstream never answers
    STALL_AFTER_FIRST_EVENT = "stall_after_first_event"  # a stream sends its first event, then nothing


@dataclass(frozen=True, slots=True, kw_only=True)
class Subject:
    """A provider in one scenario, with what the check needs to know about it.

    ``secret`` is what must never show (the API key; None when the provider has none);
    ``released()`` says whether the scenario's upstream response (or stream) has been closed.
    """

    provider: Provider
    secret: str | None = None
    released: Callable[[], bool] = lambda: True
    model: str = "test-model"


class ProviderCheckFailed(AssertionError):
    """A provider broke the Provider contract in a scenario (the message says which rule)."""


Factory = Callable[[Scenario], Subject | None]
"""Builds a fresh Subject for a scenario; None when the provider cannot be put in it (reported)."""

_REQUEST = ChatRequest(messages=(Message.user("Say hello."),))


def _fail(scenario: Scenario, why: str) -> ProviderCheckFailed:
    return ProviderCheckFailed(f"{scenario.value}: {why}")


def _no_secret(scenario: Scenario, subject: Subject, exc: BaseException | None) -> None:
    """The secret is in no message or repr of ``exc`` (and its causes) nor of the provider."""
    secret = subject.secret
    if not secret:
        return
    if secret in repr(subject.provider):
        raise _fail(scenario, f"the secret is in repr(provider): {type(subject.provider).__name__}")
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        texts = [str(exc), repr(exc)]
        if isinstance(exc, ProviderCallFailed):
            texts += [exc.failure.message, repr(exc.failure)]
        if any(secret in text for text in texts):
            raise _fail(scenario, f"the secret is in a {type(exc).__name__}'s message or repr")
        exc = exc.__cause__ or exc.__context__


async def _expect_failure(
    scenario: Scenario, subject: Subject, call: Awaitable[object], check: Callable[[AttemptFailure], str | None]
) -> ProviderCallFailed:
    try:
        result = await call
    except ProviderCallFailed as exc:
        _no_secret(scenario, subject, exc)
        problem = check(exc.failure)
        if problem is not None:
            raise _fail(scenario, f"{problem}; got {exc.failure!r}") from exc
        return exc
    raise _fail(scenario, f"expected ProviderCallFailed, got {result!r}")


async def _first_event(stream: AsyncIterator[StreamEvent]) -> StreamEvent:
    return await anext(stream)


async def _check_answer(subject: Subject) -> None:
    scenario = Scenario.ANSWER
    loop = asyncio.get_running_loop()
    response = await subject.provider.complete(_REQUEST, subject.model, timeout_at=loop.time() + 10)
    if not isinstance(response, ProviderResponse) or not response.choices:
        raise _fail(scenario, f"complete() must return a ProviderResponse with a choice, got {response!r}")
    if response.provider is not subject.provider.kind:
        raise _fail(scenario, f"response.provider {response.provider!r} is not the provider's kind")
    events = [e async for e in subject.provider.stream(_REQUEST, subject.model, timeout_at=loop.time() + 10)]
    stops = [e for e in events if isinstance(e, MessageStop)]
    if len(stops) != 1 or events[-1] is not stops[0] or any(isinstance(e, StreamError) for e in events):
        raise _fail(scenario, f"a good stream ends with exactly one MessageStop, got {events!r}")


async def _check_server_error(subject: Subject) -> None:
    scenario = Scenario.SERVER_ERROR
    loop = asyncio.get_running_loop()

    def is_503(failure: AttemptFailure) -> str | None:
        ok = failure.kind is AttemptFailureKind.HTTP_STATUS and failure.http_status == 503
        return None if ok else "a 503 must be ProviderCallFailed(HTTP_STATUS, http_status=503)"

    await _expect_failure(
        scenario, subject, subject.provider.complete(_REQUEST, subject.model, timeout_at=loop.time() + 10), is_503
    )
    stream = subject.provider.stream(_REQUEST, subject.model, timeout_at=loop.time() + 10)
    await _expect_failure(scenario, subject, _first_event(stream), is_503)


async def _check_auth_error(subject: Subject) -> None:
    scenario = Scenario.AUTH_ERROR_ECHOING_KEY
    loop = asyncio.get_running_loop()

    def is_401(failure: AttemptFailure) -> str | None:
        ok = failure.kind is AttemptFailureKind.HTTP_STATUS and failure.http_status == 401
        return None if ok else "a 401 must be ProviderCallFailed(HTTP_STATUS, http_status=401)"

    await _expect_failure(
        scenario, subject, subject.provider.complete(_REQUEST, subject.model, timeout_at=loop.time() + 10), is_401
    )
    stream = subject.provider.stream(_REQUEST, subject.model, timeout_at=loop.time() + 10)
    await _expect_failure(scenario, subject, _first_event(stream), is_401)


def _is_timeout(failure: AttemptFailure) -> str | None:
    return (
        None
        if failure.kind in TIMEOUT_KINDS
        else f"a passed timeout_at must be one of {sorted(k.value for k in TIMEOUT_KINDS)}"
    )


async def _check_hang(factory: Factory) -> bool:
    """Both calls give up at ``timeout_at`` and release the response; cancelling one propagates."""
    scenario = Scenario.HANG
    loop = asyncio.get_running_loop()
    for streamed in (False, True):
        subject = factory(scenario)
        if subject is None:
            return False
        try:
            timeout_at = loop.time() + CHECK_TIMEOUT_S
            call: Awaitable[object] = (
                _first_event(subject.provider.stream(_REQUEST, subject.model, timeout_at=timeout_at))
                if streamed
                else subject.provider.complete(_REQUEST, subject.model, timeout_at=timeout_at)
            )
            await _expect_failure(scenario, subject, call, _is_timeout)
            late_s = loop.time() - timeout_at
            if late_s > TIMEOUT_SLACK_S:
                raise _fail(scenario, f"gave up {late_s:.3f}s after timeout_at (stream={streamed})")
            if not subject.released():
                raise _fail(scenario, f"the timed-out response was left open (stream={streamed})")
        finally:
            await subject.provider.aclose()
    # cancellation while waiting: CancelledError propagates, nothing is left open
    subject = factory(scenario)
    if subject is None:
        return False
    try:
        task = asyncio.create_task(subject.provider.complete(_REQUEST, subject.model, timeout_at=loop.time() + 10))
        await asyncio.sleep(CHECK_TIMEOUT_S / 5)
        await _cancelled(scenario, task, subject)
    finally:
        await subject.provider.aclose()
    return True


async def _cancelled(scenario: Scenario, task: asyncio.Task[object], subject: Subject) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    if not task.cancelled():
        exc = task.exception()
        raise _fail(scenario, f"cancellation must propagate as CancelledError, got {exc!r}") from exc
    if not subject.released():
        raise _fail(scenario, "cancelling the call left the upstream response open")


async def _check_stall(subject: Subject) -> None:
    scenario = Scenario.STALL_AFTER_FIRST_EVENT
    loop = asyncio.get_running_loop()
    first = asyncio.Event()

    async def consume() -> object:
        async for _ in subject.provider.stream(_REQUEST, subject.model, timeout_at=loop.time() + 10):
            first.set()
        return None

    task: asyncio.Task[object] = asyncio.create_task(consume())
    async with asyncio.timeout(10):
        await first.wait()
    if subject.released():
        raise _fail(scenario, "the response was closed before the stream ended")
    await _cancelled(scenario, task, subject)


async def check_provider(factory: Factory) -> tuple[Scenario, ...]:
    """Run every :class:`Scenario` against providers ``factory`` builds; the scenarios it skipped.

    :raises ProviderCheckFailed: naming the scenario and the rule the provider broke.
    """
    skipped: list[Scenario] = []
    checks: dict[Scenario, Callable[[Subject], Awaitable[None]]] = {
        Scenario.ANSWER: _check_answer,
        Scenario.SERVER_ERROR: _check_server_error,
        Scenario.AUTH_ERROR_ECHOING_KEY: _check_auth_error,
        Scenario.STALL_AFTER_FIRST_EVENT: _check_stall,
    }
    for scenario in Scenario:
        if scenario is Scenario.HANG:
            if not await _check_hang(factory):
                skipped.append(scenario)
            continue
        subject = factory(scenario)
        if subject is None:
            skipped.append(scenario)
            continue
        try:
            await checks[scenario](subject)
        finally:
            await subject.provider.aclose()
    return tuple(skipped)


# --- scenarios on the wire -----------------------------------------------------------------------


class _Body(httpx.AsyncByteStream):
    """A response body: ``chunks``, then (``stall``) nothing ever; records when it is closed."""

    def __init__(self, chunks: tuple[bytes, ...], *, stall: bool, on_close: Callable[[], None]) -> None:
        self._chunks = chunks
        self._stall = stall
        self._on_close = on_close

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self._chunks:
            yield chunk
        if self._stall:
            await asyncio.Event().wait()

    async def aclose(self) -> None:
        self._on_close()


@dataclass(slots=True)
class WireScenario:
    """A scenario played by an ``httpx.MockTransport``: give ``transport`` to the provider's client."""

    shape: Shape
    scenario: Scenario
    secret: str | None = None
    opened: int = 0
    closed: int = 0
    transport: httpx.MockTransport = field(init=False)

    def __post_init__(self) -> None:
        self.transport = httpx.MockTransport(self._handle)

    def released(self) -> bool:
        """Every response this transport opened has been closed."""
        return self.closed >= self.opened

    def _close(self) -> None:
        self.closed += 1

    def _body(self, chunks: tuple[bytes, ...], *, stall: bool = False) -> _Body:
        self.opened += 1
        return _Body(chunks, stall=stall, on_close=self._close)

    async def _handle(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content or b"{}")
        streamed = bool(body.get("stream")) or request.url.path.endswith("converse-stream")
        view = RequestView(
            model=str(body.get("model", "test-model")), stream=streamed, tool_name=None, include_usage=True
        )
        if self.scenario is Scenario.HANG:
            self.opened += 1
            try:
                await asyncio.Event().wait()
            finally:
                self.closed += 1
        if self.scenario in (Scenario.SERVER_ERROR, Scenario.AUTH_ERROR_ECHOING_KEY):
            status = 503 if self.scenario is Scenario.SERVER_ERROR else 401
            message = "overloaded" if status == 503 else f"Incorrect API key provided: {self.secret}"
            payload, headers = error_answer(self.shape, status, message)
            content = json.dumps(payload).encode()
            return httpx.Response(
                status, headers=[*headers, ("content-type", "application/json")], stream=self._body((content,))
            )
        if not streamed:
            content = json.dumps(default_body(self.shape, view)).encode()
            return httpx.Response(200, headers={"content-type": "application/json"}, stream=self._body((content,)))
        items = tuple(encode_stream_item(self.shape, item) for item in default_stream(self.shape, view))
        stall = self.scenario is Scenario.STALL_AFTER_FIRST_EVENT
        chunks = items[:4] if stall else items  # in all three shapes: up to the first text delta
        return httpx.Response(
            200, headers={"content-type": stream_content_type(self.shape)}, stream=self._body(chunks, stall=stall)
        )


def wire_scenario(shape: Shape, scenario: Scenario, *, secret: str | None = None) -> WireScenario:
    """``scenario`` as the upstream of a ``shape`` provider (``secret``: the key a 401 body quotes)."""
    return WireScenario(shape=shape, scenario=scenario, secret=secret)
