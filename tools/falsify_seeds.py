"""Seed stability of the falsification verdicts: the same rows under several seed bases, compared.

Issue 18's "done when": no row's verdict changes with the seed environment variable. This tool
checks it. ``run`` runs ``pytest`` over the randomised rows (or the paths given after ``--``) once
per ``--base``, with ``ROUTEPROOF_FALSIFY_SEED=<base>`` and the reports written to
``<out>/seed-<base>/``, then compares. ``compare`` compares report directories that already exist
(e.g. the one ``tox -e falsify`` wrote under ``reports/`` and one per other base)::

    python tools/falsify_seeds.py run --base 11 --base 101                  # the randomised rows
    python tools/falsify_seeds.py run --base 101 -- falsification/test_latency_sla.py
    python tools/falsify_seeds.py compare reports /tmp/seeds/seed-101

The comparison prints one line per row: its verdict under each directory ("-" where it was not
run) and STABLE or CHANGED, plus whether the row's seeds moved with the base (a row whose SEEDS text
is the same in every directory is deterministic or pinned: the variable cannot change it). It exits
1 when any row's verdict differs between two directories in which it ran, else 0.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# every row whose seeds ROUTEPROOF_FALSIFY_SEED moves (falsification/seeds.py's ``base``)
RANDOMISED = (
    "falsification/test_backoff_rows.py",
    "falsification/test_h0_egress.py",
    "falsification/test_h0_latency.py::test_h0_latency_cascade_vs_single_provider",
    "falsification/test_latency_sla.py",
    "falsification/test_mpa003_budget.py",
    "falsification/test_mpa003_router.py",
    "falsification/test_mpa005_translation.py",
    "falsification/test_mpa006_streaming.py",
    "falsification/test_mpa007_chaos.py",
    "falsification/test_traffic_balance.py::test_traffic_weighted_over_seeds_in_virtual_time",  # issue 32
    "falsification/test_traffic_limits.py::test_traffic_retry_budget_bounds_a_storm_and_spares_rare_failures",
    "falsification/test_traffic_hedge.py",  # issue 32 item 4 (3 seeds from the base, real sockets: ~2 min)
    "falsification/test_traffic_affinity.py",  # issue 32, second stop
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Seen:
    """One row as one report directory recorded it."""

    verdict: str
    seeds: str


def load(directory: Path) -> dict[str, Seen]:
    """The rows of ``directory/verdicts.json`` that were run, by id."""
    rows = json.loads((directory / "verdicts.json").read_text(encoding="utf-8"))
    return {
        str(row["id"]): Seen(verdict=str(row["verdict"]), seeds=str(row.get("seeds", "")))
        for row in rows
        if row["verdict"] != "not run"
    }


def compare(runs: dict[str, dict[str, Seen]]) -> tuple[list[str], list[str]]:
    """The report lines and the ids of the rows whose verdict changed between runs."""
    ids = list(dict.fromkeys(row for seen in runs.values() for row in seen))
    width = max((len(i) for i in ids), default=2)
    names = list(runs)
    lines = [f"{'row':<{width}}  " + "  ".join(f"{n:>12}" for n in names) + "  stability  seeds"]
    changed: list[str] = []
    for row in ids:
        seen = {name: runs[name].get(row) for name in names}
        verdicts = {s.verdict for s in seen.values() if s is not None}
        seeds = {s.seeds for s in seen.values() if s is not None}
        ran = sum(s is not None for s in seen.values())
        if len(verdicts) > 1:
            changed.append(row)
        stability = "CHANGED" if len(verdicts) > 1 else ("STABLE" if ran > 1 else "one run")
        moved = "moved with the base" if len(seeds) > 1 else ("fixed" if ran > 1 else "")
        cells = "  ".join(f"{s.verdict if s is not None else '-':>12}" for s in seen.values())
        lines.append(f"{row:<{width}}  {cells}  {stability:<9}  {moved}")
    lines.append(f"{len(ids)} rows, {len(changed)} changed verdict" + (f": {', '.join(changed)}" if changed else ""))
    return lines, changed


def run_base(seed: int, out: Path, paths: Sequence[str]) -> Path:
    """Run ``pytest`` over ``paths`` with every row's seed base set to ``seed``; the report directory."""
    directory = out / f"seed-{seed}"
    env = dict(os.environ)
    env["ROUTEPROOF_FALSIFY_SEED"] = str(seed)
    env.pop("ROUTEPROOF_H0_LATENCY_SEED", None)  # one base for every row
    env["ROUTEPROOF_REPORT_DIR"] = str(directory)
    env.setdefault("HYPOTHESIS_PROFILE", "falsify")
    command = [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:randomly", *paths]
    print(f"== ROUTEPROOF_FALSIFY_SEED={seed}: {' '.join(command)}", flush=True)
    proc = subprocess.run(command, cwd=ROOT, env=env, check=False)
    print(f"== seed base {seed}: pytest exit {proc.returncode} (1 = some row falsified)", flush=True)
    return directory


def main(argv: list[str] | None = None) -> int:
    """``run`` the rows under several seed bases and compare, or ``compare`` existing report directories."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run the rows once per --base, then compare")
    run.add_argument("--base", type=int, action="append", required=True, help="a seed base (repeat: at least 2)")
    run.add_argument("--out", type=Path, default=ROOT / "reports" / "seeds", help="where the per-base reports go")
    run.add_argument("paths", nargs="*", help="pytest paths/node ids after -- (default: the randomised rows)")
    cmp = sub.add_parser("compare", help="compare report directories (each with verdicts.json)")
    cmp.add_argument("dirs", nargs="+", type=Path)
    args = parser.parse_args(argv)
    if args.command == "run":
        if len(set(args.base)) < 2:
            parser.error("give at least two different --base values")
        dirs = [run_base(seed, args.out, args.paths or RANDOMISED) for seed in args.base]
        names = [f"base {seed}" for seed in args.base]
    else:
        dirs = args.dirs
        names = [str(d) for d in dirs]
    missing = [d for d in dirs if not (d / "verdicts.json").is_file()]
    if missing:
        print(f"no verdicts.json in {', '.join(map(str, missing))}")
        return 2
    if args.command == "run":
        for name, directory in zip(names, dirs, strict=True):
            print(f"{name}: {directory}")
    lines, changed = compare({name: load(d) for name, d in zip(names, dirs, strict=True)})
    print("\n".join(lines))
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
