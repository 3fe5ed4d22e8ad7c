"""The traffic port: what the driver asks about deployments, performed over a traffic store.

It decides nothing. The order of a group is ``core.balance.order_chain`` over this process's
snapshot (calls in flight, latency EWMAs) and the router's draws; whether a deployment may take a
call is ``core.rate_limit.admit`` applied by the store; whether a failed attempt may be retried is
``core.retry_budget`` applied by the store; whether a call waits for capacity or is refused is
``core.rate_limit.capacity_wait``. In-flight counts and EWMAs are per process (each replica
balances what it sends); rate-limit windows and retry buckets live in the store, shared when the
store is.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from routeproof.core.affinity import Pin, cache_prefixes, pin_first, pin_live, pin_ttl_ms, pinned_deployment
from routeproof.core.balance import BalanceSnapshot, Member, Strategy, balances, draws_needed, ewma_ms, order_chain
from routeproof.core.hedge import MILLI, HedgePolicy, earn, spend
from routeproof.core.identity import name_of
from routeproof.core.pricing import worst_case_prompt_tokens
from routeproof.core.rate_limit import CapacityWait, DeploymentLimits, RateVerdict, capacity_wait, place_tokens
from routeproof.core.ratelimit_headers import HeaderBlock, block_from, header_limits, is_blocked, merge_blocks
from routeproof.core.retry_budget import RetryBudgetConfig, costs_token, retry_allowed
from routeproof.core.types import AttemptFailure, ChainEntry, ChatRequest, ProviderId, Usage
from routeproof.traffic_store.memory import MemoryTrafficStore
from routeproof.traffic_store.protocol import RateTicket, TrafficStore

__all__ = ["MAX_PINS", "Traffic", "TrafficConfig", "header_limit_reason", "rate_limit_reason"]

MAX_PINS = 10_000
"""Cache-affinity pins kept before the expired ones are swept (per process)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TrafficConfig:
    """How a router shares traffic over deployments (issue 32), by provider name.

    ``members``: each deployment's priority and weight (deployments of one alias at one priority
    form a group); ``strategy``: how a group orders its deployments; ``limits``: declared rpm/tpm
    per deployment; ``retry_budget``: the per-provider token bucket (None: retries unbudgeted, as
    before); ``wait_for_capacity``: whether a call whose deployments are all at their limits waits
    (FIFO, within its deadline) instead of being refused at once.
    """

    strategy: Strategy = Strategy.ORDERED
    members: Mapping[str, Member] = field(default_factory=dict)
    limits: Mapping[str, DeploymentLimits] = field(default_factory=dict)
    retry_budget: RetryBudgetConfig | None = None
    wait_for_capacity: bool = True
    affinity_ttl_ms: int | None = None  # opt-in cache affinity: a prefix's pin lives this long (5 min, 1 h)
    # with affinity on, a deployment's own cache lifetime where it differs (a provider with 1-hour caches)
    affinity_ttl_ms_by_deployment: Mapping[str, int] = field(default_factory=dict)
    hedges: Mapping[str, HedgePolicy] = field(default_factory=dict)  # opt-in hedging, by alias (core/hedge.py)

    def __post_init__(self) -> None:
        if not isinstance(self.strategy, Strategy):
            raise TypeError(f"TrafficConfig.strategy must be a Strategy, got {self.strategy!r}")
        for name, member in self.members.items():
            if not isinstance(member, Member):
                raise TypeError(f"TrafficConfig.members[{name!r}] must be a Member, got {member!r}")
        for name, limit in self.limits.items():
            if not isinstance(limit, DeploymentLimits):
                raise TypeError(f"TrafficConfig.limits[{name!r}] must be DeploymentLimits, got {limit!r}")
        if self.affinity_ttl_ms is not None and (not isinstance(self.affinity_ttl_ms, int) or self.affinity_ttl_ms < 1):
            raise ValueError(f"TrafficConfig.affinity_ttl_ms must be an int >= 1, got {self.affinity_ttl_ms!r}")
        for name, ttl_ms in self.affinity_ttl_ms_by_deployment.items():
            if isinstance(ttl_ms, bool) or not isinstance(ttl_ms, int) or ttl_ms < 1:
                raise ValueError(
                    f"TrafficConfig.affinity_ttl_ms_by_deployment[{name!r}] must be an int >= 1, got {ttl_ms!r}"
                )
        for alias, hedge in self.hedges.items():
            if not isinstance(hedge, HedgePolicy):
                raise TypeError(f"TrafficConfig.hedges[{alias!r}] must be a HedgePolicy, got {hedge!r}")
        object.__setattr__(self, "hedges", MappingProxyType(dict(self.hedges)))
        object.__setattr__(self, "members", MappingProxyType(dict(self.members)))
        object.__setattr__(self, "limits", MappingProxyType(dict(self.limits)))
        object.__setattr__(
            self, "affinity_ttl_ms_by_deployment", MappingProxyType(dict(self.affinity_ttl_ms_by_deployment))
        )


