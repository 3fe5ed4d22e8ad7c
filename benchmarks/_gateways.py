"""The gateways ``benchmarks.loadbench`` puts in front of its mock, each a process of its own on loopback.

* ``gateway -O``: ``routeproof serve --optimize`` (always; with ``--before``, also the older tree's as
  ``gateway -O@before``);
* ``proxy floor``: ``benchmarks/proxy_floor.py`` (always), a bare proxy on ``serve``'s stack (uvicorn,
  uvloop, httptools, aiohttp) that forwards and relays and does nothing else: the floor under any
  gateway built this way, so the gateway's own cost is its row minus this one;
* ``portkey``: the Portkey gateway (Node, ``@portkey-ai/gateway`` 1.15.2), when
  ``ROUTEPROOF_PORTKEY_DIR`` names the folder it was installed into (see ``docs/performance.md``:
  ``@hono/node-server`` must be pinned to 1.13.5 there, or every streamed call gets a 500);
* ``litellm proxy``: ``litellm --config``, when ``ROUTEPROOF_LITELLM_BIN`` names the executable.

The load generator is the ``aiohttp`` arm of ``benchmarks._arms`` (the floor client), pointed at the
gateway with ``ROUTEPROOF_BENCH_ENDPOINT``; the CPU counted per call is the gateway process's own.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from tools.gateway_stack import AGENT_TOML, GATEWAY_KEY  # one gateway config for every bench arm

__all__ = ["PORTKEY_DIR_ENV", "Endpoint", "cpu_s", "endpoints"]

PORTKEY_DIR_ENV = "ROUTEPROOF_PORTKEY_DIR"
LITELLM_BIN_ENV = "ROUTEPROOF_LITELLM_BIN"
LITELLM_KEY = "sk-litellm-bench"
START_TIMEOUT_S = 120.0
LITELLM_YAML = """model_list:
  - model_name: chat
    litellm_params:
      model: openai/gpt-4o
      api_base: {mock_url}/v1
      api_key: sk-bench
litellm_settings:
  telemetry: false
general_settings:
  master_key: {key}
"""
_SERVE = "import sys; from routeproof.cli import main; sys.exit(main())"


@dataclass(frozen=True, slots=True, kw_only=True)
class Endpoint:
    """A running gateway: where it listens, what the load generator sends, and its pid."""

    name: str
    base_url: str
    headers: dict[str, str]
    model: str
    pid: int

    def env(self) -> dict[str, str]:
        """The ``aiohttp`` arm's environment for this gateway."""
        return {"ROUTEPROOF_BENCH_ENDPOINT": json.dumps({"headers": self.headers, "model": self.model})}


