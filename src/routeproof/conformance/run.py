"""Run the cases against one implementation, concurrently, and write its report."""

from __future__ import annotations

import asyncio
import re
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from routeproof.conformance.answers import expand_step
from routeproof.conformance.cases import expand_calls, needs
from routeproof.conformance.judge import BUDGET_MS, CallRun, Failure, judge_case
from routeproof.conformance.launch import LaunchedGateway
from routeproof.conformance.mocks import CaseMocks
from routeproof.conformance.subjects import GatewaySubject, HarnessError, HarnessSubject, Implementation

__all__ = [
    "TIMING_CHECKS",
    "CaseResult",
    "RunResult",
    "call_bound_s",
    "hard_bound_s",
    "impl_slug",
    "run_case",
    "run_suite",
    "timing_only",
]

GRACE_S = 1.0  # after the last call: time for a request sent after the return to show up (> a 500 ms backoff)
HARD_SLACK_S = 10.0  # a call that has not answered by its deadline (or the 30 s budget) + this is hung
CONFIGURE_TIMEOUT_S = 30.0
USER_TEXT = "What is 2 + 2?"
CREDENTIALS = {
    "api_key": "conformance-test-key",
    "aws_access_key_id": "AKIDCONFORMANCE",
    "aws_secret_access_key": "conformance-test-secret",
    "region": "us-east-1",
}
TIMING_CHECKS = frozenset(
    {
        "elapsed",
        "gap",
        "no_trailing_sleep",
        "within_deadline",
        "within_30s_budget",
        "connection_closed",
        "no_request_after_return",
    }
)
"""The checks measured in milliseconds against the runner's or the mocks' clocks. Cases run several at
once on a shared machine, so a stall of the machine (another case's gateway starting, a busy CI host)
can fail one of these without any fault of the implementation: such a case is run again, alone."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CaseResult:
    """The verdict of one case."""

    id: str
    rule: str
    acs: tuple[str, ...]
    title: str
    verdict: str  # pass | fail | n/a
    level: str = "must"  # must (the seeds' contract) | should (the contract allows several) | extension
    failures: tuple[Failure, ...] = ()
    reason: str = ""  # why n/a
    duration_s: float = 0.0
    outcomes: tuple[Mapping[str, Any], ...] = ()
    failed_under_load: tuple[Failure, ...] = ()  # a timing failure with other cases running, cleared alone

    def as_json(self) -> dict[str, object]:
        """One object of the JSON report."""
        return {
            "id": self.id,
            "rule": self.rule,
            "acs": list(self.acs),
            "title": self.title,
            "level": self.level,
            "verdict": self.verdict,
            "reason": self.reason,
            "duration_s": round(self.duration_s, 3),
            "failures": [f.as_json() for f in self.failures],
            **({"failed_under_load": [f.as_json() for f in self.failed_under_load]} if self.failed_under_load else {}),
            "outcomes": [
                {k: o.get(k) for k in ("class", "classes", "http_status", "text", "error", "elapsed_ms") if k in o}
                for o in self.outcomes
            ],
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class RunResult:
    """Every case's verdict for one implementation."""

    impl: str
    version: str
    capabilities: tuple[str, ...]
    results: tuple[CaseResult, ...]
    wall_s: float
    extra: Mapping[str, Any] = field(default_factory=dict)


def timing_only(result: CaseResult) -> bool:
    """A failed case whose every failure is a timing check (:data:`TIMING_CHECKS`)."""
    return result.verdict == "fail" and bool(result.failures) and all(f.check in TIMING_CHECKS for f in result.failures)


