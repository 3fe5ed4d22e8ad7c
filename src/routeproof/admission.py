"""Admission control: bounded in-flight attempts, queued within the caller's deadline.

A router-wide limit and a per-provider limit (``max_in_flight``, ``max_in_flight_per_provider``)
bound how many attempts are in flight at once; an attempt beyond them waits here, in FIFO order,
before it starts. The per-provider default (100) equals the connection-pool size of httpx's and
aiohttp's default clients, so an admitted attempt never waits for a connection inside the pool,
where the wait would count against the provider's timeout. The time queued here is local, not the
provider's: the attempt is re-issued when its slot is granted (:func:`routeproof.core.admission.readmit`),
so queueing writes no attempt record and has no health effect. If the caller's deadline (or the
30 s budget) passes while an attempt queues, the call ends with :class:`AdmissionTimeout`.

The shell performs; the rule is in core.
"""

from __future__ import annotations

import asyncio
from types import TracebackType

from routeproof.call import loop_ms
from routeproof.core.admission import readmit, waited
from routeproof.core.kernel import Action, CallProvider, KernelState
from routeproof.core.types import ProviderKind
from routeproof.errors import ConfigError, DeadlineExceeded

__all__ = ["DEFAULT_MAX_IN_FLIGHT_PER_PROVIDER", "Admission", "AdmissionTimeout", "Slot"]

DEFAULT_MAX_IN_FLIGHT_PER_PROVIDER = 100
"""httpx's and aiohttp's default connection-pool size: admission, not the pool, does the queueing."""


class AdmissionTimeout(DeadlineExceeded):
    """The caller's deadline (or the 30 s budget) passed while an attempt waited for a local slot."""


class Slot:
    """The in-flight slots one attempt holds; released exactly once (``with slot:`` or ``release``)."""

    __slots__ = ("_held",)

    def __init__(self, held: tuple[asyncio.Semaphore, ...]) -> None:
        self._held = held

    def release(self) -> None:
        """Give the slots back (idempotent)."""
        held, self._held = self._held, ()
        for semaphore in held:
            semaphore.release()

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
    ) -> None:
        self.max_in_flight = _limit("max_in_flight", max_in_flight)
        self.max_in_flight_per_provider = _limit("max_in_flight_per_provider", max_in_flight_per_provider)
        self._router = asyncio.Semaphore(max_in_flight) if max_in_flight is not None else None
        self._providers: dict[ProviderKind, asyncio.Semaphore] = {}

    def _semaphores(self, kind: ProviderKind) -> tuple[asyncio.Semaphore, ...]:
        out: list[asyncio.Semaphore] = []
        if self.max_in_flight_per_provider is not None:
            semaphore = self._providers.get(kind)
            if semaphore is None:
                semaphore = self._providers[kind] = asyncio.Semaphore(self.max_in_flight_per_provider)
            out.append(semaphore)
        if self._router is not None:
            out.append(self._router)  # always after the provider's: one order, no deadlock
        return tuple(out)

    def in_flight(self, kind: ProviderKind | None = None) -> int:
        """Attempts holding a slot now, on ``kind`` or in all; for tests and metrics."""
        limit = self.max_in_flight_per_provider
        if kind is not None:
            semaphore = self._providers.get(kind)
            return 0 if semaphore is None or limit is None else limit - semaphore._value
        if self._router is not None and self.max_in_flight is not None:
            return self.max_in_flight - self._router._value
        return sum(0 if limit is None else limit - s._value for s in self._providers.values())

    async def admit(self, state: KernelState, action: CallProvider) -> tuple[KernelState, Action, Slot | None]:
        """Wait for ``action``'s slots within the call's end; the (possibly re-issued) action and
        its slot, or the kernel's end of the call (no slot) when the wait used up the time left."""
        semaphores = self._semaphores(action.entry.provider)
        held: list[asyncio.Semaphore] = []
        loop = asyncio.get_running_loop()
        try:
            for semaphore in semaphores:
                if semaphore.locked():
                    async with asyncio.timeout_at(state.plan.effective_end_ms / 1000):
                        await semaphore.acquire()
                else:
                    await semaphore.acquire()  # free: returns without yielding
                held.append(semaphore)
        except TimeoutError as exc:
            Slot(tuple(held)).release()
            queued_ms = loop_ms(loop.time()) - action.issued_at_ms
            raise AdmissionTimeout(
                f"caller deadline exceeded after {queued_ms} ms queued for a local in-flight slot "
                f"({action.entry.provider.value}: limit {self.max_in_flight_per_provider}, "
                f"router: limit {self.max_in_flight}); no request was sent for this attempt",
                attempts=state.records,
            ) from exc
        except BaseException:
            Slot(tuple(held)).release()
            raise
        slot = Slot(tuple(held))
        now_ms = loop_ms(loop.time())
        if not waited(action, now_ms):
            return state, action, slot
        state, again = readmit(state, now_ms)
        if not isinstance(again, CallProvider):
            slot.release()
            return state, again, None
        return state, again, slot
