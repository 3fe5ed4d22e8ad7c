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

__all__ = ["ENV", "base", "seed_range"]

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
