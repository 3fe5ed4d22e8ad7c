"""Print mutmut's score over ``core/`` from ``mutmut results --all true`` (not the stats JSON).

Fails only when no mutant was considered at all, or when the score is below
``MUTATION_MIN_SCORE`` (default 0: report, no floor yet).
"""

from __future__ import annotations

import collections
import os
import subprocess
import sys

CAUGHT = {"killed", "timeout", "caught by type check"}
IGNORED = {"skipped"}


def main() -> int:
    """Read every mutant's status, print the counts and the score, apply the floor."""
    out = subprocess.run(["mutmut", "results", "--all", "true"], capture_output=True, text=True, check=True).stdout
    counts = collections.Counter(line.rsplit(": ", 1)[1].strip() for line in out.splitlines() if ": " in line)
    considered = sum(n for status, n in counts.items() if status not in IGNORED)
    caught = sum(n for status, n in counts.items() if status in CAUGHT)
    print("mutants by status:", dict(sorted(counts.items())))
    if considered == 0:
        print("no mutants considered: are source_paths right, is every function decorated?")
        return 1
    score = 100 * caught / considered
    floor = float(os.environ.get("MUTATION_MIN_SCORE", "0"))
    print(f"mutation score of core/: {score:.1f} % ({caught} caught of {considered}); floor {floor:.0f} %")
    survivors = [line.split(":")[0].strip() for line in out.splitlines() if line.rstrip().endswith(": survived")]
    for name in survivors[:40]:
        print(f"  survived: {name}")
    return 0 if score >= floor else 1


if __name__ == "__main__":
    sys.exit(main())
