"""The stray-loop guard (tests/support.py) closes the loop looptime makes for a sync test, even when
the test's own ``asyncio.run`` unset it: the EXACT-MONEY row, run alone, used to end rc 1 on it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROBE = Path(__file__).with_name("stray_loop_probe.py")


def test_a_sync_test_calling_asyncio_run_first_in_its_process_leaks_no_loop() -> None:
    """A fresh pytest process whose only test is sync and calls asyncio.run exits 0, no unclosed loop."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "src"), str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", str(PROBE)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-3000:]
    assert "unclosed event loop" not in output, output[-3000:]
