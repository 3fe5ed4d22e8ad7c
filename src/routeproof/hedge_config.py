"""The ``[aliases.NAME]`` tables of ``agent.toml``: per-alias settings, today only budgeted hedging.

.. code-block:: toml

    [aliases.chat.hedge]          # opt-in: hedge calls of the alias "chat"
    delay_ms = 300                # a fixed delay after the attempt was sent ...
    # delay = "p95"               # ... or the deployment's observed p95 (delay_ms until 20 samples)
    max_extra_ratio = 0.1         # at most 10 % extra requests (a token bucket per alias)
    burst = 10                    # the bucket's size, in hedges (it starts empty)

Every value is checked when the file is loaded; a bad one is named with its key.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from routeproof.config.read import fail, read_int, read_micro, read_table
from routeproof.core.hedge import DEFAULT_BURST, DEFAULT_FALLBACK_DELAY_MS, MAX_DELAY_MS, MILLI, HedgePolicy

__all__ = ["parse_aliases"]

_ALIAS_KEYS = frozenset({"hedge"})
_HEDGE_KEYS = frozenset({"delay_ms", "delay", "max_extra_ratio", "burst"})
_DELAYS = ("fixed", "p95")


def _hedge(raw: object, where: str) -> HedgePolicy:
    table = read_table(raw, where, _HEDGE_KEYS)
    delay = table.get("delay", "fixed")
    if delay not in _DELAYS:
        raise fail(f"{where}.delay", delay, f"must be one of {list(_DELAYS)}")
    if delay == "fixed" and "delay_ms" not in table:
        raise fail(f"{where}.delay_ms", None, 'a fixed hedge delay needs delay_ms (or delay = "p95")')
    delay_ms = read_int(table, "delay_ms", where, DEFAULT_FALLBACK_DELAY_MS, minimum=0)
    if delay_ms > MAX_DELAY_MS:
        raise fail(f"{where}.delay_ms", delay_ms, f"must be <= {MAX_DELAY_MS} (the 30 s budget)")
    ratio_micro = read_micro(table, "max_extra_ratio", where, 100_000, maximum=1_000_000)
    if ratio_micro % 1000 or ratio_micro == 0:
        raise fail(f"{where}.max_extra_ratio", table.get("max_extra_ratio"), "must be in 0.001..1, in thousandths")
    burst = read_int(table, "burst", where, DEFAULT_BURST, minimum=1)
    if burst > 100:
        raise fail(f"{where}.burst", burst, "must be <= 100 hedges")
    return HedgePolicy(
        delay_ms=delay_ms, p95=delay == "p95", max_extra_ratio_milli=ratio_micro // 1000, burst_milli=burst * MILLI
    )


def parse_aliases(raw: object) -> Mapping[str, HedgePolicy]:
    """Each alias's hedge policy from the ``[aliases]`` table (absent: no alias hedges)."""
    if raw is None:
        return MappingProxyType({})
    if not isinstance(raw, dict):
        raise fail("aliases", raw, "must be a table of [aliases.NAME] tables")
    hedges: dict[str, HedgePolicy] = {}
    for alias, table in raw.items():
        where = f"aliases.{alias}"
        settings = read_table(table, where, _ALIAS_KEYS)
        if "hedge" in settings:
            hedges[str(alias)] = _hedge(settings["hedge"], f"{where}.hedge")
    return MappingProxyType(hedges)
