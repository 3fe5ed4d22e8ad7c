"""Admission control: bounded in-flight attempts, queued within the caller's deadline.

A router-wide limit and a per-provider limit (``max_in_flight``, ``max_in_flight_per_provider``)
bound how many attempts are in flight at once; an attempt beyond them waits here, in FIFO order,
before it starts. The per-provider default (100) equals the connection-pool size of httpx's and
aiohttp's default clients, so an admitted attempt never waits for a connection inside the pool,
where the wait would count against the provider's timeout. The time queued here is local, not the
provider's: the attempt is re-issued when its slot is granted (:func:`routeproof.core.admission.readmit`),
so queueing writes no attempt record and has no health effect. If the caller's deadline (or the
30 s budget) passes while an attempt queues, the call ends with :class:`AdmissionTimeout`.

With ``metrics``, the queue depth (``ai_router_admission_queue_depth``, by scope) and the time each
queued attempt waited (``ai_router_admission_queued_ms``) are reported; an attempt admitted at once
records nothing, so the fast path stays one comparison.

The shell performs; the rule is in core.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Protocol

from routeproof.clock import loop_ms, loop_now_ms, waypoint
from routeproof.core.admission import TenantVerdict, readmit, tenant_verdict, waited
from routeproof.core.kernel import Action, CallProvider, KernelState
from routeproof.core.types import ProviderId
from routeproof.errors import ConfigError, DeadlineExceeded

if TYPE_CHECKING:
    from routeproof.observe import RouterMetrics

__all__ = [
    "DEFAULT_MAX_IN_FLIGHT_PER_PROVIDER",
    "Admission",
    "AdmissionTimeout",
    "Limiter",
    "Slot",
    "TenantAdmission",
    "TenantRateLimit",
    "TenantRateLimited",
    "TenantSaturated",
]

DEFAULT_MAX_IN_FLIGHT_PER_PROVIDER = 100
"""httpx's and aiohttp's default connection-pool size: admission, not the pool, does the queueing."""


class AdmissionTimeout(DeadlineExceeded):
    """The caller's deadline (or the 30 s budget) passed while an attempt waited for a local slot."""