def cpu_s(pid: int) -> float | None:
    """CPU seconds (user + system) ``pid`` has used so far; None off Linux or once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _stopped(proc: subprocess.Popen[bytes] | subprocess.Popen[str], stack: ExitStack) -> None:
    def stop() -> None:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    stack.callback(stop)


def _wait_ready(proc: subprocess.Popen[bytes], url: str, what: str, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}; see {log}")
        with contextlib.suppress(httpx.TransportError):
            httpx.get(url, timeout=2)
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} not ready in {START_TIMEOUT_S} s; see {log}")
        time.sleep(0.3)  # polling a process's start


def _routeproof(name: str, mock_url: str, workdir: Path, stack: ExitStack, pythonpath: str | None) -> Endpoint:
    agent = workdir / f"agent-{name.replace(' ', '').replace('@', '-')}.toml"
    agent.write_text(AGENT_TOML.format(mock_url=mock_url))
    env = {**os.environ, "OPENAI_API_KEY": "sk-bench", "ROUTEPROOF_BENCH_KEY": GATEWAY_KEY}
    env.pop("ROUTEPROOF_TRANSPORT", None)  # the gateway as shipped: its default transport
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    args = ["serve", "--config", str(agent), "--port", "0", "--optimize"]
    proc = subprocess.Popen([sys.executable, "-c", _SERVE, *args], stdout=subprocess.PIPE, text=True, env=env)
    _stopped(proc, stack)
    assert proc.stdout is not None
    line = proc.stdout.readline()  # serve prints its address first, or exits
    if not line:
        raise RuntimeError(f"routeproof serve exited before printing its address (status {proc.wait()!r})")
    return Endpoint(
        name=name,
        base_url=line.split()[3],
        headers={"authorization": f"Bearer {GATEWAY_KEY}"},
        model="chat",
        pid=proc.pid,
    )


def _portkey(folder: Path, mock_url: str, workdir: Path, stack: ExitStack) -> Endpoint:
    script = folder / "node_modules" / "@portkey-ai" / "gateway" / "build" / "start-server.js"
    if not script.is_file():
        raise RuntimeError(f"{PORTKEY_DIR_ENV}={str(folder)!r} holds no @portkey-ai/gateway ({script} is missing)")
    port = _free_port()
    log_path = workdir / "portkey.log"
    log = stack.enter_context(log_path.open("wb"))
    env = {**os.environ, "NODE_ENV": "production"}
    proc = subprocess.Popen(
        ["node", str(script), f"--port={port}", "--headless"], stdout=log, stderr=subprocess.STDOUT, env=env
    )
    _stopped(proc, stack)
    url = f"http://127.0.0.1:{port}"
    _wait_ready(proc, url, "the Portkey gateway", log_path)
    headers = {
        "authorization": "Bearer sk-bench",
        "x-portkey-provider": "openai",
        "x-portkey-custom-host": f"{mock_url}/v1",
    }
    return Endpoint(name="portkey", base_url=url, headers=headers, model="gpt-4o", pid=proc.pid)


def _litellm(executable: str, mock_url: str, workdir: Path, stack: ExitStack) -> Endpoint:
    config = workdir / "litellm.yaml"
    config.write_text(LITELLM_YAML.format(mock_url=mock_url, key=LITELLM_KEY))
    port = _free_port()
    log_path = workdir / "litellm.log"
    log = stack.enter_context(log_path.open("wb"))  # a file: its access log would fill a pipe and block
    env = {
        **{k: v for k, v in os.environ.items() if k != "DATABASE_URL"},
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "LITELLM_TELEMETRY": "False",
        "DISABLE_ADMIN_UI": "True",
        "DISABLE_SCHEMA_UPDATE": "True",
        "NO_DOCS": "True",
    }
    argv = [executable, "--config", str(config), "--host", "127.0.0.1", "--port", str(port)]
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env)
    _stopped(proc, stack)
    url = f"http://127.0.0.1:{port}"
    _wait_ready(proc, f"{url}/health/liveliness", "the litellm proxy", log_path)
    return Endpoint(
        name="litellm proxy",
        base_url=url,
        headers={"authorization": f"Bearer {LITELLM_KEY}"},
        model="chat",
        pid=proc.pid,
    )


def _floor(mock_url: str, stack: ExitStack) -> Endpoint:
    """``benchmarks/proxy_floor.py``: a bare proxy on ``serve``'s stack, what any such gateway costs."""
    argv = [sys.executable, "-O", "-m", "benchmarks.proxy_floor", mock_url]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parent.parent)
    _stopped(proc, stack)
    assert proc.stdout is not None
    line = proc.stdout.readline()  # it prints its address first, or exits
    if not line:
        raise RuntimeError(f"benchmarks.proxy_floor exited before printing its address (status {proc.wait()!r})")
    return Endpoint(name="proxy floor", base_url=line.split()[-1], headers={}, model="chat", pid=proc.pid)


@contextmanager
def endpoints(mock_url: str, workdir: Path, *, before: str | None = None) -> Iterator[list[Endpoint]]:
    """Start every gateway that is available in front of ``mock_url``; stop them all when the block ends."""
    with ExitStack() as stack:
        running = [_routeproof("gateway -O", mock_url, workdir, stack, None), _floor(mock_url, stack)]
        if before is not None:
            path = os.pathsep.join((before, os.getcwd()))
            running.append(_routeproof("gateway -O@before", mock_url, workdir, stack, path))
        folder = os.environ.get(PORTKEY_DIR_ENV)
        if folder:
            running.append(_portkey(Path(folder), mock_url, workdir, stack))
        executable = os.environ.get(LITELLM_BIN_ENV)
        if executable:
            running.append(_litellm(executable, mock_url, workdir, stack))
        yield running
