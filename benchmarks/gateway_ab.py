"""A/B the gateway's added latency: one ``routeproof mock``, and two ``routeproof serve`` processes in
front of it, one running this checkout's code and one running another checkout's ``src`` (``--before``),
measured in rotated order over several rounds in one run, so both see the same machine load.

    git archive main src | tar -x -C /tmp/before
    python -m benchmarks.gateway_ab --before /tmp/before/src --rounds 6 --calls 300 [--stream]

Per round and arm: the p50 (and p99) of ``--calls`` sequential calls on one keep-alive client (after a
warm-up), and the gateway's CPU (user + system, from /proc) per call; ``--stream``: streamed calls,
timed to their first ``data:`` line (TTFT). Printed: the median over rounds of each, the added p50
(arm minus direct), and the before/after ratios. ``PYTHONOPTIMIZE=1`` runs every process under
``-O``, as ``serve --optimize`` does. ``--floor`` adds a bare uvicorn+aiohttp proxy
(``benchmarks/proxy_floor.py``): the added time of any gateway on this stack that does nothing else.
``--before-python`` runs the before arm on another interpreter (``--before src`` then compares two
builds of Python on the same code). ``--fresh`` starts new server processes every round: one process
keeps its speed for its life (its memory layout and hash seed), and two processes of the same code
differed by up to 12 % in CPU per call, round after round, so only new processes per round average
that out. A measurement tool, not a test.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tools.gateway_stack import AGENT_TOML, GATEWAY_KEY, MOCK_TOML, _start

PAYLOAD = {"model": "chat", "max_tokens": 16, "messages": [{"role": "user", "content": "What is 2 + 2?"}]}
STREAMED = {**PAYLOAD, "stream": True}
WARM_UP = 30


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _one(client: httpx.Client, url: str, stream: bool) -> float:
    """Seconds to the answer (streamed: to its first ``data:`` line; the rest is read too)."""
    t0 = time.perf_counter()
    if not stream:
        client.post(url, json=PAYLOAD).raise_for_status()
        return time.perf_counter() - t0
    first = None
    with client.stream("POST", url, json=STREAMED) as response:
        response.raise_for_status()
        for line in response.iter_lines():
            if first is None and line.startswith("data:"):
                first = time.perf_counter() - t0
    assert first is not None, "a stream with no data line"
    return first


def _p50_ms(
    url: str, headers: dict[str, str], calls: int, cpu: Callable[[], float], stream: bool = False
) -> tuple[float, float, float]:
    """p50 and p99 wall ms of ``calls`` sequential calls, and the server's CPU ms per call."""
    with httpx.Client(headers=headers, timeout=30) as client:
        for _ in range(WARM_UP):
            _one(client, url, stream)
        cpu0 = cpu()
        samples = sorted(_one(client, url, stream) for _ in range(calls))
        p99 = samples[min(len(samples) - 1, int(len(samples) * 0.99))]
        return statistics.median(samples) * 1000, p99 * 1000, (cpu() - cpu0) / calls * 1000


Arm = tuple[str, dict[str, str], int]


class _Servers:
    """The gateways (this checkout's, ``--before``'s) and the floor, started together on a stack."""

    def __init__(
        self, serve: list[str], env: dict[str, str], before: Path, mock_url: str, *, floor: bool, before_python: str
    ) -> None:
        self.serve, self.env, self.mock_url, self.floor = serve, env, mock_url, floor
        self.before_env = {**env, "PYTHONPATH": str(before.resolve())}
        self.before_python = before_python

    def start(self, stack: ExitStack) -> dict[str, Arm]:
        """Each server's chat URL, auth header and pid; stopped when ``stack`` closes."""
        old, old_line = _start(self.serve, self.before_env, stack, python=self.before_python)
        new, new_line = _start(self.serve, self.env, stack)
        gateway_auth = {"authorization": f"Bearer {GATEWAY_KEY}"}
        arms = {
            "before": (f"{old_line.split()[3]}/v1/chat/completions", gateway_auth, old.pid),
            "after": (f"{new_line.split()[3]}/v1/chat/completions", gateway_auth, new.pid),
        }
        if self.floor:
            floor = subprocess.Popen(
                [sys.executable, "-m", "benchmarks.proxy_floor", self.mock_url],
                stdout=subprocess.PIPE, text=True, env=self.env,
            )  # fmt: skip
            stack.callback(floor.wait)
            stack.callback(floor.terminate)
            assert floor.stdout is not None
            stack.callback(floor.stdout.close)
            floor_url = floor.stdout.readline().split()[-1]
            arms["floor"] = (f"{floor_url}/v1/chat/completions", {}, floor.pid)
        return arms