class Limiter:
    """A FIFO counting limiter whose waiters expire at their call's end.

    Unlike ``asyncio.Semaphore`` + ``asyncio.timeout_at`` per waiter, expiry costs O(1) per waiter:
    waiters sharing an end instant share one timer, which fails their futures directly (no task
    cancellation), and expired waiters are skipped lazily instead of removed from the middle of the
    queue. With thousands of calls queued on one deadline this is what keeps the error on time.
    """

    __slots__ = ("_ends", "_free", "_waiters", "limit", "scope")

    def __init__(self, limit: int, scope: str = "") -> None:
        self.limit = limit
        self.scope = scope  # the metric label: a provider label, or "router"
        self._free = limit
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()
        self._ends: dict[float, list[asyncio.Future[None]]] = {}

    @property
    def in_use(self) -> int:
        """Slots held now."""
        return self.limit - self._free

    def try_acquire(self) -> bool:
        """Take a slot if one is free and nobody queues before us."""
        if self._free > 0 and not self._waiters:
            self._free -= 1
            return True
        return False

    async def acquire(self, end_s: float) -> None:
        """Queue for a slot until loop time ``end_s``; ``TimeoutError`` if none is granted by then."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        self._waiters.append(future)
        group = self._ends.get(end_s)
        if group is None:
            group = self._ends[end_s] = []
            loop.call_at(end_s, self._expire, end_s)
            waypoint(loop, end_s)  # the expiry's final wake-up is short (clock.py)
        group.append(future)
        try:
            await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled() and future.exception() is None:
                self.release()  # granted as the caller was cancelled: pass it on
            raise

    def _expire(self, end_s: float) -> None:
        for future in self._ends.pop(end_s, ()):
            if not future.done():
                future.set_exception(TimeoutError())

    def release(self) -> None:
        """Hand the slot to the first live waiter, or free it."""
        while self._waiters:
            future = self._waiters.popleft()
            if not future.done():
                future.set_result(None)
                return
        self._free += 1


class Slot:
    """The in-flight slots one attempt holds; released exactly once (``with slot:`` or ``release``)."""

    __slots__ = ("_held",)

    def __init__(self, held: tuple[Limiter, ...]) -> None:
        self._held = held

    def release(self) -> None:
        """Give the slots back (idempotent)."""
        held, self._held = self._held, ()
        for limiter in held:
            limiter.release()

    def __enter__(self) -> Slot:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()


def _limit(name: str, value: int | None) -> int | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ConfigError(f"{name} must be a positive integer or None (no limit), got {value!r}")
    return value


class Admission:
    """The router's in-flight limits. ``None`` means no limit at that level."""

    def __init__(
        self,
        *,
        max_in_flight: int | None = None,
        max_in_flight_per_provider: int | None = DEFAULT_MAX_IN_FLIGHT_PER_PROVIDER,
        metrics: RouterMetrics | None = None,
    ) -> None:
        self.max_in_flight = _limit("max_in_flight", max_in_flight)
        self.max_in_flight_per_provider = _limit("max_in_flight_per_provider", max_in_flight_per_provider)
        self._metrics = metrics
        self._router = Limiter(max_in_flight, "router") if max_in_flight is not None else None
        self._providers: dict[ProviderId, Limiter] = {}
        self._held: dict[ProviderId, tuple[Limiter, ...]] = {}  # each provider's limiters, built once

    def _limiters(self, kind: ProviderId) -> tuple[Limiter, ...]:
        held = self._held.get(kind)
        if held is None:
            held = self._held[kind] = self._build_limiters(kind)
        return held

    def _build_limiters(self, kind: ProviderId) -> tuple[Limiter, ...]:
        out: list[Limiter] = []
        if self.max_in_flight_per_provider is not None:
            limiter = self._providers.get(kind)
            if limiter is None:
                limiter = self._providers[kind] = Limiter(self.max_in_flight_per_provider, kind.as_metric_label())
            out.append(limiter)
        if self._router is not None:
            out.append(self._router)  # always after the provider's: one order, no deadlock
        return tuple(out)

    def in_flight(self, kind: ProviderId | None = None) -> int:
        """Attempts holding a slot now, on ``kind`` or in all; for tests and metrics."""
        if kind is not None:
            limiter = self._providers.get(kind)
            return 0 if limiter is None else limiter.in_use
        if self._router is not None:
            return self._router.in_use
        return sum(limiter.in_use for limiter in self._providers.values())

    def try_admit(self, kind: ProviderId) -> Slot | None:
        """``kind``'s slots if they are free now (never queues): a hedge takes a free slot or is not sent."""
        held: list[Limiter] = []
        for limiter in self._limiters(kind):
            if not limiter.try_acquire():
                Slot(tuple(held)).release()
                return None
            held.append(limiter)
        return Slot(tuple(held))

    async def admit(self, state: KernelState, action: CallProvider) -> tuple[KernelState, Action, Slot | None]:
        """Wait for ``action``'s slots within the call's end; the (possibly re-issued) action and
        its slot, or the kernel's end of the call (no slot) when the wait used up the time left."""
        limiters = self._limiters(action.entry.provider)
        held: list[Limiter] = []
        loop = asyncio.get_running_loop()
        metrics = self._metrics
        try:
            for limiter in limiters:
                if not limiter.try_acquire():
                    if metrics is None:
                        await limiter.acquire(state.plan.effective_end_ms / 1000)
                    else:
                        metrics.queue_changed(limiter.scope, 1)
                        try:
                            await limiter.acquire(state.plan.effective_end_ms / 1000)
                        finally:
                            metrics.queue_changed(limiter.scope, -1)
                held.append(limiter)
        except TimeoutError as exc:
            Slot(tuple(held)).release()
            queued_ms = loop_ms(loop.time()) - action.issued_at_ms
            if metrics is not None:
                metrics.queued_for(action.entry.provider, queued_ms, "timed_out")
            raise AdmissionTimeout(
                f"caller deadline exceeded after {queued_ms} ms queued for a local in-flight slot "
                f"({action.entry.provider.value}: limit {self.max_in_flight_per_provider}, "
                f"router: limit {self.max_in_flight}); no request was sent for this attempt",
                attempts=state.records,
            ) from exc
        except BaseException:
            Slot(tuple(held)).release()
            raise
        return self._admitted(state, action, Slot(tuple(held)), loop_now_ms(loop))

    def admit_at_once(self, state: KernelState, action: CallProvider) -> tuple[KernelState, Action, Slot | None] | None:
        """:meth:`admit`'s answer when each of ``action``'s slots is free now (no waiter ahead), as
        plain code (no coroutine: this runs per attempt); None, taking nothing, when one would queue
        (then :meth:`admit` queues for them all, in the same order)."""
        slot = self.try_admit(action.entry.provider)  # every slot or none, as a hedge takes them
        return None if slot is None else self._admitted(state, action, slot, loop_now_ms(asyncio.get_running_loop()))

    def _admitted(
        self, state: KernelState, action: CallProvider, slot: Slot, now_ms: int
    ) -> tuple[KernelState, Action, Slot | None]:
        """``slot`` granted at ``now_ms``: the action as it stands, or re-issued if it waited (core)."""
        metrics = self._metrics
        if not waited(action, now_ms):
            return state, action, slot
        if metrics is not None:
            metrics.queued_for(action.entry.provider, now_ms - action.issued_at_ms, "admitted")
        state, again = readmit(state, now_ms)
        if not isinstance(again, CallProvider):
            slot.release()
            return state, again, None
        return state, again, slot


