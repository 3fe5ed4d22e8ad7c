"""What a gateway adds as the request grows: sequential chat calls whose body is a conversation of
``--sizes`` kilobytes (user and assistant turns of plain text, then the question), sent directly to
``routeproof mock`` and through each gateway ``benchmarks._gateways`` starts (``serve --optimize``,
the bare proxy floor, ``--before``'s tree, Portkey when installed), in rotated rounds of one run.

    python -m benchmarks.body_size [--sizes 1,10,100] [--calls 200] [--rounds 4] [--before /tmp/before/src]

Per size and arm: the p50 of the round medians, what it adds over the direct call, and the gateway
process's CPU per call (user + system, from /proc). The tiny body of ``loadbench`` shows a gateway's
fixed cost per call; this shows its cost per byte and per turn (reading, checking and routing the
caller's messages, and the body it sends on). A measurement tool, not a test.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._gateways import Endpoint, cpu_s, endpoints
from tools.gateway_stack import MOCK_TOML, _start

_TURN = "The quick brown fox jumps over the lazy dog. " * 10  # 450 characters
WARM_UP = 20


def conversation(size_kb: int) -> list[dict[str, str]]:
    """User and assistant turns of plain text, about ``size_kb`` KB of JSON, then the question."""
    messages: list[dict[str, str]] = []
    while len(json.dumps(messages)) + 500 < size_kb * 1024:
        messages += [{"role": "user", "content": _TURN}, {"role": "assistant", "content": _TURN}]
    return [*messages, {"role": "user", "content": "What is 2 + 2?"}]


async def _p50_ms(url: str, headers: dict[str, str], body: bytes, calls: int) -> float:
    """The median of ``calls`` sequential calls on one keep-alive session, after a warm-up."""
    latencies: list[float] = []
    async with aiohttp.ClientSession(headers={**headers, "content-type": "application/json"}) as session:
        for i in range(WARM_UP + calls):
            started = time.perf_counter()
            async with session.post(url, data=body) as answer:
                await answer.read()
                if answer.status != 200:
                    raise RuntimeError(f"{url} answered {answer.status}: {await answer.text()}")
            if i >= WARM_UP:
                latencies.append(time.perf_counter() - started)
    return statistics.median(latencies) * 1e3


def _measure(arms: list[Endpoint], direct: Endpoint, sizes: list[int], calls: int, rounds: int) -> list[str]:
    lines = []
    for size_kb in sizes:
        messages = conversation(size_kb)
        p50s: dict[str, list[float]] = {arm.name: [] for arm in [direct, *arms]}
        cpus: dict[str, list[float]] = {arm.name: [] for arm in arms}
        for r in range(rounds):
            order = [direct, *arms]
            for arm in order if r % 2 == 0 else order[::-1]:
                body = json.dumps({"model": arm.model, "max_tokens": 16, "messages": messages}).encode()
                before_s = cpu_s(arm.pid) if arm.pid else None
                p50s[arm.name].append(
                    asyncio.run(_p50_ms(f"{arm.base_url}/v1/chat/completions", arm.headers, body, calls))
                )
                after_s = cpu_s(arm.pid) if arm.pid else None
                if before_s is not None and after_s is not None:
                    cpus[arm.name].append((after_s - before_s) * 1e3 / (WARM_UP + calls))
        base = statistics.median(p50s[direct.name])
        size = len(json.dumps({"model": direct.model, "max_tokens": 16, "messages": messages}))
        lines.append(f"{size / 1024:.1f} KB body ({len(messages)} messages), {rounds} rounds of {calls} calls:")
        for name, values in p50s.items():
            p50 = statistics.median(values)
            cpu = f", CPU {statistics.median(cpus[name]):.3f} ms per call" if cpus.get(name) else ""
            lines.append(f"  {name:20s} p50 {p50:6.2f} ms, added {p50 - base:6.2f} ms{cpu}")
    return lines


def main(argv: list[str] | None = None) -> int:
    """Print the table."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", default="1,10,100", help="body sizes in KB, comma-separated")
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--before", help="an older tree's src/ (git archive <rev> src | tar -x -C DIR; DIR/src)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        (Path(tmp) / "mock.toml").write_text(MOCK_TOML)
        _, line = _start(["mock", "--config", str(Path(tmp) / "mock.toml")], dict(os.environ), stack)
        mock_url = line.split()[-1]
        direct = Endpoint(
            name="direct", base_url=mock_url, headers={"authorization": "Bearer k"}, model="gpt-4o", pid=0
        )
        with endpoints(mock_url, Path(tmp), before=args.before) as arms:
            lines = _measure(arms, direct, [int(s) for s in args.sizes.split(",")], args.calls, args.rounds)
    print(f"load average {os.getloadavg()[0]:.1f}")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
