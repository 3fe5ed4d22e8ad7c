"""A throwaway ``redis-server`` on a free 127.0.0.1 port, for the ledger-store tests and benchmark.

``python tools/redis_server.py --install`` installs Debian's ``redis-server`` package with apt-get
when the binary is missing (tox's ``commands_pre`` and ``.ci/run`` call it). It never fails the
run: if Redis cannot be had it says why, and the Redis tests then report themselves skipped with
that reason (never passed).

:class:`RedisServer` starts the real server (append-only file with ``appendfsync always``, in its
own directory, so a stop and start keeps the data, as a production Redis with AOF does), waits until
it answers PING, and stops it; ``stop()`` then ``start()`` is "Redis restarted".
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType

__all__ = ["RedisServer", "ensure_redis_server", "redis_server_binary"]

_START_TIMEOUT_S = 10.0


def redis_server_binary() -> str | None:
    """The redis-server executable on PATH (or in /usr/bin and /usr/sbin), or None."""
    return shutil.which("redis-server") or shutil.which("redis-server", path="/usr/bin:/usr/sbin:/usr/local/bin")


def ensure_redis_server() -> tuple[str | None, str]:
    """Install redis-server with apt-get when it is missing; (binary, what happened)."""
    found = redis_server_binary()
    if found is not None:
        return found, f"redis-server found at {found}"
    apt = shutil.which("apt-get")
    if apt is None:
        return None, "redis-server is not installed and apt-get is not available to install it"
    if hasattr(os, "geteuid") and os.geteuid() != 0:
        sudo = shutil.which("sudo")
        if sudo is None:
            return None, "redis-server is not installed and installing it needs root (no sudo)"
        prefix = [sudo, "-n"]
    else:
        prefix = []
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = [*prefix, apt, "install", "-y", "-q", "--no-install-recommends", "redis-server"]
    done = subprocess.run(install, env=env, capture_output=True, text=True, check=False, timeout=600)
    if done.returncode != 0:  # an unknown package on a fresh machine: refresh the lists once
        subprocess.run([*prefix, apt, "update", "-q"], env=env, capture_output=True, check=False, timeout=600)
        done = subprocess.run(install, env=env, capture_output=True, text=True, check=False, timeout=600)
    found = redis_server_binary()
    if found is None:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        return None, f"apt-get install redis-server failed (exit {done.returncode}): {tail[0]}"
    return found, f"installed redis-server at {found}"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(64).startswith(b"+PONG")
    except OSError:
        return False


class RedisServer:
    """One redis-server process on 127.0.0.1 with its data in ``data_dir``."""

    def __init__(self, binary: str, data_dir: Path, port: int | None = None) -> None:
        self.binary = binary
        self.data_dir = data_dir
        self.port = port or _free_port()
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """``redis://127.0.0.1:PORT/0``."""
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        """Start the server (same port and data as before) and wait until it answers PING."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        args = [self.binary, "--bind", "127.0.0.1", "--port", str(self.port), "--dir", str(self.data_dir)]
        args += ["--save", "", "--appendonly", "yes", "--appendfsync", "always", "--daemonize", "no"]
        args += ["--protected-mode", "yes", "--logfile", str(self.data_dir / "redis.log")]
        self._process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + _START_TIMEOUT_S
        while not _ping(self.port):
            if self._process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                log = (self.data_dir / "redis.log").read_text(errors="replace")[-500:]
                raise RuntimeError(f"redis-server on port {self.port} did not start: {log}")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after 10 s) and wait for it."""
        process, self._process = self._process, None
        if process is None:
            return
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def main(argv: list[str]) -> int:
    """``--install``: make sure redis-server is there (never fails the run; prints what happened)."""
    if argv[1:] != ["--install"]:
        print("usage: python tools/redis_server.py --install", file=sys.stderr)
        return 2
    _, what = ensure_redis_server()
    print(f"tools/redis_server.py: {what}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