# --- per-tenant shares (the gateway's; the rule is core.admission.tenant_verdict) -----------------------


class TenantSaturated(Exception):
    """A tenant's share of in-flight calls and its queue are full, or its rate limit says wait."""

    def __init__(self, tenant: str, message: str, retry_after_s: int) -> None:
        super().__init__(message)
        self.tenant = tenant
        self.retry_after_s = retry_after_s


class TenantRateLimited(TenantSaturated):
    """A tenant's own rate limit (``rpm``/``tpm``) refused the call: 429 with ``Retry-After``."""


class TenantRateLimit(Protocol):
    """The hook for per-tenant rate limits (``routeproof.traffic_store.tenant_limits`` implements it).

    ``try_take`` is asked before a tenant's call is admitted, with the call's token estimate: None
    lets it through, a ``(seconds, limit)`` pair refuses it with ``Retry-After`` of that many
    seconds, naming the limit (``rpm``/``tpm``)."""

    async def try_take(self, tenant: str, tokens: int) -> tuple[int, str] | None:
        """None: go on; (seconds, limit): refuse, and say when to retry."""
        ...


@dataclass(slots=True, kw_only=True)
class _TenantState:
    max_in_flight: int
    max_queued: int
    in_flight: int = 0
    waiters: collections.deque[asyncio.Future[None]] = field(default_factory=collections.deque)


class TenantAdmission:
    """Each tenant's in-flight calls and queue, bounded by its own share; no tenant waits for another's.

    ``limits`` maps a tenant to (max in flight, max queued). A call acquires before it is routed and
    releases when its answer (or stream) ends; a release hands the slot to the tenant's first waiter.
    """

    def __init__(self, limits: Mapping[str, tuple[int, int]], *, rate_limit: TenantRateLimit | None = None) -> None:
        self._tenants = {name: _TenantState(max_in_flight=n, max_queued=q) for name, (n, q) in limits.items()}
        self._rate_limit = rate_limit

    @property
    def counts_tokens(self) -> bool:
        """Whether :meth:`acquire` reads its ``tokens`` (a rate limit is set): else a caller need not estimate them."""
        return self._rate_limit is not None

    def snapshot(self) -> dict[str, dict[str, int]]:
        """Per tenant: in_flight, its limit, queued, the queue's limit (for ``/readyz``)."""
        return {
            name: {
                "in_flight": t.in_flight,
                "limit": t.max_in_flight,
                "queued": len(t.waiters),
                "queue_limit": t.max_queued,
            }
            for name, t in self._tenants.items()
        }

    def saturated(self) -> tuple[str, ...]:
        """The tenants whose every slot is held now."""
        return tuple(name for name, t in self._tenants.items() if t.in_flight >= t.max_in_flight)

    async def acquire(self, tenant: str, end_s: float, tokens: int = 0) -> None:
        """Take one of ``tenant``'s slots, queueing until loop time ``end_s``; ``TenantSaturated`` when its
        slots and queue are full (at once), ``TenantRateLimited`` when its rate limit refuses a call of
        ``tokens`` (estimated), ``TimeoutError`` when ``end_s`` passes while it queues."""
        if self._rate_limit is not None:
            refused = await self._rate_limit.try_take(tenant, tokens)
            if refused is not None:
                wait_s, limit = refused
                raise TenantRateLimited(tenant, f"tenant {tenant!r} is over its {limit} limit", wait_s)
        state = self._tenants[tenant]
        verdict = tenant_verdict(state.in_flight, len(state.waiters), state.max_in_flight, state.max_queued)
        if verdict is TenantVerdict.ADMIT:
            state.in_flight += 1
            return
        if verdict is TenantVerdict.REFUSE:
            message = (
                f"tenant {tenant!r} has {state.in_flight} calls in flight (its share: {state.max_in_flight}) "
                f"and {len(state.waiters)} queued (its queue: {state.max_queued})"
            )
            raise TenantSaturated(tenant, message, 1)
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        state.waiters.append(future)
        try:
            async with asyncio.timeout_at(end_s):
                await future
        except BaseException:
            if future.done() and not future.cancelled():
                self.release(tenant)  # granted as the wait ended: pass the slot on
            else:
                future.cancel()
                state.waiters.remove(future)
            raise

    def release(self, tenant: str) -> None:
        """Give a slot back: to the tenant's first waiter, or free."""
        state = self._tenants[tenant]
        while state.waiters:
            future = state.waiters.popleft()
            if not future.done():
                future.set_result(None)
                return
        state.in_flight -= 1
