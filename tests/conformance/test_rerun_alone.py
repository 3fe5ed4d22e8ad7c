"""A case that failed only timing checks while other cases ran is run once more, alone; any other
failure stands as it is (``run_suite(rerun_alone=True)``, the ``run`` command's default)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from routeproof.conformance.cases import load_cases, select
from routeproof.conformance.report import write_report
from routeproof.conformance.run import RunResult, run_suite

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT / "conformance" / "harnesses" / "routeproof_harness.py"
pytestmark = pytest.mark.asyncio

# routeproof's own harness behind a shim: the first harness process started (no marker file yet)
# alters each call's outcome; every later process passes the outcomes on as they are.
SHIM = """
import json, os, subprocess, sys
marker, mode = sys.argv[1], sys.argv[2]
first = not os.path.exists(marker)
with open(marker, "a") as f:
    f.write("started\\n")
real = subprocess.Popen([sys.executable, {real!r}], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
for line in sys.stdin:
    real.stdin.write(line)
    real.stdin.flush()
    if json.loads(line)["op"] == "stop":
        break
    reply = json.loads(real.stdout.readline())
    if first and reply.get("op") == "outcome":
        if mode == "late":
            reply["elapsed_ms"] = reply.get("elapsed_ms", 0) + 400  # as if the machine stalled 0.4 s
        else:
            reply["class"] = "success"  # a wrong outcome: no load explains it
    print(json.dumps(reply), flush=True)
real.wait(10)
"""

CASE = "retryable.last-4xx-ends-at-once"  # expects the call to end within [0, 100] ms


async def _run(tmp_path: Path, mode: str, *, rerun_alone: bool) -> tuple[RunResult, int]:
    shim = tmp_path / "shim.py"
    shim.write_text(SHIM.format(real=str(REAL)))
    marker = tmp_path / "started"
    cases = select(load_cases(ROOT / "conformance" / "cases"), [CASE])
    async with asyncio.timeout(60):
        result = await run_suite(
            cases, harness=f"{sys.executable} {shim} {marker} {mode}", jobs=1, rerun_alone=rerun_alone
        )
    return result, len(marker.read_text().splitlines())


async def test_a_late_call_under_load_is_run_again_alone_and_its_first_failure_is_kept(tmp_path: Path) -> None:
    result, harnesses = await _run(tmp_path, "late", rerun_alone=True)
    (case,) = result.results
    assert harnesses == 2  # a fresh harness for the lone run
    assert case.verdict == "pass", case.failures
    assert [f.check for f in case.failed_under_load] == ["elapsed"]
    assert float(case.failed_under_load[0].observed.split()[0]) >= 400
    report = write_report(result, tmp_path).read_text()
    assert "run again alone, pass; with other cases running: elapsed" in report
    assert "failed_under_load" in case.as_json()


async def test_without_the_rerun_the_late_call_fails(tmp_path: Path) -> None:
    result, harnesses = await _run(tmp_path, "late", rerun_alone=False)
    (case,) = result.results
    assert (case.verdict, harnesses, case.failed_under_load) == ("fail", 1, ())
    assert [f.check for f in case.failures] == ["elapsed"]
    assert "failed_under_load" not in case.as_json()


async def test_a_failure_that_is_not_timing_is_not_run_again(tmp_path: Path) -> None:
    result, harnesses = await _run(tmp_path, "wrong", rerun_alone=True)
    (case,) = result.results
    assert (case.verdict, harnesses, case.failed_under_load) == ("fail", 1, ())
    assert "outcome" in [f.check for f in case.failures]


@pytest.mark.parametrize(("flag", "code", "printed"), [((), 0, True), (("--no-rerun-alone",), 1, False)])
async def test_the_run_command_reruns_by_default_and_says_so(
    tmp_path: Path, flag: tuple[str, ...], code: int, printed: bool
) -> None:
    """``routeproof conformance run`` (what CI calls) reruns a late case alone unless told not to,
    and prints the first run's failure."""
    shim = tmp_path / "shim.py"
    shim.write_text(SHIM.format(real=str(REAL)))
    harness = f"{sys.executable} {shim} {tmp_path / 'started'} late"
    command = [sys.executable, "-m", "routeproof.cli", "conformance", "run", "--harness", harness]
    command += ["--only", CASE, "--reports", str(tmp_path / "reports"), *flag]
    proc = await asyncio.create_subprocess_exec(*command, cwd=ROOT, stdout=asyncio.subprocess.PIPE)
    async with asyncio.timeout(60):
        out, _ = await proc.communicate()
    assert proc.returncode == code, out.decode()
    assert (f"RUN AGAIN ALONE {CASE} (pass alone): elapsed: expected" in out.decode()) is printed
