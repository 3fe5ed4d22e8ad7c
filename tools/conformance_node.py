"""Run the conformance suite against the naive Node.js router, or say why it is skipped.

    python tools/conformance_node.py [routeproof conformance run options...]

Node.js >= 18 (global fetch, AbortSignal.any needs 20) is a system dependency of this one run. When
``node`` is missing, this tries ``apt-get install -y nodejs`` (as root, where apt exists); if Node
still cannot be had it prints "skipped: <reason>" and exits 0 — the naive router's run is then
reported as not run, never as passed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from routeproof.cli import main as routeproof_main

ROOT = Path(__file__).resolve().parents[1]
HARNESS = ROOT / "conformance" / "harnesses" / "naive-node" / "naive_router.mjs"
MIN_MAJOR = 20


def node_major(node: str) -> int | None:
    """The major version of ``node``, or None when it does not run."""
    try:
        out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=10, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return int(out.strip().lstrip("v").split(".")[0])


def find_node() -> tuple[str | None, str]:
    """A usable ``node`` (installing it with apt when possible), or None and the reason."""
    node = shutil.which("node")
    if node is None and hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("apt-get"):
        subprocess.run(["apt-get", "install", "-y", "-qq", "nodejs"], check=False, timeout=600)
        node = shutil.which("node")
    if node is None:
        return None, "node (Node.js) is not installed and could not be installed"
    major = node_major(node)
    if major is None or major < MIN_MAJOR:
        return None, f"node {major} is too old: the naive router needs Node.js >= {MIN_MAJOR}"
    return node, ""


def main(argv: list[str]) -> int:
    """Run the suite against the naive router with the given extra options."""
    node, reason = find_node()
    if node is None:
        print(f"skipped: {reason}")
        return 0
    return routeproof_main(["conformance", "run", "--harness", f"{node} {HARNESS}", *argv])


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