def main(argv: list[str] | None = None) -> int:
    """Run the rotated A/B and print medians and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, type=Path, help="the src directory of the baseline checkout")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--stream", action="store_true", help="streamed calls, timed to the first event")
    parser.add_argument("--floor", action="store_true", help="also a bare uvicorn+aiohttp proxy (proxy_floor.py)")
    parser.add_argument(
        "--before-python", default=sys.executable, help="the interpreter of the before arm (another build of Python)"
    )
    parser.add_argument(
        "--fresh", action="store_true", help="new server processes every round (the process lottery averaged out)"
    )
    args = parser.parse_args(argv)
    env = {**os.environ, "OPENAI_API_KEY": "sk-bench", "ROUTEPROOF_BENCH_KEY": GATEWAY_KEY}
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        work = Path(tmp)
        (work / "mock.toml").write_text(MOCK_TOML)
        mock, mock_line = _start(["mock", "--config", str(work / "mock.toml")], env, stack)
        mock_url = mock_line.split()[-1]
        (work / "agent.toml").write_text(AGENT_TOML.format(mock_url=mock_url))
        serve = ["serve", "--config", str(work / "agent.toml"), "--port", "0"]
        servers = _Servers(serve, env, args.before, mock_url, floor=args.floor, before_python=args.before_python)
        direct = (f"{mock_url}/v1/chat/completions", {"authorization": "Bearer sk"}, mock.pid)
        names = ["direct", "before", "after", *(["floor"] if args.floor else [])]
        p50s: dict[str, list[float]] = {name: [] for name in names}
        p99s: dict[str, list[float]] = {name: [] for name in names}
        cpus: dict[str, list[float]] = {name: [] for name in names}
        kept = stack.enter_context(ExitStack())  # the servers, kept across rounds unless --fresh
        arms = {"direct": direct, **servers.start(kept)}
        for r in range(args.rounds):
            if args.fresh and r > 0:  # new processes: each round draws its own layout
                kept.close()
                arms = {"direct": direct, **servers.start(kept)}
            order = names[r % len(names) :] + names[: r % len(names)]
            line = []
            for name in order:
                url, headers, pid = arms[name]
                p50, p99, cpu = _p50_ms(url, headers, args.calls, lambda pid=pid: _cpu_s(pid), args.stream)  # type: ignore[misc]
                p50s[name].append(p50)
                p99s[name].append(p99)
                cpus[name].append(cpu)
                line.append(f"{name} {p50:.3f} ms (cpu {cpu:.3f})")
            print(f"round {r + 1} (load {os.getloadavg()[0]:.1f}): " + ", ".join(line), flush=True)
        med = {name: statistics.median(v) for name, v in p50s.items()}
        med99 = {name: statistics.median(v) for name, v in p99s.items()}
        cpu_med = {name: statistics.median(v) for name, v in cpus.items()}
        added = {name: med[name] - med["direct"] for name in names if name != "direct"}
        what = "streamed calls each (time to the first event)" if args.stream else "sequential calls each"
        print(f"\nmedians over {args.rounds} rounds of {args.calls} {what}, load {os.getloadavg()[0]:.1f}:")
        for name in names:
            extra = f", added p50 {added[name]:.3f} ms" if name in added else ""
            print(
                f"  {name:>6}: p50 {med[name]:.3f} ms, p99 {med99[name]:.3f} ms{extra}, "
                f"server CPU per call {cpu_med[name]:.3f} ms"
            )
        ratios = (med["before"] / med["after"], added["before"] / added["after"], cpu_med["before"] / cpu_med["after"])
        print("  before/after: p50 x{:.2f}, added p50 x{:.2f}, gateway CPU per call x{:.2f}".format(*ratios))
    return 0


if __name__ == "__main__":
    sys.exit(main())
