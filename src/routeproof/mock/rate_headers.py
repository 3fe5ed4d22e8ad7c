"""A mock provider's own rate limit, reported in its answers' headers as the real providers do.

``MockRateLimit(requests=N, window_s=W)``: a fixed window of ``W`` seconds (starting at the first
request) admits ``N`` requests; every answer carries the shape's headers (OpenAI/Azure:
``x-ratelimit-limit-requests``, ``x-ratelimit-remaining-requests``, ``x-ratelimit-reset-requests``
as a duration like ``6m0s``/``1.5s``/``20ms``, and the ``-tokens`` pair with ``tokens`` given;
Anthropic: ``anthropic-ratelimit-requests-*`` with an RFC 3339 reset); a request past the limit is
answered 429 with the same headers and ``retry-after``. With ``report_only`` the headers are sent but
nothing is refused (a provider whose limit the router must learn from the headers alone).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime

from routeproof.mock.script import MockScriptError, Shape

__all__ = ["MockRateLimit", "RateWindow", "openai_duration"]


@dataclass(frozen=True, slots=True, kw_only=True)
class MockRateLimit:
    """``requests`` per fixed window of ``window_s`` seconds; ``tokens`` (optional) is only reported."""

    requests: int
    window_s: float = 60.0
    tokens: int | None = None
    report_only: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.requests, int) or self.requests < 1:
            raise MockScriptError(f"rate limit requests must be an int >= 1, got {self.requests!r}")
        if not self.window_s > 0:
            raise MockScriptError(f"rate limit window_s must be > 0, got {self.window_s!r}")


def openai_duration(seconds: float) -> str:
    """A reset duration the way OpenAI writes it: ``6m0s``, ``1.5s``, ``20ms``."""
    ms = max(0, math.ceil(seconds * 1000))
    if ms < 1000:
        return f"{ms}ms"
    minutes, rest_ms = divmod(ms, 60_000)
    secs = f"{rest_ms / 1000:g}s"
    return f"{minutes}m{secs}" if minutes else secs


class RateWindow:
    """The mock's window: how many requests it has taken, and when it resets."""

    def __init__(self, limit: MockRateLimit, shape: Shape) -> None:
        self.limit = limit
        self.shape = shape
        self._start: float | None = None
        self._taken = 0
        self.refused = 0

    def take(self, now_s: float) -> tuple[bool, tuple[tuple[str, str], ...]]:
        """Count one request at wall time ``now_s``: whether it is within the limit, and the headers."""
        if self._start is None or now_s >= self._start + self.limit.window_s:
            self._start, self._taken = now_s, 0
        allowed = self._taken < self.limit.requests or self.limit.report_only
        if self._taken < self.limit.requests:
            self._taken += 1
        else:
            self.refused += not self.limit.report_only
        remaining = self.limit.requests - self._taken
        reset_s = self._start + self.limit.window_s
        return allowed, self._headers(remaining, reset_s, now_s)

    def _headers(self, remaining: int, reset_s: float, now_s: float) -> tuple[tuple[str, str], ...]:
        lim = self.limit
        if self.shape is Shape.ANTHROPIC:
            reset = datetime.fromtimestamp(math.ceil(reset_s), UTC).isoformat().replace("+00:00", "Z")
            out = [("anthropic-ratelimit-requests-limit", str(lim.requests)),
                   ("anthropic-ratelimit-requests-remaining", str(remaining)),
                   ("anthropic-ratelimit-requests-reset", reset)]  # fmt: skip
            if lim.tokens is not None:
                out += [("anthropic-ratelimit-tokens-limit", str(lim.tokens)),
                        ("anthropic-ratelimit-tokens-remaining", str(lim.tokens)),
                        ("anthropic-ratelimit-tokens-reset", reset)]  # fmt: skip
            return tuple(out)
        duration = openai_duration(reset_s - now_s)
        out = [("x-ratelimit-limit-requests", str(lim.requests)),
               ("x-ratelimit-remaining-requests", str(remaining)),
               ("x-ratelimit-reset-requests", duration)]  # fmt: skip
        if lim.tokens is not None:
            out += [("x-ratelimit-limit-tokens", str(lim.tokens)),
                    ("x-ratelimit-remaining-tokens", str(lim.tokens)),
                    ("x-ratelimit-reset-tokens", duration)]  # fmt: skip
        return tuple(out)
