"""Declared rate limits per deployment (``rpm``, ``tpm``): may one more call be sent now?

The window is a sliding log: the reservations made in the last ``window_ms`` (60 s for rpm/tpm).
A call may go when fewer than ``rpm`` reservations are live and the live tokens plus its estimate
fit ``tpm``. A log that admits at most N in *any* window of 60 s never exceeds a provider's own
limit, whether the provider counts in fixed minutes, a sliding minute or a token bucket of N per
minute, so a router that keeps it sees no 429 from a limit it was told.

The ledger's pattern: the estimate (an upper bound: ``worst_case_prompt_tokens`` + the output cap)
is reserved before sending; after the answer it is settled to the real usage; an attempt that was
never sent is released. :func:`place_tokens` says what a settled place keeps, for a plain answer
and a stream alike (a stream settles when it ends, with the usage it reported). The shell's store
applies :func:`admit` and the append atomically (memory: no await between them; SQLite:
``BEGIN IMMEDIATE``; Redis: one Lua script), so concurrent calls, and replicas sharing a store,
cannot pass a limit.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import icontract

from routeproof.core.types import Usage

__all__ = [
    "MIN_LEFT_AFTER_WAIT_MS",
    "WINDOW_MS",
    "CapacityWait",
    "DeploymentLimits",
    "LimitKind",
    "LogEntry",
    "RateVerdict",
    "admit",
    "capacity_wait",
    "live_entries",
    "place_tokens",
]

WINDOW_MS = 60_000
"""The window both ``rpm`` and ``tpm`` count over."""


class LimitKind(enum.Enum):
    """Which declared limit refused a call (the ``SkipRecord`` reason names it)."""

    RPM = "rpm"
    TPM = "tpm"


@dataclass(frozen=True, slots=True, kw_only=True)
class DeploymentLimits:
    """A deployment's declared limits (None: not limited) over a window of ``window_ms``."""

    rpm: int | None = None
    tpm: int | None = None
    window_ms: int = WINDOW_MS

    def __post_init__(self) -> None:
        for name in ("rpm", "tpm"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
                raise ValueError(f"{name} must be an int >= 1, got {value!r}")
        if not isinstance(self.window_ms, int) or self.window_ms < 1:
            raise ValueError(f"window_ms must be an int >= 1, got {self.window_ms!r}")

    @property
    def limited(self) -> bool:
        """Whether any limit is declared."""
        return self.rpm is not None or self.tpm is not None


@dataclass(frozen=True, slots=True, kw_only=True)
class LogEntry:
    """One reservation in the window: when it was made and how many tokens it holds."""

    at_ms: int
    tokens: int


@dataclass(frozen=True, slots=True, kw_only=True)
class RateVerdict:
    """The verdict: ``ok``, or the limit that refused and the earliest instant the call would fit
    (None: never, an estimate larger than ``tpm`` itself)."""

    ok: bool
    limit: LimitKind | None = None
    retry_at_ms: int | None = None


def _live(limits: DeploymentLimits, log: tuple[LogEntry, ...], now_ms: int) -> tuple[LogEntry, ...]:
    return tuple(e for e in log if e.at_ms > now_ms - limits.window_ms)


@icontract.ensure(lambda log, result: len(result) <= len(log))
def live_entries(limits: DeploymentLimits, log: tuple[LogEntry, ...], now_ms: int) -> tuple[LogEntry, ...]:
    """The reservations still inside the window at ``now_ms`` (the rest can be dropped)."""
    return _live(limits, log, now_ms)


def _admit(limits: DeploymentLimits, log: tuple[LogEntry, ...], now_ms: int, tokens: int) -> RateVerdict:
    live = sorted(_live(limits, log, now_ms), key=lambda e: e.at_ms)
    if limits.rpm is not None and len(live) >= limits.rpm:
        # it fits once all but rpm - 1 of the live entries have left the window
        leaving = live[len(live) - limits.rpm]
        return RateVerdict(ok=False, limit=LimitKind.RPM, retry_at_ms=leaving.at_ms + limits.window_ms)
    if limits.tpm is not None:
        if tokens > limits.tpm:
            return RateVerdict(ok=False, limit=LimitKind.TPM, retry_at_ms=None)
        held = sum(e.tokens for e in live)
        if held + tokens > limits.tpm:
            for entry in live:  # oldest first: when enough has left the window
                held -= entry.tokens
                if held + tokens <= limits.tpm:
                    return RateVerdict(ok=False, limit=LimitKind.TPM, retry_at_ms=entry.at_ms + limits.window_ms)
    return RateVerdict(ok=True)


def _fits_after(limits: DeploymentLimits, log: tuple[LogEntry, ...], tokens: int, result: RateVerdict) -> bool:
    """Appending the call keeps every limit: at most rpm live entries and tpm live tokens."""
    if not result.ok:
        return True
    return (limits.rpm is None or len(log) + 1 <= limits.rpm) and (
        limits.tpm is None or sum(e.tokens for e in log) + tokens <= limits.tpm
    )


@icontract.require(lambda tokens: tokens >= 0)
@icontract.ensure(
    lambda limits, log, now_ms, tokens, result: _fits_after(limits, _live(limits, log, now_ms), tokens, result),
    "an admitted call never takes the window past a limit",
)
@icontract.ensure(lambda result: result.ok == (result.limit is None))
@icontract.ensure(lambda now_ms, result: result.retry_at_ms is None or result.retry_at_ms > now_ms)
@icontract.ensure(lambda limits, result: result.ok or limits.limited)
def admit(limits: DeploymentLimits, log: tuple[LogEntry, ...], now_ms: int, tokens: int) -> RateVerdict:
    """Whether a call estimated at ``tokens`` may be sent at ``now_ms`` given the window's ``log``."""
    return _admit(limits, log, now_ms, tokens)


@dataclass(frozen=True, slots=True, kw_only=True)
class CapacityWait:
    """What a call does when its deployments are at their limits: go now, wait until
    ``until_ms`` (then look again), or be refused (``refuse``) because nothing fits before its end."""

    go: bool
    until_ms: int | None = None

    @property
    def refuse(self) -> bool:
        """Neither now nor before the call's end."""
        return not self.go and self.until_ms is None


MIN_LEFT_AFTER_WAIT_MS = 250
"""A wait that would leave the call less than this before its end is not taken: the call is
refused at once instead of waking to a place it has no time to use (the place would be wasted)."""


def _capacity_wait(verdicts: tuple[RateVerdict, ...], now_ms: int, end_ms: int) -> CapacityWait:
    if not verdicts or any(v.ok for v in verdicts):
        return CapacityWait(go=True)
    times = [v.retry_at_ms for v in verdicts if v.retry_at_ms is not None]
    if not times or min(times) + MIN_LEFT_AFTER_WAIT_MS > end_ms:
        return CapacityWait(go=False)
    return CapacityWait(go=False, until_ms=max(now_ms + 1, min(times)))


@icontract.ensure(lambda verdicts, result: result.go == (not verdicts or any(v.ok for v in verdicts)))
@icontract.ensure(
    lambda now_ms, end_ms, result: result.until_ms is None or now_ms < result.until_ms < max(end_ms, now_ms + 2),
    "a wait ends after now and before the call's end",
)
def capacity_wait(verdicts: tuple[RateVerdict, ...], now_ms: int, end_ms: int) -> CapacityWait:
    """Given each limited deployment's verdict, go now, wait until the first one frees, or refuse."""
    return _capacity_wait(verdicts, now_ms, end_ms)


def _usage_tokens(usage: Usage) -> int:
    return usage.prompt_tokens + usage.completion_tokens + usage.cached_input_tokens + usage.cache_creation_tokens


def _place_tokens(estimate_tokens: int, usage: Usage | None) -> int:
    if usage is None:
        return estimate_tokens
    counted = _usage_tokens(usage)
    return counted if counted > 0 else estimate_tokens


@icontract.require(lambda estimate_tokens: estimate_tokens >= 0)
@icontract.ensure(
    lambda estimate_tokens, usage, result: (
        result == estimate_tokens if usage is None or _usage_tokens(usage) == 0 else result == _usage_tokens(usage)
    ),
    "the usage the provider reported, else the estimate",
)
def place_tokens(estimate_tokens: int, usage: Usage | None) -> int:
    """The tokens a settled rate-limit place keeps: the usage the provider reported (input, output,
    cache reads and writes), or the reservation's estimate when none arrived (``None``: a stream cut
    before its usage, a cancelled attempt) or it counts no token at all (an OpenAI-compatible server
    that sends no usage reads as zeros: settling to 0 would let the window pass the provider's tpm)."""
    return _place_tokens(estimate_tokens, usage)
