"""The judge, on synthetic observations: each check fails exactly when its rule is broken."""

from __future__ import annotations

from typing import Any

from routeproof.conformance.judge import CallRun, judge_case
from routeproof.conformance.mocks import ObservedRequest
from routeproof.mock.journal import JournalEntry


def req(provider: str, index: int, at_s: float, traceparent: str | None = None) -> ObservedRequest:
    """An observed request arriving at ``at_s``."""
    entry = JournalEntry(
        index=index,
        connection_id=1,
        arrived_monotonic_s=at_s,
        arrived_wall_s=at_s,
        method="POST",
        path="/v1/chat/completions",
        headers=(),
        traceparent=traceparent,
        tracestate=None,
        auth_present=True,
        body_json=None,
        body_size=0,
        model=None,
        stream=False,
    )
    return ObservedRequest(
        provider=provider,
        index=index,
        arrived_s=at_s,
        closed_s=at_s + 0.01,
        traceparent=traceparent,
        stream=False,
        entry=entry,
    )


def checks(
    expect: dict[str, Any], outcome: dict[str, Any], observed: list[ObservedRequest], returned_s: float, **spec: Any
) -> set[str]:
    """The names of the failed checks of a one-call case."""
    call: dict[str, Any] = {"expect": expect, **spec}
    case: dict[str, Any] = {"id": "t", "rule": "deadline", "calls": [call]}
    run = CallRun(index=0, spec=call, sent_s=0.0, returned_s=returned_s, outcome=outcome)
    return {f.check for f in judge_case(case, [run], observed, {}, {})}


def test_a_matching_call_passes() -> None:
    """Outcome, counts and a gap inside the band: no failure."""
    expect = {
        "outcome": "success",
        "requests": {"a": 2},
        "gaps": [{"from": "a#0", "to": "a#1", "min_ms": 160, "max_ms": 240}],
    }
    assert checks(expect, {"class": "success", "elapsed_ms": 210}, [req("a", 0, 0.0), req("a", 1, 0.2)], 0.21) == set()


def test_a_request_after_the_return_fails() -> None:
    """A request arriving after the call returned is caught by the universal check."""
    observed = [req("a", 0, 0.0), req("a", 1, 0.5)]
    assert "no_request_after_return" in checks({}, {"class": "cancelled", "elapsed_ms": 100}, observed, 0.1)


def test_gap_outside_the_band_fails_with_the_measured_value() -> None:
    """A 500 ms retry gap where the band says [160, 240] fails the gap check."""
    expect = {"gaps": [{"from": "a#0", "to": "a#1", "min_ms": 160, "max_ms": 240}]}
    assert checks(expect, {"class": "success", "elapsed_ms": 510}, [req("a", 0, 0.0), req("a", 1, 0.5)], 0.51) == {
        "gap"
    }


def test_deadline_overrun_fails_and_slop_is_allowed() -> None:
    """Elapsed 1040 ms on a 1000 ms deadline passes (50 ms slop); 1100 ms fails."""
    observed = [req("a", 0, 0.0)]
    assert checks({}, {"class": "deadline", "elapsed_ms": 1040}, observed, 1.04, deadline_ms=1000) == set()
    assert checks({}, {"class": "deadline", "elapsed_ms": 1100}, observed, 1.1, deadline_ms=1000) == {"within_deadline"}


def test_trailing_sleep_after_the_last_answer_fails() -> None:
    """A failed call returning 800 ms after its last (instant) answer slept after it."""
    observed = [req("a", 0, 0.0)]
    assert checks({}, {"class": "all_failed", "elapsed_ms": 800}, observed, 0.8) == {"no_trailing_sleep"}


def test_seventeen_attempts_fail_the_cap() -> None:
    """More than 16 requests in one call fails the attempts cap."""
    observed = [req("a", n, n * 0.001) for n in range(17)]
    assert "attempts_cap" in checks({}, {"class": "all_failed", "elapsed_ms": 17}, observed, 0.017)


def test_forwarded_span_id_fails_and_a_child_passes() -> None:
    """The caller's own span id on the wire fails; a new span id of the same trace passes."""
    caller = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    child = "00-4bf92f3577b34da6a3ce929d0e0e4736-1111111111111111-01"
    outcome = {"class": "success", "elapsed_ms": 5}
    assert checks({"traceparent": "child"}, outcome, [req("a", 0, 0.0, caller)], 0.005, traceparent=caller) == {
        "traceparent"
    }
    assert checks({"traceparent": "child"}, outcome, [req("a", 0, 0.0, child)], 0.005, traceparent=caller) == set()


def test_jitter_spread_needs_spread_gaps() -> None:
    """Sixteen identical retry gaps fail jitter_spread; gaps spread over 60 ms pass."""

    def runs(gaps_s: list[float]) -> tuple[list[CallRun], list[ObservedRequest]]:
        out, seen = [], []
        for n, gap in enumerate(gaps_s):
            t0 = n * 10.0
            first, second = req("a", 2 * n, t0), req("a", 2 * n + 1, t0 + gap)
            seen += [first, second]
            out.append(
                CallRun(
                    index=n, spec={"expect": {}}, sent_s=t0, returned_s=t0 + gap + 0.01, outcome={"class": "success"}
                )
            )
        return out, seen

    case = {"id": "j", "rule": "retry_schedule", "jitter_spread": {"provider": "a", "min_range_ms": 40}, "calls": []}
    fixed_runs, fixed_seen = runs([0.205] * 16)
    assert {f.check for f in judge_case(case, fixed_runs, fixed_seen, {}, {})} == {"jitter_spread"}
    spread_runs, spread_seen = runs([0.17 + 0.004 * n for n in range(16)])
    assert judge_case(case, spread_runs, spread_seen, {}, {}) == []


def test_jitter_spread_below_ms_tells_noise_from_jitter() -> None:
    """A fixed 200 ms sleep on a loaded machine: gaps spread over 45 ms by late wake-ups, none short.
    The range alone passes it; ``below_ms`` fails it, and a real jitter band still passes."""

    def runs(gaps_s: list[float]) -> tuple[list[CallRun], list[ObservedRequest]]:
        out, seen = [], []
        for n, gap in enumerate(gaps_s):
            t0 = n * 10.0
            seen += [req("a", 2 * n, t0), req("a", 2 * n + 1, t0 + gap)]
            done = {"class": "success"}
            out.append(CallRun(index=n, spec={"expect": {}}, sent_s=t0, returned_s=t0 + gap, outcome=done))
        return out, seen

    spread = {"provider": "a", "min_range_ms": 40, "below_ms": 196}
    case = {"id": "j", "rule": "retry_schedule", "jitter_spread": spread, "calls": []}
    noisy_fixed = [0.201 + 0.003 * n for n in range(16)]  # 201..246 ms: 45 ms of noise over a fixed sleep
    range_only = {**case, "jitter_spread": {"provider": "a", "min_range_ms": 40}}
    assert judge_case(range_only, *runs(noisy_fixed), {}, {}) == []
    assert {f.check for f in judge_case(case, *runs(noisy_fixed), {}, {})} == {"jitter_spread"}
    jittered = [0.162 + 0.005 * n for n in range(16)]
    assert judge_case(case, *runs(jittered), {}, {}) == []
