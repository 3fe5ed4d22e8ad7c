"""System calls per proxied call of ``routeproof serve --optimize``: ``strace -c -f`` attached to the
gateway while a sequential client sends ``--calls`` chat calls through it to ``routeproof mock``.

    python -m benchmarks.gateway_syscalls [--calls 1000]
    PYTHONPATH=/tmp/before/src python -m benchmarks.gateway_syscalls      # another tree's gateway

Prints strace's summary and the writes per call. Needs ``strace`` (``apt-get install strace``) and
the right to attach (root, or ptrace allowed). A measurement tool, not a test.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tools.gateway_stack import gateway_stack

PAYLOAD = {"model": "chat", "max_tokens": 16, "messages": [{"role": "user", "content": "What is 2 + 2?"}]}


def main(argv: list[str] | None = None) -> int:
    """Attach strace to the gateway for ``--calls`` calls and print its counts."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp, gateway_stack(Path(tmp), optimize=True) as stack:
        url = f"{stack.gateway_url}/v1/chat/completions"
        out = Path(tmp) / "strace.txt"
        with httpx.Client(headers={"authorization": f"Bearer {stack.key}"}, timeout=30) as client:
            for _ in range(100):  # warm-up, before strace attaches
                client.post(url, json=PAYLOAD).raise_for_status()
            tracer = subprocess.Popen(["strace", "-c", "-f", "-p", str(stack.gateway_pid), "-o", str(out)])
            time.sleep(1.0)  # strace attaches
            for _ in range(args.calls):
                client.post(url, json=PAYLOAD).raise_for_status()
            tracer.terminate()
            tracer.wait(timeout=30)
        summary = out.read_text()
    print(summary)
    for line in summary.splitlines():
        fields = line.split()
        if fields and fields[-1] in {"write", "sendto", "writev", "sendmsg"}:
            print(f"{fields[-1]}: {int(fields[-2] if fields[-2].isdigit() else fields[3]) / args.calls:.2f} per call")
    return 0


if __name__ == "__main__":
    sys.exit(main())
