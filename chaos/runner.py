"""Run one scenario against the real router, check the invariants, and describe the result."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field

from chaos.rig import KINDS, Fleet, fleet, policy, request, resolved
from chaos.scenarios import Run, Scenario
from chaos.toxi import Toxi, ToxicSpec
from routeproof.core.types import (
    AttemptRecord,
    AttemptStatus,
    MessageStop,
    ProviderId,
    ProviderKind,
    StreamEvent,
    TextDelta,
    ToolUseDelta,
    ToolUseStart,
)
from routeproof.errors import RouterError
from routeproof.mock import DEFAULT_OUTPUT_TOKENS, DEFAULT_TEXT, DEFAULT_TOOL_INPUT
from tests.streaming.harness import partial_tool_calls  # the one counter (streaming tests, MPA-006, chaos)

__all__ = ["INVARIANTS", "CallResult", "RunResult", "run_scenario"]

SLACK_S = 0.050  # the "+ 50 ms"
BUDGET_S = 30.0  # the contract's failover budget
HANG_GRACE_S = 3.0  # past the deadline by this much, the call is declared hung
SETTLE_S = 0.3  # wait after the last call before reading the journals (late requests show up here)

INVARIANTS = (
    "ends_by_deadline",
    "router_outcome",
    "records_match_journals",
    "reservations_released",
    "no_false_completion",
    "no_partial_tool_call",
    "pool_usable_after",
    "no_request_after_return",
    "expected",
)


@dataclass
class CallResult:
    """What one router call did, as the caller saw it."""

    outcome: str = "hang"  # ok | error | cancelled | hang | exception
    detail: str = ""
    started_s: float = 0.0  # time.monotonic()
    ended_s: float = 0.0
    cancelled_at_s: float | None = None  # when the caller cancelled it (time.monotonic())
    deadline_s: float = 0.0
    attempts: tuple[AttemptRecord, ...] = ()
    attempts_known: bool = True
    provider: ProviderId | None = None
    text: str = ""
    tool_json: tuple[str, ...] = ()
    completion_tokens: int | None = None  # the usage the caller was told (the mocks always report 8)
    events: list[StreamEvent] = field(default_factory=list)

    @property
    def elapsed_s(self) -> float:
        """Wall time from the call to its outcome."""
        return self.ended_s - self.started_s


@dataclass(frozen=True, slots=True, kw_only=True)
class RunResult:
    """One scenario run, ready for the report."""

    run: Run
    calls: list[CallResult]
    invariants: dict[str, bool]
    notes: list[str]

    @property
    def verdict(self) -> str:
        """pass, fail, or xfail (a known router bug the row names; xpass once it is fixed)."""
        if all(self.invariants.values()):
            return "pass" if not self.run.scenario.xfail else "xpass"
        return "xfail" if self.run.scenario.xfail else "fail"

    @property
    def outcome(self) -> str:
        """The call's outcome, or counts for a many-call row."""
        if len(self.calls) == 1:
            c = self.calls[0]
            return c.outcome if not c.detail else f"{c.outcome}: {c.detail}"
        counts: dict[str, int] = {}
        for c in self.calls:
            counts[c.outcome] = counts.get(c.outcome, 0) + 1
        return ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))

    def to_json(self) -> dict[str, object]:
        """The report object: scenario, toxics, stream, shape, outcome, elapsed vs deadline, invariants, verdict."""
        s = self.run.scenario
        return {
            "scenario": s.name,
            "toxics": [t.label() for t in s.toxics] + (["disable/enable"] if s.kind == "down_up" else []),
            "stream": self.run.stream,
            "shape": self.run.shape.value,
            "outcome": self.outcome,
            "attempts": sum(len(c.attempts) for c in self.calls),
            "calls": len(self.calls),
            "elapsed_ms": round(max(c.elapsed_s for c in self.calls) * 1000),
            "deadline_ms": round(s.deadline_s * 1000),
            "invariants": dict(self.invariants),
            "verdict": self.verdict,
            "known_bug": s.xfail or None,
            "notes": self.notes,
        }


