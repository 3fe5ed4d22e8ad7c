"""The verdict of one case, judged from the outside only: the mocks' journals (what arrived, when,
with which headers, when its connection ended), the call's outcome class and text, and wall time.

Timing tolerances, stated once (every timing check uses these and nothing else):

* ``EARLY_MS`` = 2: an asyncio timer may fire up to the clock resolution early, so a gap between two
  arrivals may be that much shorter than the sleep between them.
* ``LATE_MS`` = 60 ms + 0.1 % of the value: a gap measured between two arrivals at the mock also holds
  the mock's answer, the client's parsing and one loopback round trip, on a shared 2-core machine
  running several cases at once (measured: up to 41 ms late with 12 cases in flight); an event-loop
  timer may also fire ~0.1 % late. 60 ms stays well under the smallest difference a check must
  separate (a 160 ms retry sleep vs "at once").
* ``DEADLINE_SLOP_MS`` = 50 ms + 0.1 % of the bound: the contract's own slop (``DeadlineExceeded``
  within 50 ms of the deadline; a call ends within the 30 s budget + 50 ms), plus the ~0.1 % an
  event-loop timer may fire late (30 ms on the 30 s budget). Checked on the harness's ``elapsed_ms``
  (measured around the call, outside the implementation); the runner's wall clock, which also holds
  the JSON-lines round trip, gets ``IPC_MS`` = 150 more.
* ``AFTER_RETURN_MS`` = 10: a request that arrives later than this after the outcome came back was
  sent after the call returned.
* ``TRAILING_MS`` = 150: after its last answer, a failed call returns within this (no trailing sleep:
  the shortest retry sleep is 160 ms).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from routeproof.conformance.mocks import ObservedRequest

__all__ = [
    "AFTER_RETURN_MS",
    "ATTEMPTS_CAP",
    "BUDGET_MS",
    "DEADLINE_SLOP_MS",
    "EARLY_MS",
    "IPC_MS",
    "TRAILING_MS",
    "CallRun",
    "Failure",
    "judge_case",
    "late_ms",
    "slop_ms",
]

EARLY_MS = 2.0
DEADLINE_SLOP_MS = 50.0
IPC_MS = 150.0
AFTER_RETURN_MS = 10.0
TRAILING_MS = 150.0
BUDGET_MS = 30_000.0
ATTEMPTS_CAP = 16
_TRACEPARENT = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$")


def slop_ms(bound_ms: float) -> float:
    """How far past a deadline or the budget a call may end."""
    return DEADLINE_SLOP_MS + bound_ms / 1000.0


def late_ms(value_ms: float) -> float:
    """How much later than ``value_ms`` a measured interval may be."""
    return 60.0 + value_ms / 1000.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Failure:
    """One failed check: its name, what the case expected, what was observed."""

    check: str
    expected: str
    observed: str
    call: int | None = None

    def as_json(self) -> dict[str, object]:
        """The evidence object of the JSON report."""
        return {"check": self.check, "call": self.call, "expected": self.expected, "observed": self.observed}

    def line(self, sep: str = ";") -> str:
        """``check: expected E; observed O``: how the console, the reports and JUnit print it."""
        return f"{self.check}: expected {self.expected}{sep} observed {self.observed}"


@dataclass(frozen=True, slots=True, kw_only=True)
class CallRun:
    """One call as the runner saw it."""

    index: int
    spec: Mapping[str, Any]
    sent_s: float  # runner clock when the call line was written
    returned_s: float  # runner clock when the outcome line was read
    outcome: Mapping[str, Any]
    requests: list[ObservedRequest] = field(default_factory=list)


def _ms(seconds: float) -> float:
    return seconds * 1000.0


def judge_case(
    case: Mapping[str, Any],
    calls: Sequence[CallRun],
    observed: Sequence[ObservedRequest],
    steps: Mapping[str, Sequence[Mapping[str, Any]]],
    defaults: Mapping[str, Mapping[str, Any] | None],
) -> list[Failure]:
    """Every failed check of a case whose calls all returned an outcome."""
    failures: list[Failure] = []
    remaining = list(observed)
    for n, run in enumerate(calls):
        next_start = calls[n + 1].sent_s if n + 1 < len(calls) else float("inf")
        window_end = min(run.returned_s + AFTER_RETURN_MS / 1000, next_start)
        run.requests.extend(r for r in remaining if run.sent_s <= r.arrived_s < window_end)
        later = [r for r in remaining if r.arrived_s >= window_end]
        stray = [r for r in later if r.arrived_s < next_start]
        if stray:
            first = stray[0]
            failures.append(
                Failure(
                    check="no_request_after_return",
                    call=n,
                    expected="no provider request after the call returned",
                    observed=f"{len(stray)} request(s), first to {first.provider!r} "
                    f"{_ms(first.arrived_s - run.returned_s):.0f} ms after it returned",
                )
            )
        remaining = [r for r in later if r.arrived_s >= next_start]
        failures += _universal(run, steps, defaults)
        failures += _expected_call(run)
    failures += _case_level(case, calls)
    return failures


def _expected_call(run: CallRun) -> list[Failure]:
    """The call's expectations: ``expect``, or ``expect_any`` (the contract allows each of several
    behaviours: the call passes when one alternative holds in full; otherwise the closest
    alternative's failures are reported, each check named as one of the allowed behaviours)."""
    alternatives = run.spec.get("expect_any")
    if not alternatives:
        return _expected(run, run.spec.get("expect", {}))
    found = [_expected(run, alternative) for alternative in alternatives]
    best = min(range(len(found)), key=lambda i: len(found[i]))  # one that holds has no failures
    return [
        replace(f, check=f"{f.check} (allowed behaviour {best + 1} of {len(found)}, none held)") for f in found[best]
    ]


