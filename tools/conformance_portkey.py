"""Run the conformance suite against the Portkey AI gateway, or say why it is skipped.

    python tools/conformance_portkey.py [--reports DIR] [routeproof conformance run options...]

Installs ``@portkey-ai/gateway`` 1.15.2 with npm into ``.peers/portkey/`` (``@hono/node-server``
pinned to 1.13.5 by an npm override: with the lockfile's newer release every streamed call gets a
500), starts it on a free 127.0.0.1 port, and runs the suite once through
``conformance/profiles/portkey-gateway.toml``: Portkey takes its routing config per request (the
``x-portkey-config`` header), so the profile is a template the driver fills in with each case's
chain — one profile for chains of any length, each case on its own mocks — into ``DIR/portkey``.
Without ``npm`` or ``node``
it prints "skipped: <reason>" and exits 0: the run is reported as not run, never as passed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from routeproof.cli import main as routeproof_main
from routeproof.conformance.launch import free_port

ROOT = Path(__file__).resolve().parents[1]
PEER = ROOT / ".peers" / "portkey"
VERSION = "1.15.2"
HONO_NODE_SERVER = "1.13.5"
PROFILES = {"portkey": "portkey-gateway.toml"}


def install() -> Path | str:
    """The gateway's start script (installing it when missing), or why it cannot be had."""
    script = PEER / "node_modules" / "@portkey-ai" / "gateway" / "build" / "start-server.js"
    if script.exists():
        return script
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        return "node and npm are needed to install @portkey-ai/gateway"
    PEER.mkdir(parents=True, exist_ok=True)
    manifest = {
        "name": "routeproof-portkey-peer",
        "private": True,
        "dependencies": {"@portkey-ai/gateway": VERSION, "@hono/node-server": HONO_NODE_SERVER},
        "overrides": {"@hono/node-server": HONO_NODE_SERVER},
    }
    (PEER / "package.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    proc = subprocess.run(
        [npm, "install", "--no-audit", "--no-fund", "--loglevel=error"], cwd=PEER, check=False, timeout=600
    )
    if proc.returncode != 0 or not script.exists():
        return f"npm install @portkey-ai/gateway@{VERSION} failed (exit {proc.returncode})"
    return script


def wait_ready(url: str, timeout_s: float) -> bool:
    """Whether the gateway answers on ``url`` within ``timeout_s``."""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        try:
            with urllib.request.urlopen(url, timeout=1) as reply:  # loopback only
                if reply.status == 200:
                    return True
        except OSError:
            time.sleep(0.2)
    return False


def main(argv: list[str]) -> int:
    """Install, start, run both profiles, stop."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reports", type=Path, default=ROOT / "reports")
    args, rest = parser.parse_known_args(argv)
    script = install()
    if isinstance(script, str):
        print(f"skipped: {script}")
        return 0
    port = free_port()
    args.reports.mkdir(parents=True, exist_ok=True)
    log = (args.reports / "portkey-gateway.log").open("w", encoding="utf-8")
    proc = subprocess.Popen(
        ["node", str(script), f"--port={port}", "--headless"],
        cwd=PEER,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        if not wait_ready(url + "/", 30):
            print(f"skipped: the Portkey gateway did not answer on {url} within 30 s")
            return 0
        for folder, profile in PROFILES.items():
            routeproof_main(
                [
                    "conformance",
                    "run",
                    "--gateway",
                    url,
                    "--profile",
                    str(ROOT / "conformance" / "profiles" / profile),
                    "--reports",
                    str(args.reports / folder),
                    *rest,
                ]
            )
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)
        log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
