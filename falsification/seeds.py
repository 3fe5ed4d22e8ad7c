"""Where the falsification rows take their seeds: one environment variable moves every row's seeds.

Each randomised row pre-registers a default seed base in its module. ``ROUTEPROOF_FALSIFY_SEED``, when
set, replaces every row's default base (H0-LATENCY also keeps its own ``ROUTEPROOF_H0_LATENCY_SEED``,
which wins for that row), so a second run with another base checks that no verdict depends on the
seeds: a row that samples a universal claim ("zero egress", "never past the cap") must find no
counterexample under any base, and a statistical row (H0-LATENCY, FALSIFY-MPA-007) judges its claim
over many seeds with a sequential test (:mod:`falsification.sequential`), not on one draw.

:func:`seed_range` renders the seeds a row used for its evidence (``SEEDS ...``).
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass

__all__ = ["ENV", "SubSeeds", "base", "seed_range"]

ENV = "ROUTEPROOF_FALSIFY_SEED"


def base(default: int, *, env: str | None = None) -> int:
    """The row's first seed: ``env`` (if given and set), else ``ROUTEPROOF_FALSIFY_SEED``, else ``default``."""
    for name in (env, ENV):
        if name is not None and (value := os.environ.get(name, "").strip()):
            try:
                return int(value)
            except ValueError:
                raise ValueError(f"{name} must be an integer seed, got {value!r}") from None
    return default


@dataclass(frozen=True, slots=True)
class SubSeeds:
    """Everything random in one run of a row's arms, derived from one pre-registered seed."""

    arrival: int
    provider: int
    jitter: int

    @classmethod
    def of(cls, row: str, seed: int, *, order: tuple[str, str, str]) -> SubSeeds:
        """Independent sub-seeds of ``seed`` for ``row``, drawn in ``order`` (a row's draw order is part of
        its pre-registration: ``random`` hashes the string seed ``row/seed`` with SHA-512)."""
        if sorted(order) != ["arrival", "jitter", "provider"]:
            raise ValueError(f"order must name arrival, provider and jitter once each, got {order!r}")
        rng = random.Random(f"{row}/{seed}")
        drawn = {name: rng.randrange(2**32) for name in order}
        return cls(arrival=drawn["arrival"], provider=drawn["provider"], jitter=drawn["jitter"])


def seed_range(seeds: list[int] | range) -> str:
    """``first..last (n)`` for consecutive seeds, else the list."""
    values = list(seeds)
    if not values:
        return "none"
    if len(values) == 1:
        return str(values[0])
    if values == list(range(values[0], values[0] + len(values))):
        return f"{values[0]}..{values[-1]} ({len(values)})"
    return ", ".join(map(str, values))