# -- performing calls -----------------------------------------------------------------------------


async def _one_call(
    f: Fleet, run: Run, text: str, sink: list[CallResult] | None = None, *, on_first_event: bool = False
) -> CallResult:
    """One call as the caller makes it; ``sink`` receives the result object at once (so a caller
    that cancels the call still sees what happened)."""
    s = run.scenario
    loop = asyncio.get_running_loop()
    tenant = policy(run.shape)
    req = request(tool=s.tool, text=text)
    result = CallResult(started_s=time.monotonic(), deadline_s=s.deadline_s)
    if sink is not None:
        sink.append(result)
    deadline = loop.time() + s.deadline_s
    guard = asyncio.timeout(s.deadline_s + HANG_GRACE_S)
    stream = None
    try:
        async with guard:
            if run.stream:
                stream = f.router.call_provider_streaming(req, resolved(tenant), deadline, tenant)
                try:
                    async for event in stream:
                        result.events.append(event)
                        if on_first_event and len(result.events) == 1:
                            await _apply(f, run, tuple(t for t in s.toxics if t.after_first_event))
                finally:
                    await stream.aclose()
                    result.attempts, result.provider = stream.attempts, stream.provider
                last = result.events[-1] if result.events else None
                result.outcome = "ok" if isinstance(last, MessageStop) else "error"
                result.detail = "" if isinstance(last, MessageStop) else getattr(last, "message", "no end event")
                result.text = "".join(e.text for e in result.events if isinstance(e, TextDelta))
                result.tool_json = _tool_json(result.events)
                if isinstance(last, MessageStop):
                    result.completion_tokens = last.usage.completion_tokens
            else:
                response = await f.router.call_provider(req, resolved(tenant), deadline, tenant)
                result.outcome, result.attempts, result.provider = "ok", response.attempts, response.provider
                choice = response.choices[0]
                result.text = choice.content
                result.tool_json = tuple(t.arguments_json for t in choice.tool_calls)
                result.completion_tokens = response.usage.completion_tokens
    except RouterError as exc:
        result.outcome, result.detail, result.attempts = "error", type(exc).__name__, exc.attempts
        if stream is not None:
            result.attempts = stream.attempts or exc.attempts
    except TimeoutError:
        if not guard.expired():
            result.outcome, result.detail = "exception", "TimeoutError escaped the router"
        else:
            result.outcome, result.detail = "hang", f"no outcome {HANG_GRACE_S:g} s past the deadline"
    except asyncio.CancelledError:
        result.outcome, result.attempts_known = "cancelled", False  # one attempt may be in flight
        if stream is not None:
            result.attempts = stream.attempts
        result.ended_s = time.monotonic()
        raise
    except Exception as exc:  # any other exception is what the invariant reports
        result.outcome, result.detail = "exception", f"{type(exc).__name__}: {exc}"
    result.ended_s = time.monotonic()
    return result


def _tool_json(events: list[StreamEvent]) -> tuple[str, ...]:
    parts: dict[str, str] = {}
    for event in events:
        if isinstance(event, ToolUseStart):
            parts[event.id] = ""
        elif isinstance(event, ToolUseDelta):
            parts[event.id] = parts.get(event.id, "") + event.partial_json
    return tuple(parts.values())


async def _apply(f: Fleet, run: Run, specs: tuple[ToxicSpec, ...]) -> None:
    targets = KINDS if run.scenario.on == "all" else (run.shape,)
    for spec in specs:
        for kind in targets:
            await f.call_toxi("add", f.proxies[kind], spec)


