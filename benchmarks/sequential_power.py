"""Monte-Carlo of the sequential sign test (falsification/sequential.py): how often a row ends each way.

For a per-seed success probability ``p`` (P(one seed's value meets the threshold)) and a seed bound,
it runs the exact procedure of :class:`falsification.sequential.SignTest` many times and prints the
share of runs that end *survived* (e_for reached 1/alpha), *refuted* (e_against did) and
*undecided* at the bound (which a row counts as falsified), and the number of seeds used. This is
how H0-LATENCY's bound of 100 seeds was chosen (2026-11-30)::

    python -m benchmarks.sequential_power --p 0.75 0.8 0.82 0.86 0.5 --bound 40 100 --runs 20000
"""

from __future__ import annotations

import argparse
import random
import sys
from collections import Counter

from falsification.sequential import SignTest


def one_run(p: float, bound: int, rng: random.Random, alpha: float) -> tuple[str, int]:
    """One sequential run over at most ``bound`` seeds: its outcome and the seeds it used."""
    test = SignTest(threshold=0.5, alpha=alpha)
    for _ in range(bound):
        test.update(1.0 if rng.random() < p else 0.0)
        if test.decided:
            break
    if test.survived:
        return "survived", len(test.values)
    return ("refuted" if test.e_against >= 1 / alpha else "undecided"), len(test.values)


def main(argv: list[str] | None = None) -> int:
    """Print one line per (p, bound)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--p", type=float, nargs="+", required=True, help="per-seed success probabilities")
    parser.add_argument("--bound", type=int, nargs="+", default=[100], help="seed bounds (MAX_SEEDS)")
    parser.add_argument("--runs", type=int, default=20_000)
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    for p in args.p:
        for bound in args.bound:
            results = [one_run(p, bound, rng, args.alpha) for _ in range(args.runs)]
            shares = Counter(outcome for outcome, _ in results)
            used = sorted(n for _, n in results)
            cells = ", ".join(f"{k} {shares[k] / args.runs:.2%}" for k in ("survived", "refuted", "undecided"))
            print(
                f"p {p:.2f}, bound {bound}: {cells}; seeds used median {used[len(used) // 2]}, "
                f"p95 {used[int(len(used) * 0.95)]}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
