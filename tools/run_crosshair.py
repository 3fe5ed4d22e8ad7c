"""Run CrossHair over every icontract condition in ``core/``; a counterexample fails the run.

Each core module is checked in its own CrossHair process (so one module's crash is reported
against it) with a per-condition timeout (CPU seconds, default 2; ``CROSSHAIR_CONDITION_TIMEOUT``).
Exit status: 0 when no module has a counterexample or a crash, 1 otherwise.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

CORE = Path(__file__).resolve().parent.parent / "src" / "routeproof" / "core"
ENTRY = Path(__file__).resolve().parent / "crosshair_entry.py"  # CrossHair, with one of its own crashes mended


def main(argv: list[str]) -> int:
    """Check the modules named in ``argv`` (default: every core module that has a contract)."""
    timeout = os.environ.get("CROSSHAIR_CONDITION_TIMEOUT", "2")
    targets = [Path(a) for a in argv] or sorted(
        p for p in CORE.rglob("*.py") if "icontract" in p.read_text(encoding="utf-8")
    )
    failed: list[str] = []
    started = time.perf_counter()

    def check(target: Path) -> tuple[subprocess.CompletedProcess[str], float]:
        t0 = time.perf_counter()
        cmd = [
            sys.executable, str(ENTRY), "check", "--analysis_kind=icontract",
            f"--per_condition_timeout={timeout}", str(target),
        ]  # fmt: skip
        return subprocess.run(cmd, capture_output=True, text=True, check=False), time.perf_counter() - t0

    workers = int(os.environ.get("CROSSHAIR_WORKERS", str(os.cpu_count() or 1)))
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        results = list(pool.map(check, targets))
    for target, (result, took) in zip(targets, results, strict=True):
        verdict = "ok" if result.returncode == 0 else "COUNTEREXAMPLE/CRASH"
        print(f"crosshair {target.name:<16} {verdict:<20} {took:6.1f} s", flush=True)
        if result.returncode != 0:
            failed.append(target.name)
            print(result.stdout + result.stderr, flush=True)
    print(
        f"crosshair: {len(targets)} modules, {time.perf_counter() - started:.1f} s, per-condition timeout {timeout} s,"
        f" PYTHONHASHSEED={os.environ.get('PYTHONHASHSEED', 'random')} (the gate's is 0: tox.ini)"
    )
    if failed:
        print(f"crosshair found counterexamples or crashed in: {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