def _step_of(
    req: ObservedRequest,
    steps: Mapping[str, Sequence[Mapping[str, Any]]],
    defaults: Mapping[str, Mapping[str, Any] | None],
) -> Mapping[str, Any]:
    queue = steps.get(req.provider, ())
    if req.index < len(queue):
        return queue[req.index]
    return defaults.get(req.provider) or {}


def _service_s(step: Mapping[str, Any]) -> float | None:
    """How long the mock takes to answer with ``step``; None when it never finishes by itself."""
    if step.get("hang") or step.get("hang_after_headers") or step.get("cut_mode") == "stall":
        return None
    items = step.get("stream_events") or ()
    return float(step.get("delay_before_headers_s", 0.0)) + float(step.get("delay_between_chunks_s", 0.0)) * len(items)


def _universal(
    run: CallRun, steps: Mapping[str, Sequence[Mapping[str, Any]]], defaults: Mapping[str, Mapping[str, Any] | None]
) -> list[Failure]:
    out: list[Failure] = []
    n = run.index
    wall = _ms(run.returned_s - run.sent_s)
    elapsed = float(run.outcome.get("elapsed_ms", wall))
    deadline = run.spec.get("deadline_ms")
    if deadline is not None:
        slop = slop_ms(deadline)
        if elapsed > deadline + slop:
            out.append(
                Failure(
                    check="within_deadline",
                    call=n,
                    expected=f"elapsed <= deadline {deadline} ms + {slop:.0f} ms",
                    observed=f"{elapsed:.0f} ms",
                )
            )
        elif wall > deadline + slop + IPC_MS:
            out.append(
                Failure(
                    check="within_deadline",
                    call=n,
                    expected=f"wall <= deadline {deadline} ms + {slop + IPC_MS:.0f} ms",
                    observed=f"{wall:.0f} ms",
                )
            )
    budget_slop = slop_ms(BUDGET_MS)
    if elapsed > BUDGET_MS + budget_slop or wall > BUDGET_MS + budget_slop + IPC_MS:
        out.append(
            Failure(
                check="within_30s_budget",
                call=n,
                expected=f"the call ends within 30 s + {budget_slop:.0f} ms",
                observed=f"elapsed {elapsed:.0f} ms, wall {wall:.0f} ms",
            )
        )
    if len(run.requests) > ATTEMPTS_CAP:
        out.append(
            Failure(
                check="attempts_cap",
                call=n,
                expected=f"at most {ATTEMPTS_CAP} attempts",
                observed=f"{len(run.requests)} requests",
            )
        )
    cls = run.outcome.get("class")
    if run.requests and cls not in {"success", "cancelled", "deadline"} and run.spec.get("cancel_after_ms") is None:
        last = run.requests[-1]
        service = _service_s(_step_of(last, steps, defaults))
        if service is not None and not last.stream:
            tail = _ms(run.returned_s - last.arrived_s - service)
            if tail > TRAILING_MS:
                out.append(
                    Failure(
                        check="no_trailing_sleep",
                        call=n,
                        expected=f"returns within {TRAILING_MS:.0f} ms of the last answer",
                        observed=f"returned {tail:.0f} ms after the last answer ({last.provider!r})",
                    )
                )
    return out


