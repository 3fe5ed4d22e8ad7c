"""Where ``routeproof serve --optimize``'s CPU goes, sampled: py-spy attached to the gateway process
while a sequential client sends ``--calls`` chat calls through it to ``routeproof mock``.

    pip install py-spy      # not a dependency: a measurement tool's tool
    python -m benchmarks.gateway_sample [--calls 5000] [--stream] [--top 30] [--py-spy PATH]
    python -m benchmarks.gateway_sample --in-flight 100 --calls 20000    # under load: 100 calls at once
    PYTHONPATH=/tmp/before/src python -m benchmarks.gateway_sample      # another tree's gateway

cProfile (``gateway_profile.py``) charges every Python call a fixed cost, so it inflates code made of
many small calls (the router's) against code that spends its time in C (a socket's ``send``, the event
loop, a parser). py-spy samples the running process without slowing it: its shares are the process's.
A sample taken inside a C call counts for the Python line that made it (the ``send`` of an answer is
charged to ``write_batch.py``'s ``flush``; the event loop's own work, polling included, to
``asyncio/runners.py``). Printed: the sampled share by source file and by function (own time), then
the routeproof functions above 1 % inclusive. Needs the right to attach (root, or ptrace allowed). A
measurement tool, not a test.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.gateway_profile import _CLIENT, source_path
from tools.gateway_stack import gateway_stack

_ROOT = Path(__file__).resolve().parent.parent
_ENTRY_FILES = ("routeproof/cli.py", "routeproof/gateway/commands.py")  # under every sample: not news
_FRAME = re.compile(r"^(?P<function>.*) \((?P<path>.*?)(?::\d+)?\)$")


def _where(frame: str) -> tuple[str, str]:
    """A py-spy frame ``function (path:line)`` as (function, the path from its package on)."""
    match = _FRAME.match(frame)
    if match is None:
        return frame, frame
    return match["function"], source_path(match["path"])


def shares(raw: str) -> tuple[int, collections.Counter[str], collections.Counter[str], collections.Counter[str]]:
    """From py-spy's raw (collapsed) output: the sample count, own samples per file, own samples per
    function, and inclusive samples per routeproof function (each counted once per stack)."""
    own: collections.Counter[str] = collections.Counter()
    own_functions: collections.Counter[str] = collections.Counter()
    inclusive: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        samples = int(count)
        total += samples
        frames = [_where(frame) for frame in stack.split(";")]
        own[frames[-1][1]] += samples
        own_functions[f"{frames[-1][0]} ({frames[-1][1]})"] += samples
        for function, path in {f"{function} ({path})": (function, path) for function, path in frames}.values():
            if path.startswith("routeproof/") and path not in _ENTRY_FILES:
                inclusive[f"{function} ({path})"] += samples
    return total, own, own_functions, inclusive


def main(argv: list[str] | None = None) -> int:
    """Sample the gateway for ``--calls`` sequential calls and print where its CPU went."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--stream", action="store_true", help="streamed calls (the whole stream read)")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument(
        "--in-flight", type=int, default=1, help="calls kept in flight at once (benchmarks._arms' aiohttp client)"
    )
    parser.add_argument("--rate", type=int, default=2000, help="samples per second (default: 2000)")
    parser.add_argument("--py-spy", default=shutil.which("py-spy"), help="py-spy's path (default: the one on PATH)")
    args = parser.parse_args(argv)
    if args.in_flight > 1 and args.stream:
        parser.error("--in-flight takes plain calls only (benchmarks._arms streams one at a time)")
    if not args.py_spy:
        parser.error("py-spy not found: pip install py-spy, or name it with --py-spy")
    mode = "stream" if args.stream else "plain"
    with tempfile.TemporaryDirectory() as tmp, gateway_stack(Path(tmp), optimize=True) as stack:
        url = stack.gateway_url + "/v1/chat/completions"
        client = [sys.executable, "-c", _CLIENT, url, stack.key]
        subprocess.run([*client, "200", mode], check=True)  # warm: connections, caches
        if args.in_flight > 1:  # loadbench's own load client: its aiohttp arm, pointed at the gateway
            client = [sys.executable, "-m", "benchmarks._arms", "aiohttp", "calls", str(args.in_flight)]
        out = Path(tmp) / "samples.txt"
        spy = [args.py_spy, "record", "-p", str(stack.gateway_pid), "-r", str(args.rate), "-f", "raw"]
        sampler = subprocess.Popen([*spy, "-o", str(out), "--nonblocking"], stderr=subprocess.DEVNULL)
        time.sleep(1.0)  # py-spy attached before the first call
        cpu0 = stack.gateway_cpu_s()
        if args.in_flight > 1:
            endpoint = json.dumps({"headers": {"authorization": f"Bearer {stack.key}"}, "model": "chat"})
            env = {**os.environ, "ROUTEPROOF_BENCH_ENDPOINT": endpoint}
            subprocess.run(
                [*client, str(args.calls), stack.gateway_url], check=True, env=env, stdout=subprocess.DEVNULL, cwd=_ROOT
            )
        else:
            subprocess.run([*client, str(args.calls), mode], check=True)
        cpu1 = stack.gateway_cpu_s()
        sampler.send_signal(signal.SIGINT)  # py-spy writes its file on SIGINT
        sampler.wait(timeout=60)
        total, own, own_functions, inclusive = shares(out.read_text())
    if cpu0 is not None and cpu1 is not None:
        what = f"{args.calls} {mode} calls, {args.in_flight} in flight"
        print(f"gateway CPU per call: {(cpu1 - cpu0) / args.calls * 1000:.3f} ms ({what})")
    print(f"{total} samples; own share by file:")
    for path, samples in own.most_common(args.top):
        print(f"  {samples / total:6.1%}  {path or '(native)'}")
    print("functions by own share:")
    for function, samples in own_functions.most_common(args.top):
        print(f"  {samples / total:6.1%}  {function}")
    print("routeproof functions, inclusive share (1 % and above):")
    for function, samples in inclusive.most_common():
        if samples / total >= 0.01:
            print(f"  {samples / total:6.1%}  {function}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
