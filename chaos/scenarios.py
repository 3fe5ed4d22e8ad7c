"""The chaos scenarios, as data: one row per fault, expanded over provider shapes and entry points.

Toxics go on the proxy in front of the *primary* provider (``on="all"``: every proxy). Each row
runs once per (primary shape, streamed?) pair it lists; the other two shapes are the fallbacks.
``expect`` is the set of outcome classes the row allows ("ok", "error", "cancelled"); ``must_cut``
asks for evidence that the fault really hit the primary (its first attempt did not simply succeed).
Adding a scenario is adding one row.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from chaos.rig import KINDS, RouterKnobs
from chaos.toxi import ToxicSpec as T
from routeproof.core.types import ProviderKind
from routeproof.mock import Scripted

__all__ = ["SCENARIOS", "Run", "Scenario", "runs"]

A, OA, BR = ProviderKind.ANTHROPIC, ProviderKind.OPENAI, ProviderKind.BEDROCK
BOTH = (False, True)
SLOW_STREAM = Scripted(delay_between_chunks_s=0.12)
SLICED = RouterKnobs(attempt_timeout_ms=8_000, stream_idle_timeout_ms=2_000)  # 1-byte pieces take a while


@dataclass(frozen=True, slots=True, kw_only=True)
class Scenario:
    """One row of the table."""

    name: str
    toxics: tuple[T, ...]
    shapes: tuple[ProviderKind, ...]
    streams: tuple[bool, ...]
    on: str = "primary"  # "primary" or "all"
    tool: bool = False
    step: Scripted = field(default_factory=Scripted)  # what the primary's mock answers, every time
    deadline_s: float = 6.0  # 3 timed-out attempts + backoff + a fallback take ~3 s
    knobs: RouterKnobs = field(default_factory=RouterKnobs)
    expect: frozenset[str] = frozenset({"ok"})
    must_cut: bool = False
    kind: str = "single"  # single | down_up | concurrent | cancel
    calls: int = 1
    in_flight: int = 1
    cancel_at_s: float = 0.0
    min_completion: float = 1.0  # concurrent rows: the share of calls that must complete
    primary_answers: bool = False  # the answer must come from the primary (the fault is survivable)
    xfail: str = ""  # a known router bug this row exposes (named in the report, never hidden)


ANY = frozenset({"ok", "error"})
ERROR = frozenset({"error"})

SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        name="latency past the attempt timeout",
        toxics=(T(type="latency", attributes={"latency": 1500}),),
        shapes=KINDS,
        streams=BOTH,
        must_cut=True,
    ),
    Scenario(
        name="latency with jitter around the attempt timeout",
        toxics=(T(type="latency", attributes={"latency": 600, "jitter": 250}),),
        shapes=(A, BR),
        streams=BOTH,
    ),
    Scenario(
        name="timeout (black hole) before the headers",
        toxics=(T(type="timeout", attributes={"timeout": 0}),),
        shapes=(OA, BR),
        streams=BOTH,
        must_cut=True,
    ),
    Scenario(
        name="timeout (black hole) after the headers",
        toxics=(
            T(type="slicer", attributes={"average_size": 16, "size_variation": 0, "delay": 40_000}),
            T(type="timeout", attributes={"timeout": 0}, at_s=0.45),  # ~180 bytes through: past the head
        ),
        shapes=(A, OA),
        streams=BOTH,
        expect=ANY,
        must_cut=True,
    ),
    Scenario(
        name="reset_peer mid-request",
        toxics=(T(type="reset_peer", stream="upstream", attributes={"timeout": 0}),),
        shapes=KINDS,
        streams=(False,),
        must_cut=True,
    ),
    Scenario(
        name="reset_peer before the first event",
        toxics=(T(type="reset_peer", attributes={"timeout": 0}),),
        shapes=(OA,),
        streams=(True,),
        must_cut=True,
    ),
    Scenario(
        name="reset_peer mid-stream",
        toxics=(
            T(type="reset_peer", stream="upstream", toxicity=0.0, name="arm_rst"),  # present at accept: RST
            T(type="reset_peer", attributes={"timeout": 0}, after_first_event=True),
        ),
        step=SLOW_STREAM,
        shapes=KINDS,
        streams=(True,),
        expect=ERROR,
        must_cut=True,
    ),
    Scenario(
        name="slicer: 1-byte pieces, answer byte-identical",
        toxics=(T(type="slicer", attributes={"average_size": 1, "size_variation": 0, "delay": 100}),),
        shapes=KINDS,
        streams=BOTH,
        knobs=SLICED,
        deadline_s=10.0,
        primary_answers=True,
    ),
    Scenario(
        name="slicer: 1-byte pieces of a tool call",
        toxics=(T(type="slicer", attributes={"average_size": 1, "size_variation": 0, "delay": 100}),),
        shapes=(A, OA),
        streams=(True,),
        tool=True,
        knobs=SLICED,
        deadline_s=10.0,
        primary_answers=True,
    ),
    Scenario(
        name="limit_data: cut mid-body",
        toxics=(T(type="limit_data", attributes={"bytes": 200}),),
        shapes=KINDS,
        streams=(False,),
        must_cut=True,
    ),
    Scenario(
        name="limit_data: cut mid-event",
        toxics=(T(type="limit_data", attributes={"bytes": 700}),),
        shapes=KINDS,
        streams=(True,),
        expect=ANY,
        must_cut=True,
    ),
    Scenario(
        name="limit_data: cut mid-tool-call",
        toxics=(T(type="limit_data", attributes={"bytes": 820}),),
        shapes=KINDS,
        streams=(True,),
        tool=True,
        expect=ANY,
        must_cut=True,
    ),
    Scenario(
        name="bandwidth so low the call overruns the deadline",
        toxics=(T(type="bandwidth", attributes={"rate": 1}),),
        on="all",
        shapes=(A, OA),
        streams=BOTH,
        deadline_s=0.25,  # 100 bytes per 100 ms: even the smallest answer (~340 bytes) needs > 0.3 s
        knobs=RouterKnobs(attempt_timeout_ms=5_000),
        expect=ERROR,
        must_cut=True,
    ),
    Scenario(
        name="slow_close: the answer is complete before the close",
        toxics=(T(type="slow_close", attributes={"delay": 3000}),),
        shapes=(A, BR),
        streams=BOTH,
        primary_answers=True,
    ),
    Scenario(
        name="proxy disabled, then re-enabled: failover, recovery after the cooldown",
        toxics=(),
        kind="down_up",
        shapes=(A,),
        streams=BOTH,
    ),
    Scenario(
        name="many concurrent calls through latency and reset_peer",
        toxics=(
            T(type="latency", attributes={"latency": 100, "jitter": 80}),
            T(type="reset_peer", stream="upstream", attributes={"timeout": 0}, toxicity=0.3),
        ),
        on="all",
        kind="concurrent",
        calls=30,
        in_flight=10,
        shapes=(OA,),
        streams=BOTH,
        min_completion=0.9,
    ),
    Scenario(
        name="FALSIFY-MPA-007 as toxics on 50 % of connections",
        toxics=(
            T(type="reset_peer", attributes={"timeout": 0}, toxicity=0.5),
            T(type="timeout", stream="upstream", attributes={"timeout": 0}, toxicity=0.5),
        ),
        on="all",
        kind="concurrent",
        calls=40,
        in_flight=10,
        knobs=RouterKnobs(attempt_timeout_ms=400),
        shapes=(A,),
        streams=(False,),
        deadline_s=10.0,
        min_completion=0.95,
    ),
    Scenario(
        name="caller cancels while latency holds the answer",
        toxics=(T(type="latency", attributes={"latency": 3000}),),
        kind="cancel",
        cancel_at_s=0.3,
        shapes=(BR,),
        streams=BOTH,
        expect=frozenset({"cancelled"}),
    ),
    Scenario(
        name="caller cancels during the retry backoff",
        toxics=(T(type="latency", attributes={"latency": 50}),),
        step=Scripted(status=500),
        kind="cancel",
        cancel_at_s=0.15,  # the first 500 arrives at ~50 ms; the backoff before attempt 2 is >= 160 ms
        shapes=(OA,),
        streams=BOTH,
        expect=frozenset({"cancelled"}),
    ),
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Run:
    """One scenario run: a row, a primary shape, an entry point."""

    scenario: Scenario
    shape: ProviderKind
    stream: bool

    @property
    def id(self) -> str:
        """A pytest id, e.g. ``limit_data-cut-mid-body[anthropic,plain]``."""
        slug = "".join(c if c.isalnum() else "-" for c in self.scenario.name.lower()).strip("-")
        while "--" in slug:
            slug = slug.replace("--", "-")
        return f"{slug}[{self.shape.value},{'stream' if self.stream else 'plain'}]"


def runs() -> list[Run]:
    """Every scenario run, in table order."""
    return [Run(scenario=s, shape=k, stream=st) for s in SCENARIOS for k in s.shapes for st in s.streams]