def _count_ok(value: object, count: int) -> bool:
    if isinstance(value, int):
        return count == value
    if isinstance(value, list) and len(value) == 2:
        return int(value[0]) <= count <= int(value[1])
    raise ValueError(f"a request count is an integer or [min, max], got {value!r}")


def _expected(run: CallRun, expect: Mapping[str, Any]) -> list[Failure]:
    out: list[Failure] = []
    n = run.index
    outcome = run.outcome
    cls = str(outcome.get("class"))
    allowed = expect.get("outcome")
    if allowed is not None:
        allowed_set = {allowed} if isinstance(allowed, str) else set(allowed)
        # A gateway answers with an HTTP status; its profile states which classes that status
        # documents (routeproof serve's 502: every provider failed, an invalid answer, or a provider
        # rejecting the gateway's own key). The answer agrees with the case if any of them is expected.
        documented = {cls, *(str(c) for c in outcome.get("classes", ()))}
        if not documented & allowed_set:
            detail = str(outcome.get("error") or outcome.get("text") or "")[:200]
            if len(documented) > 1:
                cls = "/".join(sorted(documented))
            out.append(
                Failure(check="outcome", call=n, expected=" or ".join(sorted(allowed_set)), observed=f"{cls}: {detail}")
            )
    by_provider: dict[str, list[ObservedRequest]] = {}
    for r in run.requests:
        by_provider.setdefault(r.provider, []).append(r)
    for provider, want in expect.get("requests", {}).items():
        got = len(by_provider.get(provider, []))
        if not _count_ok(want, got):
            seq = ", ".join(r.provider for r in run.requests) or "none"
            out.append(
                Failure(
                    check="requests",
                    call=n,
                    expected=f"{provider!r}: {want} request(s)",
                    observed=f"{got} (sequence: {seq})",
                )
            )
    for gap in expect.get("gaps", ()):
        out += _gap(run, by_provider, gap)
    text = str(outcome.get("text") or "")
    if "text" in expect and text != expect["text"]:
        out.append(Failure(check="text", call=n, expected=repr(expect["text"]), observed=repr(text[:200])))
    for piece in expect.get("text_contains", ()):
        if piece not in text:
            out.append(Failure(check="text_contains", call=n, expected=repr(piece), observed=repr(text[:200])))
    for piece in expect.get("text_not_contains", ()):
        if piece in text:
            out.append(Failure(check="text_not_contains", call=n, expected=f"no {piece!r}", observed=repr(text[:200])))
    if "tool_calls" in expect:
        tools = outcome.get("tool_calls") or []
        if len(tools) != expect["tool_calls"]:
            out.append(
                Failure(
                    check="tool_calls",
                    call=n,
                    expected=f"{expect['tool_calls']} complete tool call(s)",
                    observed=f"{len(tools)}: {json.dumps(tools)[:200]}",
                )
            )
        for tool in tools:
            try:
                json.loads(str(tool.get("arguments", "")))
            except json.JSONDecodeError:
                out.append(
                    Failure(
                        check="tool_arguments_json",
                        call=n,
                        expected="complete JSON arguments",
                        observed=repr(tool)[:200],
                    )
                )
    elapsed = float(outcome.get("elapsed_ms", _ms(run.returned_s - run.sent_s)))
    bounds = expect.get("elapsed_ms")
    if bounds is not None:
        lo, hi = float(bounds[0]), float(bounds[1])
        if not lo - EARLY_MS <= elapsed <= hi + late_ms(hi):
            out.append(
                Failure(check="elapsed", call=n, expected=f"[{lo:.0f}, {hi:.0f}] ms", observed=f"{elapsed:.0f} ms")
            )
    if expect.get("traceparent") == "child":
        out += _traceparent(run)
    out += _format3(run, expect, by_provider)
    for provider, within in expect.get("connection_closed_within_ms", {}).items():
        for r in by_provider.get(provider, []):
            if r.closed_s is None or _ms(r.closed_s - run.returned_s) > within + late_ms(within):
                seen = (
                    "still open"
                    if r.closed_s is None
                    else f"closed {_ms(r.closed_s - run.returned_s):.0f} ms after the return"
                )
                out.append(
                    Failure(
                        check="connection_closed",
                        call=n,
                        expected=f"{provider!r} connection closed within {within} ms of the return",
                        observed=seen,
                    )
                )
    return out


