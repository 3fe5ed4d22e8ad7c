"""A tiny simulated world that drives the kernel: scripted outcomes, virtual milliseconds."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from routeproof.core.kernel import (
    Action,
    AttemptFailed,
    AttemptSucceeded,
    BackoffPolicy,
    CallPlan,
    CallProvider,
    Event,
    Fail,
    Sleep,
    SleepDone,
    Succeed,
    start,
    step,
)
from routeproof.core.types import AttemptFailure, AttemptFailureKind, ChainEntry, ProviderKind

OK = None
"""An outcome: success."""


@dataclass(frozen=True)
class Outcome:
    """What one attempt does: take ``duration_ms`` then fail with ``failure`` (None = succeed)."""

    duration_ms: int = 100
    failure: AttemptFailure | None = None


def http(status: int, duration_ms: int = 100, retry_after_ms: int | None = None) -> Outcome:
    """An attempt answered with an HTTP error status."""
    return Outcome(
        duration_ms,
        AttemptFailure(kind=AttemptFailureKind.HTTP_STATUS, http_status=status, retry_after_ms=retry_after_ms),
    )


def transport(kind: AttemptFailureKind, duration_ms: int = 100) -> Outcome:
    """An attempt that failed below HTTP."""
    return Outcome(duration_ms, AttemptFailure(kind=kind))


def ok(duration_ms: int = 100) -> Outcome:
    """A successful attempt."""
    return Outcome(duration_ms, None)


@dataclass
class Run:
    """Everything one simulated call did."""

    actions: list[tuple[int, Action]] = field(default_factory=list)  # (now_ms, action)
    events: list[Event] = field(default_factory=list)

    @property
    def final(self) -> Action:
        """The action that ended the call."""
        return self.actions[-1][1]

    @property
    def calls(self) -> list[tuple[int, CallProvider]]:
        """Every CallProvider action with the time it was issued."""
        return [(t, a) for t, a in self.actions if isinstance(a, CallProvider)]

    @property
    def sleeps(self) -> list[tuple[int, Sleep]]:
        """Every Sleep action with the time it started."""
        return [(t, a) for t, a in self.actions if isinstance(a, Sleep)]

    @property
    def end_ms(self) -> int:
        """When the call ended."""
        return self.actions[-1][0]


def chain(*kinds: ProviderKind, models: Sequence[str] | None = None) -> tuple[ChainEntry, ...]:
    """A chain whose fallback positions are the indexes."""
    names = models or [f"model-{i}" for i in range(len(kinds))]
    return tuple(
        ChainEntry(provider=k, model=m, fallback_position=i) for i, (k, m) in enumerate(zip(kinds, names, strict=True))
    )


def plan(
    entries: tuple[ChainEntry, ...],
    *,
    deadline_ms: int = 120_000,
    start_ms: int = 0,
    context_window_failover: bool = False,
    backoff: BackoffPolicy | None = None,
) -> CallPlan:
    """A plan starting at ``start_ms`` with the caller deadline ``deadline_ms`` later."""
    return CallPlan(
        chain=entries,
        started_at_ms=start_ms,
        deadline_at_ms=start_ms + deadline_ms,
        context_window_failover=context_window_failover,
        backoff=backoff or BackoffPolicy(),
    )


def simulate(
    call_plan: CallPlan,
    script: Callable[[CallProvider], Outcome] | Sequence[Outcome],
    draws: Sequence[float] = (0.5,),
    max_steps: int = 200,
) -> Run:
    """Drive the kernel until it succeeds or fails; attempts that outlast their timeout time out."""
    if callable(script):
        pick = script
    else:
        queue = list(script)

        def pick(_: CallProvider) -> Outcome:
            return queue.pop(0) if queue else ok()

    run = Run()
    now = call_plan.started_at_ms
    state, action = start(call_plan, now)
    run.actions.append((now, action))
    draw_index = 0
    for _ in range(max_steps):
        if isinstance(action, Succeed | Fail):
            return run
        event: Event
        if isinstance(action, Sleep):
            now += action.duration_ms
            event = SleepDone(now_ms=now)
        else:
            outcome = pick(action)
            if outcome.duration_ms >= action.timeout_ms:
                now += action.timeout_ms
                event = AttemptFailed(
                    now_ms=now, failure=AttemptFailure(kind=AttemptFailureKind.ATTEMPT_TIMEOUT), draw=0.5
                )
            elif outcome.failure is None:
                now += outcome.duration_ms
                event = AttemptSucceeded(now_ms=now)
            else:
                now += outcome.duration_ms
                draw = draws[draw_index % len(draws)]
                draw_index += 1
                event = AttemptFailed(now_ms=now, failure=outcome.failure, draw=draw)
        run.events.append(event)
        state, action = step(state, event)
        run.actions.append((now, action))
    raise AssertionError(f"kernel did not terminate within {max_steps} steps")
