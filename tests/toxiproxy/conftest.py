"""The embedded Toxiproxy server's tests: real loopback sockets and real time, so they run under
``tox -e chaos`` (the ``chaos`` extra installs toxiproxy-python) and are skipped elsewhere."""

from __future__ import annotations

import importlib.util
import os
import re
import select
import subprocess
import sys
from collections.abc import Iterator

import pytest

HAVE_CLIENT = importlib.util.find_spec("toxiproxy") is not None
SKIP_REASON = "the chaos extra (toxiproxy-python) is not installed: run tox -e chaos"

START_TIMEOUT_S = 30.0
_URL = re.compile(r"toxiproxy API on http://127\.0\.0\.1:(\d+)")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test here is a chaos test (real sockets, real time), skipped without the chaos extra."""
    for item in items:
        if "tests/toxiproxy" in str(item.path).replace(os.sep, "/"):
            item.add_marker(pytest.mark.chaos)
            if not HAVE_CLIENT:
                item.add_marker(pytest.mark.skip(reason=SKIP_REASON))


class ServerProcess:
    """``routeproof toxiproxy --port 0`` in a child process (the probes and toxiproxy-python are blocking)."""

    def __init__(self, seed: int = 14) -> None:
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "routeproof.cli", "toxiproxy", "--port", "0", "--seed", str(seed)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self._proc.stdout is not None
        ready, _, _ = select.select([self._proc.stdout], [], [], START_TIMEOUT_S)
        line = self._proc.stdout.readline() if ready else ""
        found = _URL.search(line)
        if found is None:
            self.stop()
            raise RuntimeError(f"routeproof toxiproxy did not start: {line!r}")
        self.port = int(found.group(1))

    def alive(self) -> bool:
        """Whether the process is still running."""
        return self._proc.poll() is None

    def stop(self) -> None:
        """Terminate the child and wait for it (bounded)."""
        self._proc.terminate()
        try:
            self._proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.communicate(timeout=10)


@pytest.fixture
def toxiproxy_server() -> Iterator[ServerProcess]:
    """A fresh embedded server per test (the probes expect an empty one)."""
    server = ServerProcess()
    try:
        yield server
    finally:
        server.stop()