def rate_limit_reason(verdict: RateVerdict) -> str:
    """The ``SkipRecord`` reason of a deployment at its limit."""
    assert verdict.limit is not None
    return f"rate_limit_{verdict.limit.value}"


def _prefix_keys(req: ChatRequest) -> tuple[tuple[str, int | None], ...]:
    """The keys of the request's cacheable prefixes (core/affinity.py), the longest first, each with
    the lifetime its marker asked for (None: the deployment's)."""
    return tuple((hashlib.sha256(repr(p.parts).encode("utf-8")).hexdigest(), p.ttl_ms) for p in cache_prefixes(req))


def header_limit_reason(block: HeaderBlock) -> str:
    """The ``SkipRecord`` reason of a deployment its provider reported at 0 remaining."""
    return f"rate_limit_header:{block.header}"


def _stopped_at(now_ms: int) -> Callable[[], int]:
    """A clock that reads ``now_ms``."""
    return lambda: now_ms


class Traffic:
    """The traffic port of one Router (see the module docstring)."""

    __slots__ = (
        "_balanced", "_blocks", "_ewma", "_hedge_tokens", "_in_flight", "_pins", "_store", "_waiters", "config",
    )  # fmt: skip

    def __init__(self, config: TrafficConfig | None = None, store: TrafficStore | None = None) -> None:
        self.config = config or TrafficConfig()
        # whether a strategy can order the groups at all (core/balance.balances): read per call, decided once
        self._balanced = balances(self.config.strategy, self.config.members)
        self._store: TrafficStore = store or MemoryTrafficStore()
        self._in_flight: dict[str, int] = {}
        self._ewma: dict[str, int] = {}
        self._pins: dict[str, Pin] = {}  # cacheable prefix -> its pin
        self._waiters = asyncio.Lock()  # FIFO: asyncio.Lock wakes its waiters in arrival order
        self._hedge_tokens: dict[str, int] = {}  # alias -> hedge bucket (thousandths), per process
        self._blocks: dict[str, HeaderBlock] = {}  # deployment -> held back by its provider's headers

    @property
    def store(self) -> TrafficStore:
        """Where the windows and buckets live."""
        return self._store

    # --- balancing (process-local snapshot) -----------------------------------------------------

    def order(
        self,
        chain: tuple[ChainEntry, ...],
        draws: tuple[float, ...],
        req: ChatRequest | None = None,
        now_ms: int = 0,
    ) -> tuple[ChainEntry, ...]:
        """The chain with each deployment group ordered by the strategy (core/balance.py), then,
        with cache affinity on, the deployment its longest pinned prefix is pinned to first in its
        group (core/affinity.py). A request none of whose prefixes has a live pin pins them all here,
        before anything is sent."""
        if self._balanced:
            snapshot = BalanceSnapshot(in_flight=dict(self._in_flight), ewma_ms=dict(self._ewma))
            chain = order_chain(chain, self.config.members, self.config.strategy, snapshot, draws)
        ttl_ms = self.config.affinity_ttl_ms
        if ttl_ms is None or req is None or not chain:
            return chain
        keys = _prefix_keys(req)
        pinned = pinned_deployment(tuple(self._pins.get(k) for k, _ in keys), now_ms)
        if pinned is not None:
            return pin_first(chain, dict(self.config.members), pinned)
        if len(self._pins) >= MAX_PINS:  # forget the expired pins before adding one
            self._pins = {k: v for k, v in self._pins.items() if pin_live(v.pinned_at_ms, v.ttl_ms, now_ms)}
        for key, marker_ttl_ms in keys:
            self._pins[key] = self._pin(chain[0].provider.value, ttl_ms, marker_ttl_ms, now_ms)
        return chain

    def _pin(self, deployment: str, ttl_ms: int, marker_ttl_ms: int | None, now_ms: int) -> Pin:
        """A pin to ``deployment`` from ``now_ms``, for the cache lifetime its marker asked for, else
        the deployment's own (core/affinity.py)."""
        by = dict(self.config.affinity_ttl_ms_by_deployment)
        return Pin(deployment=deployment, pinned_at_ms=now_ms, ttl_ms=pin_ttl_ms(ttl_ms, by, deployment, marker_ttl_ms))

    def confirm_pin(self, req: ChatRequest, provider: ProviderId, clock: Callable[[], int]) -> None:
        """Reserve-then-confirm: the deployment that answered is the prefix's pin from now on, for a
        whole lifetime from ``clock()`` (read only with cache affinity on: a success per call). A pin
        taken at ordering for a deployment that was then skipped (cooling, at a limit) moves to the one
        whose cache now holds the prefix; a pin to the deployment that answered restarts its lifetime,
        as the provider's cache does when it is used."""
        ttl_ms = self.config.affinity_ttl_ms
        if ttl_ms is None:
            return
        now_ms = clock()
        for key, marker_ttl_ms in _prefix_keys(req):
            self._pins[key] = self._pin(provider.value, ttl_ms, marker_ttl_ms, now_ms)

    def draws(self, draw: Callable[[], float], chain: tuple[ChainEntry, ...]) -> tuple[float, ...]:
        """The draws ``order`` needs for ``chain`` (none when nothing is balanced: the router's
        random sequence, which seeds the kernel's jitter, is left untouched)."""
        if not self._balanced:
            return ()
        return tuple(draw() for _ in range(draws_needed(chain)))

    def started(self, provider: ProviderId) -> None:
        """An attempt on ``provider`` is in flight."""
        name = name_of(provider)  # once, and not .value: an Enum's .value is two Python calls, per attempt
        self._in_flight[name] = self._in_flight.get(name, 0) + 1

    def finished(self, provider: ProviderId) -> None:
        """An attempt on ``provider`` ended."""
        name = name_of(provider)
        self._in_flight[name] = max(0, self._in_flight.get(name, 0) - 1)

    def in_flight(self) -> Mapping[str, int]:
        """Attempts in flight by provider name (a copy)."""
        return dict(self._in_flight)

    def record_latency(self, provider: ProviderId, latency_ms: int) -> None:
        """One answered attempt's time to first token (or to answer): the latency EWMA's sample. Kept
        only when groups are balanced: only their ordering (:meth:`order`) reads the EWMAs."""
        if not self._balanced:
            return
        name = name_of(provider)
        self._ewma[name] = ewma_ms(self._ewma.get(name), max(0, latency_ms))

    # --- provider-side limits, from the answers' headers (process-local) ------------------------

    def observe_headers(self, provider: ProviderId, headers: Mapping[str, str], now_ms: int) -> None:
        """An answer's rate-limit headers: a limit at 0 holds the deployment back until its reset
        (core/ratelimit_headers.py); blocks only grow."""
        new = block_from(header_limits(headers, now_ms), now_ms)
        merged = merge_blocks(self._blocks.get(provider.value), new)
        if merged is not None:
            self._blocks[provider.value] = merged

    def header_block(self, provider: ProviderId, clock: Callable[[], int]) -> HeaderBlock | None:
        """The block that holds ``provider`` back now (``clock()``, read only when it has a block),
        or None (an ended one is forgotten)."""
        block = self._blocks.get(name_of(provider))
        if block is not None and not is_blocked(block, clock()):
            del self._blocks[provider.value]
            return None
        return block

    # --- rate limits (the store) ----------------------------------------------------------------

    def limits_of(self, provider: ProviderId) -> DeploymentLimits | None:
        """The deployment's declared limits, or None."""
        limits = self.config.limits.get(name_of(provider))
        return limits if limits is not None and limits.limited else None

    @staticmethod
    def estimate_tokens(req: ChatRequest) -> int:
        """The reservation's estimate: an upper bound on the prompt plus the output cap."""
        return worst_case_prompt_tokens(req) + req.max_tokens

    async def reserve(
        self, provider: ProviderId, req: ChatRequest, clock: Callable[[], int]
    ) -> RateTicket | RateVerdict | None:
        """A ticket in the deployment's window at ``clock()``, the verdict that refused it, or None
        (not limited: the clock is not read)."""
        limits = self.limits_of(provider)
        if limits is None:
            return None
        return await self._store.try_reserve(provider.value, limits, tokens=self.estimate_tokens(req), now_ms=clock())

    async def settle(self, ticket: RateTicket | None, usage: Usage | None, now_ms: int) -> None:
        """The request was sent: keep its place, with the tokens really used (the estimate if unknown)."""
        if ticket is None:
            return
        await self._store.settle(ticket, tokens=place_tokens(ticket.tokens, usage), now_ms=now_ms)

    async def release(self, ticket: RateTicket | None) -> None:
        """The request was never sent: give its place back."""
        if ticket is not None:
            await self._store.release(ticket)

    async def admit_call(
        self, chain: tuple[ChainEntry, ...], req: ChatRequest, now_ms: int, end_ms: int
    ) -> tuple[RateTicket | None, CapacityWait]:
        """Reserve the call's place at the first deployment of ``chain`` with room (atomically, in
        the store), so that no other call can take it between admission and the attempt; else
        core's verdict (wait until an instant, or refuse). ``(None, go)``: some deployment is unlimited."""
        verdicts: list[RateVerdict] = []
        at_now = _stopped_at(now_ms)  # one instant for every deployment of the call
        for entry in chain:
            outcome = await self.reserve(entry.provider, req, at_now)
            if outcome is None:
                return None, CapacityWait(go=True)  # an unlimited deployment can always take it
            if isinstance(outcome, RateTicket):
                return outcome, CapacityWait(go=True)
            verdicts.append(outcome)
        return None, capacity_wait(tuple(verdicts), now_ms, end_ms)

    @property
    def waiters(self) -> asyncio.Lock:
        """The FIFO queue of calls waiting for capacity."""
        return self._waiters

    # --- retry budget (the store) ---------------------------------------------------------------

    async def retry_allowed(self, provider: ProviderId, failure: AttemptFailure) -> bool:
        """Charge the provider's bucket for a retryable failure; whether a retry is still allowed."""
        budget = self.config.retry_budget
        if budget is None or not costs_token(failure):
            return True
        return await self._store.retry_failure(provider.value, budget)

    async def succeeded(self, provider: ProviderId) -> None:
        """Refund the provider's bucket for a success."""
        budget = self.config.retry_budget
        if budget is not None:
            await self._store.retry_success(provider.value, budget)

    # --- hedging (process-local buckets; core/hedge.py) -----------------------------------------

    def hedge_policy(self, alias: str) -> HedgePolicy | None:
        """The alias's hedge policy, or None (no hedging)."""
        return self.config.hedges.get(alias)

    def hedge_call(self, alias: str, policy: HedgePolicy) -> int:
        """A hedge-enabled call started: its alias's bucket earns the ratio; the level after it."""
        tokens = earn(policy, self._hedge_tokens.get(alias, 0))
        self._hedge_tokens[alias] = tokens
        return tokens

    def hedge_tokens(self, alias: str) -> int:
        """The alias's bucket (thousandths of a hedge)."""
        return self._hedge_tokens.get(alias, 0)

    def hedge_sent(self, alias: str) -> None:
        """A hedge was sent: it costs one whole token (core/hedge.py's decision checked it is there)."""
        self._hedge_tokens[alias] = spend(self._hedge_tokens.get(alias, 0))

    def hedge_refund(self, alias: str, policy: HedgePolicy) -> None:
        """A hedge decided but never sent (the ledger or a slot refused it): its token goes back."""
        self._hedge_tokens[alias] = min(policy.burst_milli, self._hedge_tokens.get(alias, 0) + MILLI)

    async def retry_spent(self, providers: tuple[ProviderId, ...]) -> frozenset[str]:
        """The names among ``providers`` whose retry budget allows no extra request (read, not charged)."""
        budget = self.config.retry_budget
        if budget is None:
            return frozenset()
        spent = set()
        for provider in providers:
            if not retry_allowed(budget, await self._store.retry_tokens_milli(provider.value, budget)):
                spent.add(provider.value)
        return frozenset(spent)
