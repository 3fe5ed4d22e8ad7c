"""Where one call's time goes between the gateway's request and its answer, by phase: stamps in
``routeproof serve --optimize`` (``benchmarks/_timeline_hook.py``, installed by a ``sitecustomize``
in the server's process), while a sequential client sends ``--calls`` chat calls through it to
``routeproof mock``. With ``--floor``, the same stamps in the proxy floor (``benchmarks/proxy_floor.py``,
the bare proxy on ``serve``'s stack), in rotated rounds of the same run, and the gateway's own share
of each phase the floor also passes.

    python -m benchmarks.gateway_timeline [--calls 3000] [--floor] [--rounds 3]

Printed: the median µs of each phase (the request's way to the provider, split into uvicorn and the
app's start, the app's own work, the router's and the transport's; the provider; the answer's way
back split into the transport, normalising, the router's bookkeeping and the app's answer; and the
write with what runs after it). Medians of wall time, one call at a time: the unindented phases that
follow one another add up to the server's share of a call's latency; a split's medians need not add
up to its phase's. A measurement tool, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._gateways import _floor
from benchmarks._timeline_hook import INSIDE, PHASES
from benchmarks.gateway_profile import _CLIENT
from tools.gateway_stack import gateway_stack

ROOT = Path(__file__).resolve().parent.parent
_WARM_CALLS = 200  # the hook leaves out as many first calls

_SITECUSTOMIZE = """
import os
from pathlib import Path
from benchmarks._timeline_hook import install
install(Path(os.environ["ROUTEPROOF_TIMELINE_OUT"]), every={every})
"""


def _drive(url: str, key: str, calls: int) -> None:
    subprocess.run([sys.executable, "-c", _CLIENT, url, key, str(calls), "plain"], check=True)


def _table(results: dict[str, dict[str, float | None]]) -> list[str]:
    """One row per phase: each server's median, and the gateway's less the floor's where both have it."""
    names = list(results)
    both = len(names) == 2
    head = "".join(f"{name:>10}" for name in names) + (f"{'own':>10}" if both else "")
    lines = [f"{head}  median µs per call, phase"]
    labels = [(label, indent) for label, _, _, indent in PHASES] + [(label, 2) for label, _ in INSIDE]
    for label, indent in labels:
        values = [results[name].get(label) for name in names]
        cells = "".join(f"{'-' if v is None else f'{v:.1f}':>10}" for v in values)
        if both:
            gateway, floor = values
            cells += f"{'-' if gateway is None or floor is None else f'{gateway - floor:+.1f}':>10}"
        lines.append(f"{cells}  {'  ' * indent}{label}")
    return lines


def main(argv: list[str] | None = None) -> int:
    """Run the gateway (and the floor) with the stamps installed, send the calls and print the phases."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=3000, help="measured calls per server")
    parser.add_argument("--floor", action="store_true", help="also the proxy floor, in rotated rounds")
    parser.add_argument("--rounds", type=int, default=3, help="rounds the calls are split into (with --floor)")
    args = parser.parse_args(argv)
    rounds = args.rounds if args.floor else 1
    per_round = args.calls // rounds
    measured = per_round * rounds
    every = next(e for e in range(max(100, measured // 10), 0, -1) if measured % e == 0)
    with tempfile.TemporaryDirectory() as tmp:
        hook = Path(tmp) / "hook"
        hook.mkdir()
        (hook / "sitecustomize.py").write_text(_SITECUSTOMIZE.format(every=every))
        outs = {"gateway": Path(tmp) / "gateway.json", "floor": Path(tmp) / "floor.json"}
        saved = dict(os.environ)
        # gateway_stack and _floor pass this process's environment on: the hook's folder first
        os.environ["PYTHONPATH"] = os.pathsep.join([str(hook), str(ROOT), os.environ.get("PYTHONPATH", "")])
        try:
            with ExitStack() as stack:
                os.environ["ROUTEPROOF_TIMELINE_OUT"] = str(outs["gateway"])
                gateway = stack.enter_context(gateway_stack(Path(tmp), optimize=True))
                urls = {"gateway": gateway.gateway_url + "/v1/chat/completions"}
                if args.floor:
                    os.environ["ROUTEPROOF_TIMELINE_OUT"] = str(outs["floor"])
                    urls["floor"] = _floor(gateway.mock_url, stack).base_url + "/v1/chat/completions"
                for url in urls.values():
                    _drive(url, gateway.key, _WARM_CALLS)
                for _ in range(rounds):
                    for url in urls.values():
                        _drive(url, gateway.key, per_round)
                time.sleep(0.2)
        finally:
            os.environ.clear()
            os.environ.update(saved)
        results: dict[str, dict[str, float | None]] = {}
        for name in urls:
            if not outs[name].exists():
                print(f"no timeline from the {name}: the hook did not load there (see its stderr)", file=sys.stderr)
                return 1
            written = json.loads(outs[name].read_text())
            results[name] = written["µs"]
        calls = ", ".join(f"{name} {json.loads(outs[name].read_text())['calls']}" for name in urls)
        print(f"load average {os.getloadavg()[0]:.1f}; calls measured: {calls}")
        print("\n".join(_table(results)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
