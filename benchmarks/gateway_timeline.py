"""Where one call's time goes between the gateway's request and its answer, by phase: stamps in
``routeproof serve --optimize`` (``benchmarks/_timeline_hook.py``, installed by a ``sitecustomize``
in the gateway's process), while a sequential client sends ``--calls`` chat calls through it to
``routeproof mock``.

    python -m benchmarks.gateway_timeline [--calls 3000]

Printed: the median µs of each phase (the request's way to the provider, the provider, the answer's
way back split into the transport, normalising, the router's bookkeeping and the app's answer, and
what runs after the answer is written). Medians of wall time, one call at a time: the phases that
follow one another add up to the gateway's share of a call's latency. A measurement tool, not a test.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.gateway_profile import _CLIENT
from tools.gateway_stack import gateway_stack

ROOT = Path(__file__).resolve().parent.parent

_SITECUSTOMIZE = """
import os
from pathlib import Path
from benchmarks._timeline_hook import install
install(Path(os.environ["ROUTEPROOF_TIMELINE_OUT"]), every={every})
"""


def main(argv: list[str] | None = None) -> int:
    """Run the gateway with the stamps installed, send ``--calls`` calls and print the phases."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=3000)
    args = parser.parse_args(argv)
    every = max(100, args.calls // 10)
    with tempfile.TemporaryDirectory() as tmp:
        hook = Path(tmp) / "hook"
        hook.mkdir()
        (hook / "sitecustomize.py").write_text(_SITECUSTOMIZE.format(every=every))
        out = Path(tmp) / "timeline.txt"
        saved = dict(os.environ)
        # gateway_stack passes this process's environment to the gateway: the hook's folder first
        os.environ["PYTHONPATH"] = os.pathsep.join([str(hook), str(ROOT), os.environ.get("PYTHONPATH", "")])
        os.environ["ROUTEPROOF_TIMELINE_OUT"] = str(out)
        try:
            with gateway_stack(Path(tmp), optimize=True) as stack:
                url = stack.gateway_url + "/v1/chat/completions"
                subprocess.run(
                    [sys.executable, "-c", _CLIENT, url, stack.key, str(args.calls + 200), "plain"], check=True
                )
                time.sleep(0.2)
        finally:
            os.environ.clear()
            os.environ.update(saved)
        if not out.exists():
            print("no timeline written: the hook did not load in the gateway (see its stderr)", file=sys.stderr)
            return 1
        print(f"load average {os.getloadavg()[0]:.1f}; " + out.read_text(), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
