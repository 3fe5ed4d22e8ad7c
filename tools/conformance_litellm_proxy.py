"""Run the conformance suite against the LiteLLM proxy, or say exactly why it is skipped.

    python tools/conformance_litellm_proxy.py [--reports DIR] [routeproof conformance run options...]

Installs ``litellm[proxy]`` 1.108.7 into its own venv, ``.peers/litellm-proxy/`` (its proxy extra
pins FastAPI, Starlette and pydantic versions the project's venv must not be bound to; 1.110.2's
extra needs ``litellm-proxy``, which the registry does not have, so the proxy is pinned one release
line back), then runs the suite through the launched profile ``conformance/profiles/litellm-proxy.toml``:
for each case a ``config.yaml`` of the case's chain and a ``litellm --config`` process on a free
loopback port, into ``DIR/litellm-proxy``. When the install fails it prints "skipped: " and pip's
last lines and exits 0: the column is reported as not run, never as passed.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import venv
from pathlib import Path

from routeproof.cli import main as routeproof_main

ROOT = Path(__file__).resolve().parents[1]
PEER = ROOT / ".peers" / "litellm-proxy"
VERSION = "1.108.7"
JOBS = "2"  # a proxy process per case; each takes seconds to start and ~300 MB


def install() -> Path | str:
    """The proxy's ``litellm`` executable (installing it when missing), or pip's error."""
    exe = PEER / "bin" / "litellm"
    if exe.exists():
        return exe
    if not (PEER / "bin" / "python").exists():
        venv.create(PEER, with_pip=True)
    proc = subprocess.run(
        [str(PEER / "bin" / "python"), "-m", "pip", "install", "--quiet", f"litellm[proxy]=={VERSION}"],
        capture_output=True,
        text=True,
        check=False,
        timeout=1800,
    )
    if proc.returncode != 0 or not exe.exists():
        lines = [line for line in proc.stderr.splitlines() if not line.startswith("WARNING: Location")]
        return f"pip install litellm[proxy]=={VERSION} failed (exit {proc.returncode}): " + " | ".join(lines[-5:])
    return exe


def main(argv: list[str]) -> int:
    """Install, run the launched profile."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reports", type=Path, default=ROOT / "reports")
    args, rest = parser.parse_known_args(argv)
    exe = install()
    if isinstance(exe, str):
        print(f"skipped: {exe}")
        return 0
    routeproof_main(
        [
            "conformance",
            "run",
            "--profile",
            str(ROOT / "conformance" / "profiles" / "litellm-proxy.toml"),
            "--reports",
            str(args.reports / "litellm-proxy"),
            "--jobs",
            JOBS,
            *rest,
        ]
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
