"""In-process simulated providers for the large-N experiments on virtual time (looptime).

A :class:`SimProvider` is a real :class:`~routeproof.providers.protocol.Provider`: the router
drives it exactly as it drives an HTTP client. Each attempt draws from the provider's own seeded
``random.Random``: with probability ``failure_rate`` it fails (a 5xx after 50-300 ms, a 429 after
50-300 ms, or a hang that only the router's attempt timeout ends, in the proportions ``mix``);
otherwise it answers after a latency drawn uniformly from ``latency_s``. No socket is opened.

Failures can instead come in *episodes*: given an :class:`EpisodeSchedule`, an attempt fails iff it
starts while the provider is degraded (the kind of failure is still drawn from ``mix``), and
``failure_rate`` is ignored. The schedule is a seeded alternating renewal process on the loop's
clock (seconds since ``origin``), so two runs with the same seed see the same outages.
"""

from __future__ import annotations

import asyncio
import bisect
import random
from collections.abc import AsyncIterator
from dataclasses import dataclass

from routeproof.core.types import (
    AttemptFailure,
    AttemptFailureKind,
    ChatRequest,
    Choice,
    FinishReason,
    ProviderKind,
    ProviderResponse,
    StreamEvent,
    Usage,
)
from routeproof.errors import ProviderCallFailed

__all__ = ["EpisodeSchedule", "FailureMix", "SimProvider"]


@dataclass(frozen=True, slots=True)
class FailureMix:
    """Relative weights of the failure kinds."""

    http_5xx: float = 1.0
    http_429: float = 0.0
    hang: float = 1.0


class EpisodeSchedule:
    """When one provider is degraded: alternating healthy and degraded periods, both exponential.

    Degraded periods have mean ``mean_degraded_s``; healthy periods have the mean that makes the
    long-run degraded fraction ``degraded_fraction``. The process starts in its stationary state
    (degraded with probability ``degraded_fraction``; by memorylessness the first period's remaining
    length has the same distribution as a whole one). Periods are drawn lazily from a
    ``random.Random(seed)``, so the schedule depends only on the seed and the parameters.
    """

    def __init__(self, *, seed: int, degraded_fraction: float, mean_degraded_s: float) -> None:
        if not 0 < degraded_fraction < 1:
            raise ValueError(f"degraded_fraction must be in (0, 1), got {degraded_fraction!r}")
        if mean_degraded_s <= 0:
            raise ValueError(f"mean_degraded_s must be > 0, got {mean_degraded_s!r}")
        self.degraded_fraction = degraded_fraction
        self.mean_degraded_s = mean_degraded_s
        self.mean_healthy_s = mean_degraded_s * (1 - degraded_fraction) / degraded_fraction
        self._rng = random.Random(seed)
        self._degraded_first = self._rng.random() < degraded_fraction
        self._edges: list[float] = [0.0]  # period i is [edges[i], edges[i + 1])

    def _extend_past(self, t: float) -> None:
        while self._edges[-1] <= t:
            degraded = self._is_degraded_period(len(self._edges) - 1)
            mean = self.mean_degraded_s if degraded else self.mean_healthy_s
            self._edges.append(self._edges[-1] + self._rng.expovariate(1 / mean))

    def _is_degraded_period(self, index: int) -> bool:
        return (index % 2 == 0) == self._degraded_first

    def degraded(self, t: float) -> bool:
        """Whether the provider is degraded ``t`` seconds after the schedule's origin."""
        if t < 0:
            return False
        self._extend_past(t)
        return self._is_degraded_period(bisect.bisect_right(self._edges, t) - 1)

    def degraded_time(self, horizon_s: float) -> float:
        """Seconds spent degraded in ``[0, horizon_s)`` (to report the realised fraction)."""
        self._extend_past(horizon_s)
        total = 0.0
        for i in range(len(self._edges) - 1):
            if self._is_degraded_period(i):
                total += max(0.0, min(self._edges[i + 1], horizon_s) - self._edges[i])
        return total

    def episodes(self, horizon_s: float) -> int:
        """Degraded periods that start (or are under way) in ``[0, horizon_s)``."""
        self._extend_past(horizon_s)
        return sum(1 for i in range(len(self._edges) - 1) if self._is_degraded_period(i) and self._edges[i] < horizon_s)


class SimProvider:
    """A provider whose latency and failures are drawn from a seeded distribution."""

    def __init__(
        self,
        kind: ProviderKind,
        *,
        seed: int,
        failure_rate: float,
        latency_s: tuple[float, float] = (0.5, 2.0),
        mix: FailureMix = FailureMix(),
        episodes: EpisodeSchedule | None = None,
        origin: float = 0.0,
    ) -> None:
        self._kind = kind
        self._rng = random.Random(seed)
        self.failure_rate = failure_rate
        self.latency_s = latency_s
        self.mix = mix
        self.episodes = episodes
        self.origin = origin
        self.calls = 0
        self.failures = 0

    @property
    def kind(self) -> ProviderKind:
        """The simulated provider's kind."""
        return self._kind

    @property
    def name(self) -> str:
        """The kind's value."""
        return f"sim-{self._kind.value}"

    @property
    def base_url(self) -> str | None:
        """A public-looking URL (never contacted): the endpoint tier of a remote provider."""
        return f"https://{self._kind.value}.sim.invalid"

    async def complete(self, request: ChatRequest, model: str, *, timeout_at: float) -> ProviderResponse:
        """One attempt: sleep, then answer or fail, as drawn."""
        self.calls += 1
        rng = self._rng
        if self.episodes is not None:
            failing = self.episodes.degraded(asyncio.get_running_loop().time() - self.origin)
        else:
            failing = rng.random() < self.failure_rate
        if failing:
            self.failures += 1
            kinds = ("5xx", "429", "hang")
            weights = (self.mix.http_5xx, self.mix.http_429, self.mix.hang)
            what = rng.choices(kinds, weights)[0]
            if what == "hang":
                loop = asyncio.get_running_loop()
                await asyncio.sleep(max(0.0, timeout_at - loop.time()) + 60.0)  # the router's timeout ends it
                raise AssertionError("a hang outlived the router's attempt timeout")
            await asyncio.sleep(rng.uniform(0.05, 0.3))
            status = 503 if what == "5xx" else 429
            raise ProviderCallFailed(
                AttemptFailure(kind=AttemptFailureKind.HTTP_STATUS, http_status=status, message=f"simulated {status}")
            )
        await asyncio.sleep(rng.uniform(*self.latency_s))
        return ProviderResponse(
            id=f"sim-{self.calls}",
            usage=Usage(prompt_tokens=10, completion_tokens=5),
            choices=(Choice(content="ok"),),
            finish_reason=FinishReason.STOP,
            provider=self._kind,
            model=model,
        )

    def stream(
        self, request: ChatRequest, model: str, *, timeout_at: float, idle_timeout_s: float | None = None
    ) -> AsyncIterator[StreamEvent]:
        """Not simulated."""
        raise NotImplementedError("SimProvider does not stream")

    async def aclose(self) -> None:
        """Nothing to release."""
