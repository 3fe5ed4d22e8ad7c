"""The ports: the one frozen set of services the Router builds once and the call machinery uses.

The driver (:mod:`routeproof.driver`), the call's bookkeeping (:mod:`routeproof.call`) and the
streaming relay (:mod:`routeproof.streaming`) reach the world only through :class:`Ports`:

============  ===========================================================================
providers     the provider clients, looked up as ``providers[action.entry.provider]``
ledger        the budget ledger store and the pricing table (reserve, settle, cost)
health        provider health and recent latencies (mutable state behind two verbs)
metrics       the instrumentation hook (:class:`Instrumentation`, a Protocol)
admission     the in-flight limits (admission.py)
draw          the kernel's randomness: a float in [0, 1) per failed attempt
wall_clock    Unix time in seconds (the ledger's day and month); loop time is asyncio's
planning      what the kernel's plan is built from (chain rules, backoff, timeouts)
timeouts      the committed stream's idle timeout
traffic       deployment groups, rate-limit windows and retry budgets (traffic_store/)
============  ===========================================================================

Nothing here decides anything: each port performs, and core decides.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from routeproof.admission import Admission
from routeproof.clock import wall_ms
from routeproof.core.classify import HealthEffect
from routeproof.core.health import HealthState
from routeproof.core.kernel import BackoffPolicy
from routeproof.core.latency import (
    LatencyState,
    breaching,
    probe_due,
    record_demotion,
    record_latency,
    start_probe,
)
from routeproof.core.ledger import BudgetRefusal, Reservation
from routeproof.core.pricing import FREE, Price, PricingTable, cost_pico_usd, worst_case_cost_pico_usd
from routeproof.core.routing import CoolingPolicy
from routeproof.core.types import AttemptRecord, ChatRequest, PrivacyTier, ProviderId, ProviderKind, Usage
from routeproof.health_store import HealthStore
from routeproof.ledger_store import LedgerStore
from routeproof.providers.protocol import Provider
from routeproof.registry import kind_of
from routeproof.traffic_store.port import Traffic

__all__ = ["HealthBook", "HealthPort", "Instrumentation", "Ledger", "Planning", "Ports", "StreamTimeouts"]


@runtime_checkable
class Instrumentation(Protocol):
    """The metrics hook (stamina's style): the shell reports, the hook records. ``RouterMetrics``
    (observe.py) is the OpenTelemetry implementation; any object with these methods will do.

    Optional: ``stream_ended(provider, model, elapsed_ms, error_type)``, called when a committed
    stream ends (``elapsed_ms`` from sending the attempt to the stream's end; ``error_type`` None, or
    ``interrupted`` / ``deadline`` / ``abandoned``). A hook without it is not called for it."""

    def attempt(self, record: AttemptRecord) -> None:
        """One attempt finished."""
        ...

    def failover(self, from_kind: ProviderId, to_kind: ProviderId) -> None:
        """The call moved from one provider to the next."""
        ...

    def usage(self, provider: ProviderId, model: str, usage: Usage) -> None:
        """The usage a provider reported for one attempt (the answer, or a stream's usage event)."""
        ...

    def call(self, provider: ProviderId | None, model: str, outcome: str, attempts: int) -> None:
        """The call's one terminal decision (``outcome`` is a ``CallOutcome`` value)."""
        ...

    def turn_warning(self, provider: ProviderId) -> None:
        """An attempt's worst case exceeded the per-turn warning threshold."""
        ...

    def deadline(self) -> None:
        """The caller's deadline elapsed."""
        ...


@runtime_checkable
class HealthPort(Protocol):
    """Where provider health and recent latencies live. Two verbs for health ("apply an effect",
    "read the snapshot") so another store (Redis) can back them; latency likewise."""

    def apply(self, provider: ProviderId, effect: HealthEffect, now_ms: int) -> None:
        """Apply one attempt's (or one settled stream's) effect on ``provider``'s health."""
        ...

    def snapshot(self) -> HealthState:
        """Provider health as it stands (a frozen value)."""
        ...

    def record_latency(self, provider: ProviderId, now_ms: int, latency_ms: int) -> None:
        """One answered attempt's latency (the latency-SLA trigger's sample)."""
        ...

    def latency(self) -> LatencyState:
        """Recent latencies as they stand (a frozen value)."""
        ...

    def demote_slow(self, chain: frozenset[ProviderId], now_ms: int) -> frozenset[ProviderId]:
        """This call's providers to demote for the latency SLA; one due a probe is left in front, once."""
        ...


class HealthBook:
    """The :class:`HealthPort`: health in a health store (this process's memory, or shared through
    Redis: health_store/), recent latencies as frozen core values swapped under the event loop."""

    __slots__ = ("_latency", "_store")

    def __init__(self, store: HealthStore, latency: LatencyState) -> None:
        self._store = store
        self._latency = latency

    def apply(self, provider: ProviderId, effect: HealthEffect, now_ms: int) -> None:
        """Success resets, failure counts (core/health.py, applied by the store); neutral changes nothing."""
        self._store.apply(provider, effect, now_ms=now_ms)

    def snapshot(self) -> HealthState:
        """Provider health as it stands (a frozen value)."""
        return self._store.snapshot()

    def record_latency(self, provider: ProviderId, now_ms: int, latency_ms: int) -> None:
        """One answered attempt's latency (core/latency.py)."""
        self._latency = record_latency(self._latency, provider, now_ms, latency_ms)

    def latency(self) -> LatencyState:
        """Recent latencies as they stand (a frozen value)."""
        return self._latency

    def demote_slow(self, chain: frozenset[ProviderId], now_ms: int) -> frozenset[ProviderId]:
        """The breaching providers of ``chain``, less those due a probe (each probe recorded once)."""
        slow = breaching(self._latency, now_ms) & chain
        if not slow:  # the usual case: nothing to probe or count
            return slow
        due = frozenset(k for k in slow if probe_due(self._latency, k, now_ms))
        for kind in due:
            self._latency = start_probe(self._latency, kind, now_ms)
        for kind in slow - due:
            self._latency = record_demotion(self._latency, kind)
        return slow - due


@dataclass(frozen=True, slots=True, kw_only=True)
class Ledger:
    """The budget ledger store (None: no budget) and the pricing table (None: no prices)."""

    store: LedgerStore | None
    pricing: PricingTable | None
    wall_clock: Callable[[], float]
    ids: Mapping[str, ProviderId]  # each configured name's instance (its kind prices the call)

    def wall_ms(self) -> int:
        """Unix time in ms (the ledger store's clock)."""
        return max(0, wall_ms(self.wall_clock()))

    def price(self, kind: ProviderId, model: str) -> Price | None:
        """The price a call is booked at. With a budget every routed model must be priced (the
        factory checks it at load; a Router built by hand fails here, before anything is sent).
        Without a budget an unpriced model has an unknown cost (None), never an error."""
        if self.pricing is None:
            return None
        kind = kind_of(self.ids.get(kind, kind))  # prices are per (kind, model) of the instance
        if self.store is None:
            price = self.pricing.get(kind, model)
            return price if price is not None or kind is not ProviderKind.LOCAL else FREE
        return self.pricing.price_of_call(kind, model)

    async def reserve(
        self, kind: ProviderId, model: str, req: ChatRequest, session_id: str
    ) -> Reservation | BudgetRefusal | None:
        """Reserve the attempt's worst case in the ledger store (raises LedgerUnavailable: fail closed)."""
        if self.store is None:
            return None
        price = self.price(kind, model)
        amount = worst_case_cost_pico_usd(price, req) if price is not None else 0
        return await self.store.try_reserve(
            session_id=session_id, provider=kind, amount_pico_usd=amount, now_ms=self.wall_ms()
        )

    async def settle(self, reservation: Reservation | None, *, booked_pico_usd: int, succeeded: bool) -> None:
        """Commit or release in the ledger store; one it cannot reach queues it (or the lease books it)."""
        if reservation is None or self.store is None:
            return
        if succeeded:
            await self.store.commit(reservation, booked_pico_usd, now_ms=self.wall_ms())
        else:
            await self.store.release(reservation, booked_pico_usd, now_ms=self.wall_ms())

    def known_cost(self, kind: ProviderId, model: str, usage: Usage | None) -> int | None:
        """The exact cost of ``usage`` in pico-USD, or None when the model has no price."""
        price = self.price(kind, model)
        if price is None or usage is None:
            return None
        return cost_pico_usd(price, usage)

    def cost(self, kind: ProviderId, model: str, usage: Usage | None) -> int:
        """The exact cost of ``usage`` in pico-USD, 0 when unknown."""
        return self.known_cost(kind, model, usage) or 0


@dataclass(frozen=True, slots=True, kw_only=True)
class Planning:
    """What each call's plan is built from: the chain rules' inputs and the kernel's limits."""

    ids: Mapping[str, ProviderId]  # each configured name's registered instance
    endpoint_tiers: Mapping[ProviderId, PrivacyTier]
    cooling: CoolingPolicy
    backoff: BackoffPolicy
    attempt_timeout_ms: int
    provider_timeouts_ms: Mapping[ProviderId, int]
    max_attempts_per_provider: int


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamTimeouts:
    """Timeouts of a committed stream (the attempt's own limit comes from the kernel)."""

    idle_timeout_s: float | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Ports:
    """The services one Router hands to its calls (see the module docstring)."""

    providers: Mapping[ProviderId, Provider]
    ledger: Ledger
    health: HealthPort
    metrics: Instrumentation
    admission: Admission
    draw: Callable[[], float]
    planning: Planning
    timeouts: StreamTimeouts
    traffic: Traffic
