"""Local congestion is not a provider fault: the rule for an attempt that queued for a local slot.

The shell may have to wait before it can start an attempt the kernel issued: for an in-flight slot
(the router-wide or per-provider limit, ``routeproof.admission``) and so, under the default limits,
never inside the HTTP client's connection pool. That wait is local. :func:`readmit` re-issues the
pending attempt at the instant the slot was granted, with the kernel's own rule (``kernel._issue``):

* no record is written and no health effect follows (the provider was never asked);
* the attempt's own timeout starts when it really starts, still capped by the caller's deadline
  and the 30 s budget;
* if the deadline or the budget ended while it queued, the call ends as the kernel ends it then.

Whether a wait happened at all (``waited``) is decided here too, in whole milliseconds of the
kernel's clock, so the shell's fast path (no wait) costs one comparison.
"""

from __future__ import annotations

import enum
from dataclasses import replace

import icontract

from routeproof.core.kernel import Action, CallProvider, Fail, KernelState, _issue, well_formed
from routeproof.core.types import ChainEntry

__all__ = ["TenantVerdict", "pending_as_issued", "readmit", "tenant_shares", "tenant_verdict", "waited"]


def waited(action: CallProvider, admitted_at_ms: int) -> bool:
    """Whether the attempt started later than the kernel issued it (then it must be re-issued)."""
    return admitted_at_ms > action.issued_at_ms


def _unbump(
    used: tuple[tuple[tuple[str, str], int], ...], entry: ChainEntry
) -> tuple[tuple[tuple[str, str], int], ...]:
    key = (entry.provider.value, entry.model)
    return tuple((k, c - 1) if k == key else (k, c) for k, c in used if k != key or c > 1)


def _same_attempt(state: KernelState, result: tuple[KernelState, Action]) -> bool:
    pending, (new_state, action) = state.pending, result
    if isinstance(action, Fail):
        return new_state.done and action.records == state.records
    return (
        isinstance(pending, CallProvider)
        and isinstance(action, CallProvider)
        and action.entry == pending.entry
        and action.attempt_num == pending.attempt_num
        and new_state.used == state.used
        and new_state.calls_issued == state.calls_issued
    )


def pending_as_issued(state: KernelState) -> bool:
    """The state the kernel leaves after issuing its pending attempt (the one :func:`readmit` undoes):
    a well-formed, unfinished call whose pending attempt is at its chain position, counted last."""
    pending = state.pending
    if not isinstance(pending, CallProvider) or state.done or not well_formed(state):
        return False
    chain = state.plan.chain
    return (
        0 <= pending.position < len(chain)
        and chain[pending.position] == pending.entry
        and pending.attempt_num >= 1
        and state.attempts_on(pending.entry) == pending.attempt_num
        and len(state.used) >= 1
        and state.used[-1][0] == (pending.entry.provider.value, pending.entry.model)
        and state.calls_issued >= 1
    )


@icontract.require(pending_as_issued)
@icontract.require(
    lambda state, admitted_at_ms: (
        isinstance(state.pending, CallProvider) and admitted_at_ms >= state.pending.issued_at_ms
    )
)
@icontract.ensure(lambda result: well_formed(result[0]))
@icontract.ensure(lambda state, result: result[0].records == state.records, "queueing writes no record")
@icontract.ensure(_same_attempt, "the same attempt, re-timed, or the end of the call")
@icontract.ensure(
    lambda admitted_at_ms, result: not isinstance(result[1], CallProvider) or result[1].issued_at_ms == admitted_at_ms
)
def readmit(state: KernelState, admitted_at_ms: int) -> tuple[KernelState, Action]:
    """The pending attempt issued again at ``admitted_at_ms``, when its local slot was granted."""
    pending = state.pending
    assert isinstance(pending, CallProvider)  # the precondition
    unissued = replace(
        state, pending=None, used=_unbump(state.used, pending.entry), calls_issued=state.calls_issued - 1
    )
    return _issue(unissued.plan, unissued, pending.position, admitted_at_ms)


# --- per-tenant shares at the gateway -----------------------------------------------------------------
#
# Per-tenant caps, not weighted fair queuing: each tenant holds at most its share of the gateway's
# in-flight calls and queues at most its share of waiters; past both it is refused at once. The shares
# sum to no more than the gateway's limit, which is at most the router's per-provider limit, so a
# tenant within its share never waits behind another tenant's calls, in the gateway or below it. WFQ
# would lend idle capacity (work-conserving), but a lent slot is held for a whole stream (minutes) and
# cannot be taken back, so a burst that borrowed it would delay the owner's next call by a stream's
# length: the bound the isolation promises would depend on other tenants' stream lengths.


class TenantVerdict(enum.Enum):
    """What the gateway does with one tenant's new call."""

    ADMIT = "admit"  # a slot of the tenant's share is free and nobody of the tenant queues before it
    QUEUE = "queue"  # wait, within the call's deadline, for one of the tenant's slots
    REFUSE = "refuse"  # the tenant's slots and its queue are full: 503 tenant_saturated, Retry-After


def _tenant_verdict_impl(in_flight: int, queued: int, max_in_flight: int, max_queued: int) -> TenantVerdict:
    if in_flight < max_in_flight and queued == 0:
        return TenantVerdict.ADMIT
    if queued < max_queued:
        return TenantVerdict.QUEUE
    return TenantVerdict.REFUSE


@icontract.require(lambda max_in_flight, max_queued: max_in_flight >= 1 and max_queued >= 0)
@icontract.require(lambda in_flight, queued: in_flight >= 0 and queued >= 0)
@icontract.ensure(
    lambda in_flight, queued, max_in_flight, result: (
        (result is TenantVerdict.ADMIT) == (in_flight < max_in_flight and queued == 0)
    ),
    "admitted exactly when a slot of the share is free and no waiter of the tenant is ahead",
)
@icontract.ensure(
    lambda queued, max_queued, result: result is not TenantVerdict.QUEUE or queued < max_queued,
    "the queue never grows past the tenant's share",
)
@icontract.ensure(
    lambda in_flight, queued, max_in_flight, max_queued, result: (
        result is not TenantVerdict.REFUSE or (queued >= max_queued and (in_flight >= max_in_flight or queued > 0))
    ),
    "refused only when both the slots and the queue are full",
)
def tenant_verdict(in_flight: int, queued: int, max_in_flight: int, max_queued: int) -> TenantVerdict:
    """One tenant's new call, given the tenant's own in-flight calls and waiters (no other tenant's)."""
    return _tenant_verdict_impl(in_flight, queued, max_in_flight, max_queued)


def _tenant_shares_impl(total: int, weights: tuple[int, ...]) -> tuple[int, ...]:
    weight_sum, spare = sum(weights), total - len(weights)  # one slot each, the rest by weight
    return tuple(1 + spare * w // weight_sum for w in weights)


@icontract.require(lambda total, weights: total >= len(weights) >= 1 and all(w >= 1 for w in weights))
@icontract.ensure(lambda weights, result: len(result) == len(weights) and all(r >= 1 for r in result))
@icontract.ensure(lambda total, result: sum(result) <= total, "the shares fit in the gateway's limit")
@icontract.ensure(
    lambda weights, result: all(
        result[i] <= result[j] for i in range(len(weights)) for j in range(len(weights)) if weights[i] <= weights[j]
    ),
    "a heavier tenant never gets a smaller share",
)
def tenant_shares(total: int, weights: tuple[int, ...]) -> tuple[int, ...]:
    """Each tenant's share of ``total`` in-flight calls, in proportion to its weight, at least one each."""
    return _tenant_shares_impl(total, weights)
