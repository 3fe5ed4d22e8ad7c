"""The provider check: :func:`check_provider`, the behaviour every
:class:`~routeproof.providers.Provider` must show in each :class:`~routeproof.testing.Scenario`
(modelled on ``trio.testing.check_one_way_stream``)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable

from routeproof.core.types import (
    AttemptFailure,
    AttemptFailureKind,
    ChatRequest,
    Message,
    MessageStop,
    ProviderResponse,
    StreamError,
    StreamEvent,
)
from routeproof.errors import ProviderCallFailed
from routeproof.testing.scenario import Factory, Scenario, Subject

__all__ = ["CHECK_TIMEOUT_S", "TIMEOUT_KINDS", "TIMEOUT_SLACK_S", "ProviderCheckFailed", "check_provider"]

TIMEOUT_KINDS = frozenset(
    {AttemptFailureKind.ATTEMPT_TIMEOUT, AttemptFailureKind.READ_TIMEOUT, AttemptFailureKind.CONNECT_TIMEOUT}
)
"""The failure kinds a provider may report when ``timeout_at`` passes."""

CHECK_TIMEOUT_S = 0.5
"""How far ahead ``timeout_at`` is set in the checks that expect it to fire."""

TIMEOUT_SLACK_S = 0.05
"""How late after ``timeout_at`` a provider may give up (the contract's 50 ms)."""


class ProviderCheckFailed(AssertionError):
    """A provider broke the Provider contract in a scenario (the message says which rule)."""


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


def _check_status(scenario: Scenario, status: int) -> Callable[[Subject], Awaitable[None]]:
    """The check for a scenario whose upstream answers ``status``: both a plain and a streamed call
    fail with ``ProviderCallFailed(HTTP_STATUS, http_status=status)`` and leak no secret."""

    def is_status(failure: AttemptFailure) -> str | None:
        ok = failure.kind is AttemptFailureKind.HTTP_STATUS and failure.http_status == status
        return None if ok else f"a {status} must be ProviderCallFailed(HTTP_STATUS, http_status={status})"

    async def check(subject: Subject) -> None:
        loop = asyncio.get_running_loop()
        await _expect_failure(
            scenario,
            subject,
            subject.provider.complete(_REQUEST, subject.model, timeout_at=loop.time() + 10),
            is_status,
        )
        stream = subject.provider.stream(_REQUEST, subject.model, timeout_at=loop.time() + 10)
        await _expect_failure(scenario, subject, _first_event(stream), is_status)

    return check


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
        Scenario.SERVER_ERROR: _check_status(Scenario.SERVER_ERROR, 503),
        Scenario.AUTH_ERROR_ECHOING_KEY: _check_status(Scenario.AUTH_ERROR_ECHOING_KEY, 401),
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
