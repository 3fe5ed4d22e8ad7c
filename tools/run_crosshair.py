"""Run CrossHair over every icontract condition in ``core/``; a counterexample fails the run.

Each core module is checked in its own CrossHair process (so one module's crash is reported
against it) with a per-condition timeout (CPU seconds, default 2; ``CROSSHAIR_CONDITION_TIMEOUT``), at the hash
seed ``PYTHONHASHSEED`` (default 0). A module whose CrossHair crashed is checked once more at the next
seed. Exit status: 0 when no module has a counterexample or a crash on both seeds, 1 otherwise.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

CORE = Path(__file__).resolve().parent.parent / "src" / "routeproof" / "core"
ENTRY = Path(__file__).resolve().parent / "crosshair_entry.py"  # CrossHair, with one of its own crashes mended


COUNTEREXAMPLE = re.compile(r":\d+: error: ")  # CrossHair's finding: "file:line: error: false when calling f(...)"
RERUN_SEED_STEP = 1  # a crashed module is checked again at the next hash seed
_SEEDS = 4_294_967_296  # PYTHONHASHSEED is 0..2**32-1: the seed after the last is 0


@dataclass(frozen=True)
class Checked:
    """One CrossHair process over one module: what it printed and how long it took."""

    target: Path
    seed: str
    result: subprocess.CompletedProcess[str]
    took: float

    @property
    def output(self) -> str:
        return (self.result.stdout + self.result.stderr).rstrip()

    @property
    def verdict(self) -> str:
        """``ok``; ``counterexample`` (CrossHair reported a condition broken); ``crash`` (it died itself)."""
        if self.result.returncode == 0:
            return "ok"
        return "counterexample" if COUNTEREXAMPLE.search(self.result.stdout) else "crash"


def _check(target: Path, timeout: str, seed: str) -> Checked:
    t0 = time.perf_counter()
    cmd = [
        sys.executable, str(ENTRY), "check", "--analysis_kind=icontract",
        f"--per_condition_timeout={timeout}", str(target),
    ]  # fmt: skip
    env = {**os.environ, "PYTHONHASHSEED": seed}
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env)
    return Checked(target, seed, done, time.perf_counter() - t0)


def main(argv: list[str]) -> int:
    """Check the modules named in ``argv`` (default: every core module that has a contract).

    A module whose CrossHair process crashed (a non-zero exit with no finding: a bug of CrossHair's
    own, which comes and goes with the hash seed and the CPU time its search gets) is checked once
    more at the next hash seed; that check's verdict is the module's, and the crash is printed. A
    counterexample is never checked again: it fails the run.
    """
    timeout = os.environ.get("CROSSHAIR_CONDITION_TIMEOUT", "2")
    seed = os.environ.get("PYTHONHASHSEED", "0")
    if not seed.isdigit():  # unset, or "random": the gate's seed, so that a failure can be run again
        seed = "0"
    targets = [Path(a) for a in argv] or sorted(
        p for p in CORE.rglob("*.py") if "icontract" in p.read_text(encoding="utf-8")
    )
    started = time.perf_counter()
    workers = int(os.environ.get("CROSSHAIR_WORKERS", str(os.cpu_count() or 1)))
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        first = list(pool.map(lambda target: _check(target, timeout, seed), targets))
        crashed = [c for c in first if c.verdict == "crash"]
        again_seed = str((int(seed) + RERUN_SEED_STEP) % _SEEDS)
        again = {c.target: c for c in pool.map(lambda c: _check(c.target, timeout, again_seed), crashed)}
    final = [again.get(c.target, c) for c in first]
    for checked in final:
        label = checked.verdict if checked.target not in again else f"{checked.verdict} (crashed at seed {seed})"
        print(f"crosshair {checked.target.name:<16} {label:<20} {checked.took:6.1f} s", flush=True)
    # what each crash and failure printed comes after the list, so that a log's tail (CI's) shows it
    for checked in crashed:
        name = checked.target.name
        print(f"---- crosshair {name}: crashed at PYTHONHASHSEED={seed}, checked again at {again_seed} ----")
        print(checked.output, flush=True)
    failed = [c for c in final if c.verdict != "ok"]
    for checked in failed:
        print(f"---- crosshair {checked.target.name}: {checked.verdict} at PYTHONHASHSEED={checked.seed} ----")
        print(checked.output, flush=True)
    print(
        f"crosshair: {len(targets)} modules, {time.perf_counter() - started:.1f} s, per-condition timeout {timeout} s,"
        f" PYTHONHASHSEED={seed} (the gate's is 0: tox.ini); crashed and checked again: {len(crashed)}"
    )
    if failed:
        print(f"crosshair found counterexamples or crashed twice in: {', '.join(c.target.name for c in failed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
