"""What the shell tells the kernel happened: the events that answer a pending action (past tense).

An attempt the kernel asked for ends as :class:`AttemptSucceeded`, :class:`AttemptFailed` or
:class:`AttemptRefused` (the shell could not send it); a sleep ends as :class:`SleepDone`. Each
carries ``now_ms`` on the shell's clock. The kernel re-exports every name.
"""

from __future__ import annotations

from dataclasses import dataclass

from routeproof.core.call_plan import RefusalEffect
from routeproof.core.types import AttemptFailure

__all__ = ["AttemptFailed", "AttemptRefused", "AttemptSucceeded", "Event", "SleepDone"]


# --- events --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class AttemptSucceeded:
    """The attempt the kernel asked for returned a response."""

    now_ms: int
    http_status: int = 200
    first_token_ms: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class AttemptFailed:
    """The attempt failed; ``draw`` in [0, 1] is the randomness for the next backoff."""

    now_ms: int
    failure: AttemptFailure
    draw: float = 0.5
    first_token_ms: int | None = None
    retry_allowed: bool = True  # the provider's retry budget (core/retry_budget.py): False fails over


@dataclass(frozen=True, slots=True, kw_only=True)
class AttemptRefused:
    """The shell could not send the attempt (e.g. a budget scope refused its reservation)."""

    now_ms: int
    refusal: RefusalEffect


@dataclass(frozen=True, slots=True, kw_only=True)
class SleepDone:
    """The requested sleep is over."""

    now_ms: int


Event = AttemptSucceeded | AttemptFailed | AttemptRefused | SleepDone