def _gap(run: CallRun, by_provider: Mapping[str, list[ObservedRequest]], gap: Mapping[str, Any]) -> list[Failure]:
    def pick(ref: str) -> ObservedRequest | None:
        provider, _, index = ref.partition("#")
        reqs = by_provider.get(provider, [])
        i = int(index or 0)
        return reqs[i] if -len(reqs) <= i < len(reqs) else None

    a, b = pick(str(gap["from"])), pick(str(gap["to"]))
    name = f"gap {gap['from']} -> {gap['to']}"
    if a is None or b is None:
        return [Failure(check="gap", call=run.index, expected=name, observed="one of the two requests never arrived")]
    value = _ms(b.arrived_s - a.arrived_s)
    lo, hi = float(gap.get("min_ms", 0)), float(gap.get("max_ms", 1e12))
    if not lo - EARLY_MS <= value <= hi + late_ms(hi):
        return [
            Failure(
                check="gap", call=run.index, expected=f"{name} in [{lo:.0f}, {hi:.0f}] ms", observed=f"{value:.1f} ms"
            )
        ]
    return []


def _traceparent(run: CallRun) -> list[Failure]:
    caller = _TRACEPARENT.match(str(run.spec.get("traceparent", "")))
    if caller is None:
        raise ValueError(f"a traceparent check needs a caller traceparent, got {run.spec.get('traceparent')!r}")
    out: list[Failure] = []
    for r in run.requests:
        got = _TRACEPARENT.match(r.traceparent or "")
        if (
            got is None
            or got.group(1) != caller.group(1)
            or got.group(2) == caller.group(2)
            or got.group(2) == "0" * 16
        ):
            out.append(
                Failure(
                    check="traceparent",
                    call=run.index,
                    expected=f"trace id {caller.group(1)}, a child span id (not {caller.group(2)})",
                    observed=f"{r.provider}#{r.index}: {r.traceparent!r}",
                )
            )
    return out


def _dropped_names(outcome: Mapping[str, Any]) -> set[str]:
    """The request fields an outcome reports as not carried, with their top-level names: a reported
    ``tools[].function.strict`` or ``cache_control.ttl`` satisfies ``dropped: [tools]`` /
    ``[cache_control]``. (``not_dropped`` is judged on the exact names: ``response_format.name``
    left out does not mean ``response_format`` was.)"""
    names: set[str] = set()
    for raw in outcome.get("dropped") or ():
        name = str(raw).strip()
        names.add(name)
        names.add(re.split(r"[.\[]", name, maxsplit=1)[0])
    return names


def _format3(
    run: CallRun, expect: Mapping[str, Any], by_provider: Mapping[str, list[ObservedRequest]]
) -> list[Failure]:
    """Case format 3's call expectations: the error names something, the reported drops, what
    reached a provider."""
    out: list[Failure] = []
    n = run.index
    error = str(run.outcome.get("error") or "")
    for piece in expect.get("error_contains", ()):
        if str(piece).lower() not in error.lower():
            out.append(Failure(check="error_contains", call=n, expected=repr(piece), observed=repr(error[:200])))
    reported = _dropped_names(run.outcome)
    shown = ", ".join(sorted(str(d) for d in run.outcome.get("dropped") or ())) or "none"
    for name in expect.get("dropped", ()):
        if name not in reported:
            out.append(
                Failure(
                    check="dropped", call=n, expected=f"{name!r} reported as dropped", observed=f"reported: {shown}"
                )
            )
    exact = {str(d).strip() for d in run.outcome.get("dropped") or ()}
    for name in expect.get("not_dropped", ()):  # the field itself; a part of it left out is not the field
        if name in exact:
            out.append(
                Failure(
                    check="not_dropped",
                    call=n,
                    expected=f"{name!r} carried, not dropped",
                    observed=f"reported: {shown}",
                )
            )
    for provider, pieces in expect.get("body_contains", {}).items():
        for r in by_provider.get(provider, []):
            for piece in pieces:
                if piece not in r.entry.body_text:
                    out.append(
                        Failure(
                            check="body_contains",
                            call=n,
                            expected=f"{provider!r}'s request body contains {piece!r}",
                            observed=repr(r.entry.body_text[:200]),
                        )
                    )
    return out


