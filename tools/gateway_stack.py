"""Start ``routeproof mock`` (one OpenAI-shaped server) and ``routeproof serve`` in front of it, as
real processes on loopback: the setup of the gateway benchmark and the CLI end-to-end test.

    with gateway_stack(tmp_dir) as stack:
        stack.mock_url, stack.gateway_url, stack.key
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

__all__ = ["GATEWAY_KEY", "GatewayStack", "gateway_stack"]

GATEWAY_KEY = "gw-bench-key"
START_TIMEOUT_S = 30.0
MOCK_TOML = '[[server]]\nname = "openai"\nshape = "openai"\nport = 0\n'
AGENT_TOML = """
[driver.providers.openai]
base_url = "{mock_url}/v1"
model = "gpt-4o"

[gateway]
aliases = ["chat"]
grace_period_ms = 2000

[gateway.tenants.bench]
key_env = "ROUTEPROOF_BENCH_KEY"
"""
_ENTRY = "import sys; from routeproof.cli import main; sys.exit(main())"


@dataclass(frozen=True, slots=True, kw_only=True)
class GatewayStack:
    """Where the running mock and gateway listen, and the gateway key to use."""

    mock_url: str
    gateway_url: str
    key: str
    agent_toml: Path
    gateway_pid: int
    banner: str = ""  # the gateway's first line (its address, aliases and mode)

    def gateway_cpu_s(self) -> float | None:
        """CPU seconds (user + system) the gateway process has used so far; None off Linux."""
        try:
            fields = Path(f"/proc/{self.gateway_pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return None
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime

    def gateway_preemptions(self) -> int | None:
        """Times the scheduler has taken the CPU from the gateway so far (involuntary context switches)."""
        try:
            status = Path(f"/proc/{self.gateway_pid}/status").read_text()
        except OSError:
            return None
        return next(int(line.split()[1]) for line in status.splitlines() if line.startswith("nonvoluntary_ctxt"))


def _start(
    args: list[str], env: dict[str, str], stack: ExitStack, *, python: str = sys.executable
) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([python, "-c", _ENTRY, *args], stdout=subprocess.PIPE, text=True, env=env)

    def stop() -> None:
        proc.terminate()
        try:
            proc.wait(timeout=START_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()

    stack.callback(stop)
    assert proc.stdout is not None
    line = proc.stdout.readline()  # bounded: both commands print their address first, or exit
    if not line:
        raise RuntimeError(f"{args[0]} exited before printing its address (status {proc.wait()!r})")
    return proc, line.strip()


@contextmanager
def gateway_stack(workdir: Path, *, optimize: bool = False) -> Iterator[GatewayStack]:
    """Run the mock and the gateway (``optimize``: ``serve --optimize``, production mode) until the
    block ends, then SIGTERM both."""
    env = {**os.environ, "OPENAI_API_KEY": "sk-bench", "ROUTEPROOF_BENCH_KEY": GATEWAY_KEY}
    mock_toml = workdir / "mock.toml"
    mock_toml.write_text(MOCK_TOML)
    with ExitStack() as stack:
        _, mock_line = _start(["mock", "--config", str(mock_toml)], env, stack)
        mock_url = mock_line.split()[-1]
        agent = workdir / "agent.toml"
        agent.write_text(AGENT_TOML.format(mock_url=mock_url))
        serve_args = ["serve", "--config", str(agent), "--port", "0", *(["--optimize"] if optimize else [])]
        serve, serve_line = _start(serve_args, env, stack)
        gateway_url = serve_line.split()[3]
        yield GatewayStack(
            mock_url=mock_url,
            gateway_url=gateway_url,
            key=GATEWAY_KEY,
            agent_toml=agent,
            gateway_pid=serve.pid,
            banner=serve_line,
        )