async def _later(f: Fleet, run: Run) -> None:
    """Add the toxics whose ``at_s`` > 0 at their time after the call starts."""
    start = asyncio.get_running_loop().time()
    for spec in sorted((t for t in run.scenario.toxics if t.at_s > 0), key=lambda t: t.at_s):
        await asyncio.sleep(max(0.0, start + spec.at_s - asyncio.get_running_loop().time()))
        await _apply(f, run, (spec,))


async def _perform(f: Fleet, run: Run, notes: list[str]) -> list[CallResult]:
    s = run.scenario
    await _apply(f, run, tuple(t for t in s.toxics if t.at_s == 0 and not t.after_first_event))
    if s.kind == "down_up":
        return await _down_up(f, run, notes)
    if s.kind == "cancel":
        sink: list[CallResult] = []
        task = asyncio.create_task(_one_call(f, run, "cancel me", sink))
        await asyncio.sleep(s.cancel_at_s)
        task.cancel()
        for result in sink:
            result.cancelled_at_s = time.monotonic()
        await asyncio.gather(task, return_exceptions=True)  # the CancelledError stays in the task
        return sink
    later = asyncio.create_task(_later(f, run))
    try:
        if s.kind == "concurrent":
            slots = asyncio.Semaphore(s.in_flight)

            async def limited(i: int) -> CallResult:
                async with slots:
                    return await _one_call(f, run, f"chaos {i}")

            return list(await asyncio.gather(*(limited(i) for i in range(s.calls))))
        return [await _one_call(f, run, "chaos please", on_first_event=True)]
    finally:
        await later


async def _down_up(f: Fleet, run: Run, notes: list[str]) -> list[CallResult]:
    primary = f.proxies[run.shape]
    await f.call_toxi("disable", primary)
    down = await _one_call(f, run, "while the primary is down")
    await f.call_toxi("enable", primary)
    await asyncio.sleep(run.scenario.knobs.cooldown_ms / 1000 + 0.2)
    up = await _one_call(f, run, "after the cooldown")
    notes.append(f"down: answered by {down.provider and down.provider.value}; up: {up.provider and up.provider.value}")
    return [down, up]


# -- invariants -----------------------------------------------------------------------------------


def _expected_answer_ok(run: Run, c: CallResult) -> bool:
    """A call reported complete carries the whole answer and the usage the provider sent at its end."""
    if c.outcome != "ok":
        return True
    if c.completion_tokens != DEFAULT_OUTPUT_TOKENS:
        return False
    if run.scenario.tool:
        return len(c.tool_json) == 1 and json.loads(c.tool_json[0]) == json.loads(DEFAULT_TOOL_INPUT)
    return c.text == DEFAULT_TEXT


def _cut_observed(run: Run, calls: list[CallResult]) -> bool:
    c = calls[0]
    first = next((r for r in c.attempts if r.provider is run.shape), None)
    return (
        c.outcome != "ok"
        or c.provider is not run.shape
        or (first is not None and first.status != AttemptStatus.SUCCEEDED)
    )


def _expected(run: Run, calls: list[CallResult], notes: list[str]) -> bool:
    s = run.scenario
    ok = True
    if s.kind == "concurrent":
        done = sum(c.outcome == "ok" for c in calls) / len(calls)
        notes.append(f"completion {done:.0%} (needs >= {s.min_completion:.0%})")
        ok = done >= s.min_completion and all(c.outcome in {"ok", "error"} for c in calls)
    elif s.kind == "down_up":
        down, up = calls
        ok = down.outcome == "ok" and down.provider is not run.shape and up.outcome == "ok" and up.provider is run.shape
    else:
        ok = all(c.outcome in s.expect for c in calls)
    if s.primary_answers and calls[0].provider is not run.shape:
        notes.append("the primary should have answered through the fault")
        ok = False
    if s.must_cut and not _cut_observed(run, calls):
        notes.append("the fault did not hit the primary (no evidence of a cut)")
        ok = False
    return ok