def impl_slug(name: str) -> str:
    """A file-name-safe implementation name."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-") or "impl"


def call_bound_s(call: Mapping[str, Any], slack_s: float = HARD_SLACK_S) -> float:
    """The longest one call may take before the implementation is declared hung."""
    deadline = call.get("deadline_ms")
    return (BUDGET_MS if deadline is None else min(float(deadline), BUDGET_MS)) / 1000 + slack_s


def hard_bound_s(case: Mapping[str, Any], slack_s: float = HARD_SLACK_S) -> float:
    """The longest a whole case may take (its calls' bounds, pauses, set-up and the grace)."""
    calls: Sequence[Mapping[str, Any]] = expand_calls(case)
    return float(
        sum(call_bound_s(c, slack_s) + c.get("pause_before_ms", 0) / 1000 for c in calls)
        + CONFIGURE_TIMEOUT_S
        + GRACE_S
    )


def model_names(case: Mapping[str, Any]) -> dict[str, str]:
    """A model name per provider, unique to this run of the case: a request carrying another
    name is a stray from another case (a late retry reaching a reused port) and is not judged here."""
    tag = uuid.uuid4().hex[:8]
    return {str(p["name"]): str(p.get("model") or f"model-{p['name']}-{tag}") for p in case["providers"]}


def _expanded_steps(
    case: Mapping[str, Any], models: Mapping[str, str]
) -> tuple[dict[str, list[dict[str, Any]]], dict[str, dict[str, Any] | None]]:
    stream = bool(case.get("stream", False))
    steps: dict[str, list[dict[str, Any]]] = {}
    defaults: dict[str, dict[str, Any] | None] = {}
    for p in case["providers"]:
        name, protocol = str(p["name"]), str(p["protocol"])
        model = models[name]
        steps[name] = [expand_step(s, protocol=protocol, stream=stream, model=model) for s in p.get("script", ())]
        default = p.get("default")
        defaults[name] = (
            None if default is None else expand_step(default, protocol=protocol, stream=stream, model=model)
        )
    return steps, defaults


def _warm_up_defaults(case: Mapping[str, Any], models: Mapping[str, str]) -> dict[str, dict[str, Any] | None]:
    """What every mock answers before the case's script is loaded: a plain answer (the warm-up)."""
    stream = bool(case.get("stream", False))
    return {
        str(p["name"]): expand_step(
            {"answer": {"text": "warm-up"}}, protocol=str(p["protocol"]), stream=stream, model=models[str(p["name"])]
        )
        for p in case["providers"]
    }


def _configure_message(case: Mapping[str, Any], mocks: CaseMocks, models: Mapping[str, str]) -> dict[str, Any]:
    providers = []
    for p in case["providers"]:
        entry: dict[str, Any] = {
            "name": p["name"],
            "protocol": p["protocol"],
            "hosting": p.get("hosting", "public"),
            "base_url": mocks.base_url(str(p["name"])),
            "model": models[str(p["name"])],
            "credentials": dict(CREDENTIALS),
        }
        for key in ("price", "capabilities", "priority", "weight", "rpm"):  # price; the rest: case format 3
            if key in p:
                entry[key] = p[key]
        providers.append(entry)
    message = {"op": "configure", "case": case["id"], "providers": providers, "budget_usd": case.get("budget_usd")}
    if "traffic" in case:
        message["traffic"] = case["traffic"]
    return message


def _call_message(case: Mapping[str, Any], index: int, call: Mapping[str, Any]) -> dict[str, Any]:
    request: dict[str, Any] = {
        "messages": [{"role": "user", "content": call.get("user_text", USER_TEXT)}],
        "max_tokens": int(call.get("max_tokens", 64)),
    }
    if case.get("tools"):
        request["tools"] = [
            {
                "name": "lookup",
                "description": "Look something up.",
                "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
            }
        ]
    message: dict[str, Any] = {
        "op": "call",
        "case": case["id"],
        "index": index,
        "request": request,
        "stream": bool(case.get("stream", False)),
        "deadline_ms": call.get("deadline_ms"),
        "tier": call.get("tier", "standard"),
        "traceparent": call.get("traceparent"),
        "cancel_after_ms": call.get("cancel_after_ms"),
    }
    if "api" in call:  # case format 3: the caller's own body, in its API's shape (needs "request")
        message["api"] = call["api"]
        message["body"] = call.get("body", {})
    return message


def _missing(case: Mapping[str, Any], capabilities: Sequence[str]) -> list[str]:
    return [c for c in needs(case) if c not in capabilities]


async def run_case(impl: Implementation, case: Mapping[str, Any], *, slack_s: float = HARD_SLACK_S) -> CaseResult:
    """Run one case on one (started) implementation."""
    started = time.monotonic()
    base = {
        "id": case["id"],
        "rule": case["rule"],
        "acs": tuple(case.get("acs", ())),
        "title": case.get("title", ""),
        "level": case.get("level", "must"),
    }
    missing = _missing(case, impl.info.get("capabilities", ()))
    if missing:
        return CaseResult(**base, verdict="n/a", reason=f"capabilities not declared: {', '.join(missing)}")
    precheck = getattr(impl, "unsupported_reason", None)
    reason = precheck(case) if precheck is not None else None
    if reason:  # e.g. a static gateway whose chain is not the case's: n/a before any mock starts
        return CaseResult(**base, verdict="n/a", reason=str(reason))
    models = model_names(case)
    runs: list[CallRun] = []
    ports = getattr(impl, "ports", None)
    # A harness passes the run's model names on; a gateway sends the model it is configured with,
    # so its requests are attributed by the mocks they reach (each case has its own fleet).
    by_model = getattr(impl, "attribution", "model") == "model"
    end_case = getattr(impl, "end_case", None)
    warm_up = getattr(impl, "warm_up_call", None)
    try:
        async with CaseMocks(case["providers"], {}, _warm_up_defaults(case, models), ports=ports) as mocks:
            reply = await impl.configure(_configure_message(case, mocks, models), CONFIGURE_TIMEOUT_S)
            if reply.get("op") == "unsupported":
                return CaseResult(**base, verdict="n/a", reason=str(reply.get("reason", "unsupported")))
            if warm_up is not None:  # one plain answer through a freshly started gateway; not judged
                await warm_up(_call_message(case, -1, {}), call_bound_s({}, slack_s))
            since = time.monotonic()
            # Expanded now, not before configure: a Retry-After HTTP-date counts from the calls.
            steps, defaults = _expanded_steps(case, models)
            mocks.load(steps, defaults)
            for index, call in enumerate(expand_calls(case)):
                pause = call.get("pause_before_ms", 0)
                if pause:
                    await asyncio.sleep(pause / 1000)
                sent = time.monotonic()
                outcome = await impl.call(_call_message(case, index, call), call_bound_s(call, slack_s))
                returned = time.monotonic()
                if outcome.get("op") == "unsupported":
                    return CaseResult(**base, verdict="n/a", reason=str(outcome.get("reason", "unsupported")))
                runs.append(CallRun(index=index, spec=call, sent_s=sent, returned_s=returned, outcome=outcome))
            await asyncio.sleep(GRACE_S)
            observed = [r for r in mocks.observed(since) if not by_model or r.entry.model == models[r.provider]]
    finally:
        if end_case is not None:
            await end_case()
    failures = judge_case(case, runs, observed, steps, defaults)
    return CaseResult(
        **base,
        verdict="fail" if failures else "pass",
        failures=tuple(failures),
        duration_s=time.monotonic() - started,
        outcomes=tuple(r.outcome for r in runs),
    )


def _quiet_cancelled_connections(loop: asyncio.AbstractEventLoop) -> None:
    """Python 3.11's StreamReaderProtocol logs a CancelledError when a server stops with a client's
    keep-alive connection still open (fixed in 3.12); that is the mocks ending a case, not an error."""

    def handler(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        if isinstance(context.get("exception"), asyncio.CancelledError):
            return
        loop.default_exception_handler(context)

    loop.set_exception_handler(handler)


def _hung_result(case: Mapping[str, Any], exc: HarnessError, started: float) -> CaseResult:
    return CaseResult(
        id=case["id"],
        rule=case["rule"],
        acs=tuple(case.get("acs", ())),
        title=case.get("title", ""),
        level=case.get("level", "must"),
        verdict="fail",
        failures=(Failure(check="harness", expected="an outcome within the hard bound", observed=str(exc)),),
        duration_s=time.monotonic() - started,
    )


async def run_suite(
    cases: Sequence[Mapping[str, Any]],
    *,
    harness: str | None = None,
    gateway: GatewaySubject | None = None,
    jobs: int = 4,
    stderr_path: Path | None = None,
    progress: Callable[[CaseResult], None] | None = None,
    slack_s: float = HARD_SLACK_S,
    rerun_alone: bool = False,
) -> RunResult:
    """Run ``cases`` against a harness command (``jobs`` processes), a static gateway (one case at a
    time) or a launched gateway (``jobs`` cases at once, each with its own gateway process).

    ``rerun_alone``: a case that failed only timing checks (:func:`timing_only`) while others ran is
    run once more when the rest are done, alone. Its verdict is the second run's (an implementation
    that is really late fails again); the first run's failures stay in ``failed_under_load``."""
    t0 = time.monotonic()
    _quiet_cancelled_connections(asyncio.get_running_loop())
    order = sorted(cases, key=lambda c: (not c.get("slow", False), c["id"]))
    queue: asyncio.Queue[Mapping[str, Any]] = asyncio.Queue()
    for case in order:
        queue.put_nowait(case)
    results: list[CaseResult] = []
    info: dict[str, Any] = {}

    async def new_impl() -> Implementation:
        if gateway is not None:
            return gateway.fork() if gateway.concurrent else gateway
        assert harness is not None
        driver = HarnessSubject(harness, stderr_path=stderr_path)
        try:
            info.update(await driver.start())
        except BaseException:
            driver.kill()
            await driver.aclose()
            raise
        return driver

    async def worker(results: list[CaseResult]) -> None:
        impl: Implementation | None = None
        try:
            launch = getattr(getattr(gateway, "profile", None), "launch", None)
            start_s = max(0.0, launch.start_timeout_s - CONFIGURE_TIMEOUT_S) if launch is not None else 0.0
            while not queue.empty():
                case = queue.get_nowait()
                started = time.monotonic()
                bound_s = hard_bound_s(case, slack_s) + start_s  # + a slow gateway's stated start-up
                if impl is None:
                    impl = await new_impl()
                    info.update(impl.info)
                try:
                    result = await asyncio.wait_for(run_case(impl, case, slack_s=slack_s), bound_s)
                except (HarnessError, TimeoutError) as exc:
                    error = exc if isinstance(exc, HarnessError) else HarnessError(f"case exceeded {bound_s:.0f} s")
                    result = _hung_result(case, error, started)
                    if isinstance(impl, HarnessSubject):
                        impl.kill()
                        await impl.aclose()
                        impl = None
                    elif isinstance(impl, LaunchedGateway):
                        await impl.end_case()
                results.append(result)
                if progress is not None:
                    progress(result)
        finally:
            if impl is not None and impl is not gateway:
                await impl.aclose()

    workers = 1 if gateway is not None and not gateway.concurrent else max(1, min(jobs, len(order)))
    await asyncio.gather(*(worker(results) for _ in range(workers)))
    if rerun_alone:
        first = {r.id: r for r in results if timing_only(r)}
        for case in order:
            if case["id"] in first:
                queue.put_nowait(case)
        again: list[CaseResult] = []
        await worker(again)  # one worker: each case with nothing else running
        results += [replace(r, failed_under_load=first[r.id].failures) for r in again]  # the later run wins
    if gateway is not None:
        await gateway.aclose()
    by_id = {r.id: r for r in results}
    ordered = tuple(by_id[c["id"]] for c in cases if c["id"] in by_id)
    return RunResult(
        impl=str(info.get("name", "unknown")),
        version=str(info.get("version", "unknown")),
        capabilities=tuple(info.get("capabilities", ())),
        results=ordered,
        wall_s=time.monotonic() - t0,
        extra={"breaks": info.get("breaks", {})},
    )
