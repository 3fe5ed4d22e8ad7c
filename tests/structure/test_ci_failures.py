"""tools/ci_failures.py: a failed tox env's own last lines are printed again after tox's summary."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tools.ci_failures import TAIL_LINES, failed_envs

ROOT = Path(__file__).resolve().parents[2]

LOG = """\
lint: install_deps> python -I -m pip install 'ruff>=0.8'
lint: commands[0]> ruff check src
All checks passed!
lint: OK ✔ in 2.96 seconds
contracts: install_package_deps> python -I -m pip install crosshair-tool==0.0.113
contracts: commands[0]> python tools/run_crosshair.py
crosshair admission.py     ok                     16.4 s
crosshair ledger.py        COUNTEREXAMPLE/CRASH   38.0 s
/src/routeproof/core/ledger.py:40: error: false when calling settle(...)
crosshair found counterexamples or crashed in: ledger.py
contracts: exit 1 (305.94 seconds) /work> python tools/run_crosshair.py pid=7
contracts: FAIL ✖ in 5 minutes 16.49 seconds
falsify: commands[0]> pytest falsification
falsify: OK ✔ in 9 minutes 29.35 seconds
  lint: OK (2.96=setup[2.52]+cmd[0.06] seconds)
  contracts: FAIL code 1 (316.49=setup[10.51]+cmd[0.05,305.94] seconds)
  falsify: OK (569.35=setup[25.21]+cmd[0.05] seconds)
  evaluation failed :( (900.00 seconds)
"""


def test_only_the_failed_env_is_picked_with_its_own_lines() -> None:
    lines = LOG.splitlines()
    [(env, own)] = failed_envs(lines)
    assert env == "contracts"
    assert own[0].startswith("contracts: install_package_deps>")
    assert own[-1].startswith("contracts: exit 1")
    assert "crosshair found counterexamples or crashed in: ledger.py" in own
    assert not any(line.startswith(("lint:", "falsify:")) for line in own)


def test_the_tool_prints_the_last_lines_of_each_failed_env(tmp_path: Path) -> None:
    filler = [f"contracts: line {i}" for i in range(3 * TAIL_LINES)]
    log = tmp_path / "tox.log"
    log.write_text("\n".join([*filler, "the last line it printed", "contracts: FAIL ✖ in 1 s", LOG]), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "ci_failures.py"), str(log)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    out = done.stdout.splitlines()
    assert out.count("==== contracts failed; its last 25 lines ====") == 1
    assert "the last line it printed" in out
    assert "contracts: line 0" not in out  # only the tail
    assert out[-1].startswith("contracts: exit 1")  # the second failure's tail, from its own first line
