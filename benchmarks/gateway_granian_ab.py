"""The same gateway app on uvicorn (``routeproof serve --optimize``) and on granian (``python -O``,
uvloop, one worker), over one ``routeproof mock``, in rotated rounds of one run: p50 and server CPU
per call (the granian process and its children). granian is no dependency: ``pip install granian``.

    python -m benchmarks.gateway_granian_ab --rounds 6 --calls 300

A measurement tool for choosing the server, not a test.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tools.gateway_stack import AGENT_TOML, GATEWAY_KEY, MOCK_TOML, _start

PAYLOAD = {"model": "chat", "max_tokens": 16, "messages": [{"role": "user", "content": "What is 2 + 2?"}]}
WARM_UP = 30
APP_MODULE = """import os
from routeproof.gateway.app import GatewayApp
from routeproof.gateway.backend import Backend
from routeproof.gateway.telemetry import install_telemetry
app = GatewayApp(Backend.load(os.environ["ROUTEPROOF_GATEWAY_CONFIG"]), metrics_reader=install_telemetry())
"""


def _cpu_s(pid: int) -> float:
    """CPU seconds of ``pid`` and its descendants (granian runs its worker as a child)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    total = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return total + sum(_cpu_s(int(child)) for child in children)


def _latencies(url: str, headers: dict[str, str], calls: int) -> list[float]:
    with httpx.Client(headers=headers, timeout=30) as client:
        for _ in range(WARM_UP):
            client.post(url, json=PAYLOAD).raise_for_status()
        samples = []
        for _ in range(calls):
            t0 = time.perf_counter()
            client.post(url, json=PAYLOAD).raise_for_status()
            samples.append(time.perf_counter() - t0)
        return samples


def _granian(workdir: Path, agent: Path, env: dict[str, str], stack: ExitStack) -> tuple[str, int]:
    (workdir / "routeproof_granian_app.py").write_text(APP_MODULE)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    granian_env = {
        **env, "ROUTEPROOF_GATEWAY_CONFIG": str(agent), "PYTHONPATH": str(workdir), "PYTHONOPTIMIZE": "1",
    }  # fmt: skip
    argv = [
        sys.executable, "-m", "granian", "--interface", "asgi", "--loop", "uvloop", "--workers", "1",
        "--no-access-log", "--log-level", "warning", "--host", "127.0.0.1", "--port", str(port),
        "routeproof_granian_app:app",
    ]  # fmt: skip
    proc = subprocess.Popen(argv, env=granian_env)

    def stop() -> None:
        proc.terminate()
        proc.wait(timeout=30)

    stack.callback(stop)
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):  # up to 60 s to start
        try:
            httpx.get(f"{url}/healthz", timeout=2).raise_for_status()
            return url, proc.pid
        except httpx.TransportError:
            time.sleep(0.2)
    raise RuntimeError("granian did not answer /healthz within 60 s")


def main(argv: list[str] | None = None) -> int:
    """Run the rotated A/B and print each arm's median p50 and CPU per call."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--calls", type=int, default=300)
    args = parser.parse_args(argv)
    env = {**os.environ, "OPENAI_API_KEY": "sk-bench", "ROUTEPROOF_BENCH_KEY": GATEWAY_KEY}
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        workdir = Path(tmp)
        (workdir / "mock.toml").write_text(MOCK_TOML)
        _, mock_line = _start(["mock", "--config", str(workdir / "mock.toml")], env, stack)
        mock_url = mock_line.split()[-1]
        agent = workdir / "agent.toml"
        agent.write_text(AGENT_TOML.format(mock_url=mock_url))
        serve, serve_line = _start(["serve", "--config", str(agent), "--port", "0", "--optimize"], env, stack)
        granian_url, granian_pid = _granian(workdir, agent, env, stack)
        auth = {"authorization": f"Bearer {GATEWAY_KEY}"}
        arms: dict[str, tuple[str, dict[str, str], int | None]] = {
            "direct": (f"{mock_url}/v1/chat/completions", {"authorization": "Bearer sk"}, None),
            "uvicorn": (f"{serve_line.split()[3]}/v1/chat/completions", auth, serve.pid),
            "granian": (f"{granian_url}/v1/chat/completions", auth, granian_pid),
        }
        names = list(arms)
        samples: dict[str, list[float]] = {name: [] for name in names}
        cpu_s = dict.fromkeys(names, 0.0)
        for round_index in range(args.rounds):
            shift = round_index % len(names)
            for name in names[shift:] + names[:shift]:
                url, headers, pid = arms[name]
                before = _cpu_s(pid) if pid is not None else 0.0
                samples[name] += _latencies(url, headers, args.calls)
                cpu_s[name] += (_cpu_s(pid) - before) if pid is not None else 0.0
    direct = statistics.median(samples["direct"]) * 1000
    print(f"{args.rounds} rotated rounds of {args.calls} sequential calls; load average {os.getloadavg()[0]:.1f}")
    for name in names:
        p50 = statistics.median(samples[name]) * 1000
        per_call = cpu_s[name] / (args.rounds * (args.calls + WARM_UP)) * 1000
        print(
            f"{name:>8}: p50 {p50:.3f} ms (+{p50 - direct:.3f} ms over direct), server CPU per call {per_call:.3f} ms"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
