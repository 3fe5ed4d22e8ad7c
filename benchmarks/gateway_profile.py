"""Where one gateway request's CPU goes: ``routeproof serve``'s app on uvicorn (uvloop, httptools) in
this process under cProfile, ``routeproof mock`` behind it and a sequential client in two other
processes, so only the gateway's own work is profiled.

    python -m benchmarks.gateway_profile --calls 2000 [--optimize] [--stream] [--top 25] [--modules] [--callers REGEX]

Printed: the profiled CPU per call split into the gateway layer (uvicorn's HTTP parse and response
writes, the app's auth, tenant lookup, JSON parse and response building), the router (the routed call
minus its HTTP exchange) and the transport (the provider request through httpx), then the top
functions by own time. cProfile inflates every call by about the same factor, so read the split as
shares, not as milliseconds. ``--optimize`` runs it under ``python -O`` (contracts off), as
``serve --optimize`` does. A measurement tool, not a test.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import pstats
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tools.gateway_stack import AGENT_TOML, GATEWAY_KEY, MOCK_TOML, _start

_CLIENT = """
import sys, httpx
url, key, n, stream = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "stream"
body = {"model": "chat", "max_tokens": 16, "messages": [{"role": "user", "content": "What is 2 + 2?"}]}
with httpx.Client(headers={"authorization": "Bearer " + key}, timeout=30) as client:
    for _ in range(n):
        if not stream:
            client.post(url, json=body).raise_for_status()
            continue
        with client.stream("POST", url, json={**body, "stream": True}) as answer:
            answer.raise_for_status()
            answer.read()
"""
# Own CPU time (cProfile's tottime, on a CPU clock) grouped by where the code lives. cProfile charges a
# coroutine's resumption to the coroutine, not to the task that awaits it, so cumulative times across
# the gateway's tasks do not add up; own times do.
_LAYERS = (
    ("gateway: uvicorn's HTTP server (httptools parse, response writes)", ("/uvicorn/", "/httptools/")),
    ("gateway: the app (auth, tenant, JSON, response building)", ("/routeproof/gateway/",)),
    ("gateway: telemetry (OpenTelemetry spans, metrics)", ("/opentelemetry/",)),
    (
        "transport: the HTTP client to the provider (aiohttp, httpx, httpcore, h11, anyio)",
        ("/aiohttp/", "/multidict/", "/yarl/", "/httpx/", "/httpcore/", "/h11/", "/anyio/", "/sniffio/"),
    ),
    ("router: routeproof's call path (driver, core, providers)", ("/routeproof/",)),
    ("shared: the standard library and builtins (asyncio, json, dataclasses)", ("",)),
)


def _layers(stats: pstats.Stats) -> dict[str, float]:
    """Own CPU seconds per layer (the first layer whose path marker a function's file contains)."""
    table = stats.stats  # type: ignore[attr-defined]  # pstats keeps its table in an undocumented attribute
    totals = dict.fromkeys((name for name, _ in _LAYERS), 0.0)
    for (path, _line, _function), row in table.items():
        name = next(name for name, markers in _LAYERS if any(m in path for m in markers))
        totals[name] += row[2]
    return totals


async def _serve_and_drive(
    agent: Path, env: dict[str, str], calls: int, stream: bool = False
) -> tuple[cProfile.Profile, float]:
    from routeproof.gateway.backend import Backend
    from routeproof.gateway.server import bind, make_server
    from routeproof.gateway.telemetry import install_telemetry

    source = install_telemetry()  # first, as serve does (commands.run_serve)
    server = make_server(Backend.load(agent, environ=env), metrics_reader=source)
    sock = bind("127.0.0.1", 0)
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1/chat/completions"
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:  # noqa: ASYNC110 - uvicorn exposes a flag, not an event
        await asyncio.sleep(0.01)
    client = [sys.executable, "-c", _CLIENT, url, GATEWAY_KEY]
    mode = "stream" if stream else "plain"
    warm = await asyncio.create_subprocess_exec(*client, "100", mode)
    await warm.wait()
    profile = cProfile.Profile(time.process_time)  # CPU time: a descheduled write is not the write's cost
    cpu0 = time.process_time()
    profile.enable()
    driver = await asyncio.create_subprocess_exec(*client, str(calls), mode)
    await driver.wait()
    profile.disable()
    cpu_s = time.process_time() - cpu0
    server.should_exit = True
    await task
    sock.close()
    return profile, cpu_s


def source_path(path: str) -> str:
    """A source file's path from its package on: the part after ``site-packages/`` or ``/src/``."""
    return path.rsplit("site-packages/", maxsplit=1)[-1].rsplit("/src/", maxsplit=1)[-1]


def _print_modules(stats: pstats.Stats, per: float) -> None:
    """Own CPU and function calls per call by source file, the 30 largest by CPU (calls are what
    cProfile counts: a coroutine's every resumption is one)."""
    table = stats.stats  # type: ignore[attr-defined]  # as in _layers
    files: dict[str, tuple[float, int]] = {}
    for (path, _line, _function), row in table.items():
        seconds, calls = files.get(path, (0.0, 0))
        files[path] = (seconds + row[2], calls + row[1])
    for path, (seconds, calls) in sorted(files.items(), key=lambda kv: -kv[1][0])[:30]:
        print(f"  {seconds * per:7.3f} ms  {calls * per / 1e3:6.1f} calls  {source_path(path)}")


def main(argv: list[str] | None = None) -> int:
    """Profile ``--calls`` sequential chat calls through the gateway and print the split."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--optimize", action="store_true", help="re-run under python -O (contracts off)")
    parser.add_argument("--stream", action="store_true", help="streamed calls (the whole stream read)")
    parser.add_argument("--modules", action="store_true", help="also print own CPU per module file")
    parser.add_argument("--callers", metavar="REGEX", help="also print who calls the functions matching REGEX")
    args = parser.parse_args(argv)
    if args.optimize and not sys.flags.optimize:
        os.execv(sys.executable, [sys.executable, "-O", *sys.argv[:1], *[a for a in sys.argv[1:] if a != "--optimize"]])
    import uvloop

    env = {**os.environ, "OPENAI_API_KEY": "sk-bench", "ROUTEPROOF_BENCH_KEY": GATEWAY_KEY}
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        mock_toml = Path(tmp) / "mock.toml"
        mock_toml.write_text(MOCK_TOML)
        _, mock_line = _start(["mock", "--config", str(mock_toml)], env, stack)
        agent = Path(tmp) / "agent.toml"
        agent.write_text(AGENT_TOML.format(mock_url=mock_line.split()[-1]))
        profile, cpu_s = uvloop.run(_serve_and_drive(agent, env, args.calls, args.stream))
    stats = pstats.Stats(profile)
    layers = _layers(stats)
    total = sum(layers.values())
    per = 1000 / args.calls
    mode = "python -O" if sys.flags.optimize else "python"
    what = "streamed" if args.stream else "sequential"
    print(f"{args.calls} {what} calls ({mode}); load average {os.getloadavg()[0]:.1f}")
    print(f"CPU per call while profiled: {cpu_s * per:.3f} ms; own CPU per call by layer (profiled):")
    for name, seconds in layers.items():
        print(f"  {seconds * per:7.3f} ms {seconds / total:4.0%}  {name}")
    stats.sort_stats("tottime").print_stats(args.top)
    if args.modules:
        _print_modules(stats, per)
    if args.callers:
        stats.print_callers(args.callers)
    return 0


if __name__ == "__main__":
    sys.exit(main())