def _totals(case: Mapping[str, Any], calls: Sequence[CallRun]) -> list[Failure]:
    """``totals``: over all the case's calls, the requests per provider and the calls per outcome
    class (load balancing shares, rate limits, retry budgets are properties of many calls)."""
    totals = case.get("totals")
    if not totals:
        return []
    out: list[Failure] = []
    counts: dict[str, int] = {}
    for run in calls:
        for r in run.requests:
            counts[r.provider] = counts.get(r.provider, 0) + 1
    for provider, want in totals.get("requests", {}).items():
        if not _count_ok(want, counts.get(provider, 0)):
            out.append(
                Failure(
                    check="total_requests",
                    expected=f"{provider!r}: {want} request(s) over {len(calls)} calls",
                    observed=f"{counts.get(provider, 0)} (all: {json.dumps(counts, sort_keys=True)})",
                )
            )
    classes: dict[str, int] = {}
    for run in calls:
        cls = str(run.outcome.get("class"))
        classes[cls] = classes.get(cls, 0) + 1
    for cls, want in totals.get("outcomes", {}).items():
        if not _count_ok(want, classes.get(cls, 0)):
            out.append(
                Failure(
                    check="total_outcomes",
                    expected=f"{cls}: {want} call(s) of {len(calls)}",
                    observed=f"{classes.get(cls, 0)} (all: {json.dumps(classes, sort_keys=True)})",
                )
            )
    return out


def _case_level(case: Mapping[str, Any], calls: Sequence[CallRun]) -> list[Failure]:
    return _totals(case, calls) + _jitter_spread(case, calls)


def _jitter_spread(case: Mapping[str, Any], calls: Sequence[CallRun]) -> list[Failure]:
    """``jitter_spread``: over the calls, the first retry gaps of ``provider`` spread over at least
    ``min_range_ms``. A ±20 % band on 200 ms is 80 ms wide: 16 uniform draws span less than 40 ms
    with probability 16 x 0.5^15 - 15 x 0.5^16 < 3e-4; a fixed sleep spans only the noise.

    Scheduler noise can spread a fixed sleep too (a loaded machine wakes late by tens of ms), so
    ``below_ms``, when given, also asks for one gap shorter than it. Noise only ever lengthens a
    gap (the gap is the sleep plus transit and processing), so a fixed 200 ms sleep never shows a
    gap under 196 ms on any machine, while 16 draws from [160, 240] ms all land at 196 or above
    (with up to 5 ms of overhead) with probability (49/80)^16 < 4e-4."""
    spread = case.get("jitter_spread")
    if spread is None:
        return []
    provider, min_range = str(spread["provider"]), float(spread["min_range_ms"])
    below = spread.get("below_ms")
    gaps = []
    for run in calls:
        reqs = [r for r in run.requests if r.provider == provider]
        if len(reqs) >= 2:
            gaps.append(_ms(reqs[1].arrived_s - reqs[0].arrived_s))
    shown = ", ".join(f"{g:.1f}" for g in sorted(gaps))
    too_narrow = len(gaps) < 2 or max(gaps) - min(gaps) < min_range
    never_short = below is not None and (not gaps or min(gaps) >= float(below))
    if too_narrow or never_short:
        observed = f"range {max(gaps) - min(gaps):.1f} ms over {len(gaps)} gaps: {shown}" if gaps else "no retry gap"
        wanted = f"retry gaps spread over >= {min_range:.0f} ms (jitter)"
        if below is not None:
            wanted += f", one shorter than {float(below):.0f} ms"
        return [Failure(check="jitter_spread", expected=wanted, observed=observed)]
    return []
