"""In-process simulated providers for the large-N experiments on virtual time (looptime).

A :class:`SimProvider` is a real :class:`~routeproof.providers.protocol.Provider`: the router
drives it exactly as it drives an HTTP client. Each attempt draws from the provider's own seeded
``random.Random``: with probability ``failure_rate`` it fails (a 5xx after 50-300 ms, a 429 after
50-300 ms, or a hang that only the router's attempt timeout ends, in the proportions ``mix``);
otherwise it answers after a latency drawn uniformly from ``latency_s``. No socket is opened.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from dataclasses import dataclass

from routeproof.core.types import (
    AttemptFailure,
    ChatRequest,
    Choice,
    FailureKind,
    FinishReason,
    ProviderKind,
    ProviderResponse,
    StreamEvent,
    Usage,
)
from routeproof.errors import ProviderCallFailed

__all__ = ["FailureMix", "SimProvider"]


@dataclass(frozen=True, slots=True)
class FailureMix:
    """Relative weights of the failure kinds."""

    http_5xx: float = 1.0
    http_429: float = 0.0
    hang: float = 1.0


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
    ) -> None:
        self._kind = kind
        self._rng = random.Random(seed)
        self.failure_rate = failure_rate
        self.latency_s = latency_s
        self.mix = mix
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
        if rng.random() < self.failure_rate:
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
                AttemptFailure(kind=FailureKind.HTTP_STATUS, http_status=status, message=f"simulated {status}")
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