def _records_vs_journals(f: Fleet, run: Run, calls: list[CallResult], journals: dict[ProviderKind, int]) -> bool:
    """Every request a mock saw is one of the router's attempt records (a cancelled call may have one
    more, in flight); where the request path is clean (no upstream toxic, never disabled), every
    recorded attempt reached the mock."""
    s = run.scenario
    upstream_faults = {
        k for k in KINDS if (s.on == "all" or k is run.shape) and any(t.stream == "upstream" for t in s.toxics)
    }
    if s.kind == "down_up":
        upstream_faults.add(run.shape)
    in_flight = sum(not c.attempts_known for c in calls)
    for kind in KINDS:
        recorded = sum(1 for c in calls for r in c.attempts if r.provider is kind)
        seen = journals[kind]
        if seen > recorded + in_flight:
            return False
        if kind not in upstream_faults and in_flight == 0 and seen != recorded:
            return False
    return True


async def run_scenario(toxi: Toxi, run: Run) -> RunResult:
    """Run one scenario on a fresh fleet (mocks, proxies, router) and evaluate every invariant."""
    s = run.scenario
    notes: list[str] = []
    async with fleet(toxi, s.knobs, s.step, run.shape) as f:
        calls = await _perform(f, run, notes)
        # the moment the caller was done with every call: its return, or its cancellation
        returned_s = max(min(c.ended_s, c.cancelled_at_s or c.ended_s) for c in calls)
        await asyncio.sleep(SETTLE_S + _upstream_delay_s(s))
        journals = {k: len(f.servers[k].journal) for k in KINDS}
        late = sum(1 for k in KINDS for e in f.servers[k].journal if e.arrived_monotonic_s > returned_s + SLACK_S)
        ledger = f.router.ledger
        open_reservations = len(ledger.open_reservations) if ledger is not None else 0
        # clean call afterwards: toxics off, every proxy up, the same router and pool
        for proxy in f.proxies.values():
            await f.call_toxi("clear", proxy)
        clean = await _one_call(f, _clean_run(run), "clean call")
        invariants = {
            "ends_by_deadline": all(
                c.elapsed_s <= min(c.deadline_s, BUDGET_S) + SLACK_S for c in calls if c.outcome != "hang"
            )
            and all(c.outcome != "hang" for c in calls),
            "router_outcome": all(c.outcome in {"ok", "error", "cancelled"} for c in calls),
            "records_match_journals": _records_vs_journals(f, run, calls, journals),
            "reservations_released": open_reservations == 0,
            "no_false_completion": all(_expected_answer_ok(run, c) for c in calls),
            "no_partial_tool_call": all(partial_tool_calls(c.events) == 0 for c in calls),
            "pool_usable_after": clean.outcome == "ok" and _expected_answer_ok(_clean_run(run), clean),
            "no_request_after_return": late == 0,
            "expected": _expected(run, calls, notes),
        }
    for c in calls:
        if c.outcome in {"exception", "hang"}:
            notes.append(f"{c.outcome}: {c.detail}")
    if late:
        notes.append(f"{late} request(s) reached a provider after the call returned or was cancelled")
    if open_reservations:
        notes.append(f"{open_reservations} budget reservation(s) left open")
    if clean.outcome != "ok":
        notes.append(f"clean call afterwards: {clean.outcome} {clean.detail}")
    return RunResult(run=run, calls=calls, invariants=invariants, notes=notes)


def _upstream_delay_s(s: Scenario) -> float:
    return sum(
        (t.attributes.get("latency", 0) + t.attributes.get("jitter", 0)) / 1000
        for t in s.toxics
        if t.stream == "upstream" and t.type == "latency"
    )


_CLEAN = Scenario(name="clean call", toxics=(), shapes=KINDS, streams=(False, True), deadline_s=5.0)


def _clean_run(run: Run) -> Run:
    return Run(scenario=_CLEAN, shape=run.shape, stream=run.stream)
