"""``python -m benchmarks.loadbench``: routeproof side by side with the direct clients, over real sockets.

The mock provider runs in its own process (``benchmarks._mockproc``) and every arm at every level
in its own process too (``benchmarks._arms``), so CPU per call and peak RSS are the arm's own. Arms:
routeproof with contracts on and under ``python -O`` (icontract's checks off) on its default
transport, ``routeproof-pool -O`` (the tuned httpx pool, the default before issue 25),
``routeproof-httpx`` (a plain ``httpx.AsyncClient()`` passed in, as the README builds it; contracts
on), direct httpx, direct httpx over aiohttp, direct aiohttp (the floor), the LiteLLM Router when it
is installed, and the gateways of ``benchmarks._gateways`` (``routeproof serve --optimize``; the
Portkey gateway and the LiteLLM proxy when installed), driven by the aiohttp client, whose CPU per
call column is the gateway process's own (``client_cpu_ms_per_call`` is the load generator's).
Rounds are rotated (round r starts with arm r) and each cell is the median over rounds: the machine
is shared, so the ratios to the direct clients are the result, not the absolute times. The gateways
run as one process each for the whole run unless ``--fresh`` starts them again every round (a
process keeps its speed for its life: compare two trees with ``--fresh``). Nothing is asserted.

Prints one table per run and writes ``reports/bench.json`` (shape: :data:`SCHEMA`, documented in
``routeproof.report.bench``).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib.util
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._gateways import Endpoint, cpu_s, endpoints
from routeproof.core.formats.sse import StreamDecoder, WireProtocol

SCHEMA = "routeproof-bench/1"
LEVELS = (1, 10, 100, 1000)
ROUTEPROOF_ARMS = ("routeproof", "routeproof -O")


BEFORE = "@before"
"""Suffix of an arm run over ``--before SRC`` (an older tree's ``src``: ``git archive main | tar -x -C DIR``)."""


def _arms(before: str | None = None) -> list[str]:
    arms = ["routeproof", "routeproof -O", "routeproof-pool -O", "routeproof-httpx", "httpx", "aiohttp"]
    if before is not None:  # the same harness over the older package: before -> after in one run
        arms[4:4] = [f"routeproof{BEFORE}", f"routeproof -O{BEFORE}", f"routeproof-httpx{BEFORE}"]
    if importlib.util.find_spec("routeproof.transport") is not None and importlib.util.find_spec("httpx_aiohttp"):
        arms.insert(-1, "httpx+aiohttp")  # the transport routeproof picks, with no router on top
    if importlib.util.find_spec("litellm") is not None:
        arms.append("litellm")
    return arms


def _env(arm: str, before: str | None) -> dict[str, str] | None:
    """The arm's environment: an ``@before`` arm imports routeproof from ``before`` (first on the path)."""
    if not arm.endswith(BEFORE) or before is None:
        return None
    return {**os.environ, "PYTHONPATH": os.pathsep.join((before, os.getcwd()))}


def _run(
    arm: str,
    mode: str,
    in_flight: int,
    calls: int,
    base_url: str,
    *,
    timeout_s: float,
    before: str | None = None,
    endpoint: Endpoint | None = None,
) -> dict[str, Any]:
    """One arm at one level in its own process; an ``endpoint`` arm is the aiohttp client against that
    gateway, and its ``cpu_ms_per_call`` is the gateway process's CPU over the run (warm-up included)."""
    name, _, flag = arm.removesuffix(BEFORE).partition(" ")
    env = _env(arm, before)
    if endpoint is not None:
        name, flag, base_url = "aiohttp", "", endpoint.base_url
        env = {**os.environ, **endpoint.env()}
    cmd = [sys.executable, *([flag] if flag else []), "-m", "benchmarks._arms", name, mode, str(in_flight)]
    cmd += [str(calls), base_url]
    server0 = cpu_s(endpoint.pid) if endpoint is not None else None
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, check=False, env=env)
    except subprocess.TimeoutExpired:
        return {"arm": arm, "in_flight": in_flight, "calls": calls, "failures": calls, "errors": {"timed_out": 1}}
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-1:] or ["no output"]
        return {"arm": arm, "in_flight": in_flight, "calls": calls, "failures": calls, "errors": {tail[0]: 1}}
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    result["arm"] = arm
    server1 = cpu_s(endpoint.pid) if endpoint is not None else None
    if server0 is not None and server1 is not None and mode == "calls":
        result["client_cpu_ms_per_call"] = result.get("cpu_ms_per_call")
        result["cpu_ms_per_call"] = (server1 - server0) * 1e3 / (calls + in_flight)  # the warm-up calls too
    return result


def _stop_mock(mock: subprocess.Popen[str]) -> None:
    assert mock.stdin is not None
    mock.stdin.close()
    mock.wait(timeout=30)


def _median_row(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out = dict(rows[0])
    out.pop("errors", None)
    for key, value in rows[0].items():
        if isinstance(value, float) or key == "peak_rss_mb":
            values = [r[key] for r in rows if isinstance(r.get(key), int | float)]
            out[key] = statistics.median(values) if values else None
    out["failures"] = sum(int(r.get("failures", 0)) for r in rows)
    out["calls"] = sum(int(r.get("calls", 0)) for r in rows)
    errors: dict[str, int] = {}
    for r in rows:
        for k, v in r.get("errors", {}).items():
            errors[k] = errors.get(k, 0) + v
    out["errors"] = errors
    out["rounds"] = len(rows)
    return out


def _sse(sizes_mb: tuple[int, ...]) -> list[dict[str, Any]]:
    """Decode one OpenAI SSE event whose data line is N MB, fed in 64 KiB chunks."""
    out = []
    for size_mb in sizes_mb:
        text = "x" * (size_mb * 1024 * 1024)
        chunk = {"id": "c", "model": "gpt-4o", "choices": [{"index": 0, "delta": {"content": text}}]}
        data = b"data: " + json.dumps(chunk).encode() + b"\n\ndata: [DONE]\n\n"
        decoder = StreamDecoder(WireProtocol.OPENAI)
        t0 = time.perf_counter()
        for i in range(0, len(data), 65536):
            decoder.feed(data[i : i + 65536])
        decoder.finish()
        seconds = time.perf_counter() - t0
        out.append({"line_mb": size_mb, "seconds": seconds, "mb_per_s": size_mb / seconds})
    return out


def _lateness(calls: int, before: str | None = None) -> list[dict[str, Any]]:
    """DeadlineExceeded lateness (ms) for CALLS concurrent calls sharing one deadline, and for single
    deadlines (200 calls whose deadlines are 20 ms apart, so each expires alone: enough samples for a
    p99 that is not just the maximum of a handful), per arm."""
    out = []
    sides = ("", BEFORE) if before is not None else ("",)
    for label, flags in [(f"routeproof{side}", []) for side in sides] + [
        (f"routeproof -O{side}", ["-O"]) for side in sides
    ]:
        for n in (1, calls):
            code = (
                "import asyncio,json,sys; from benchmarks.deadline_lateness import router_lateness, staggered_lateness;"
                f"s = asyncio.run(router_lateness({n})) if {n} > 1 else asyncio.run(staggered_lateness(200));"
                "print(json.dumps(s))"
            )
            env = _env(label, before)
            done = subprocess.run(
                [sys.executable, *flags, "-c", code], capture_output=True, text=True, check=False, env=env
            )
            samples = json.loads(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 else []
            out.append(_lateness_row(label, n, samples))
    code = (
        "import asyncio,json; from benchmarks.deadline_lateness import httpx_lateness;"
        f"print(json.dumps(asyncio.run(httpx_lateness({calls}))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    samples = json.loads(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 else []
    out.append(_lateness_row("httpx + asyncio.timeout_at", calls, samples))
    return out


def _lateness_row(arm: str, calls: int, samples_s: list[float]) -> dict[str, Any]:
    ordered = sorted(s * 1e3 for s in samples_s)
    if not ordered:
        return {"arm": arm, "calls": calls, "samples_ms": []}
    return {
        "arm": arm,
        "calls": calls,
        "p50_ms": statistics.median(ordered),
        "p99_ms": ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))],
        "max_ms": ordered[-1],
        "samples_ms": [round(v, 3) for v in ordered],
    }


def _fmt(value: object, unit: str = "") -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.2f}{unit}" if value < 100 else f"{value:,.0f}{unit}"
    return f"{value}{unit}"


def _load(meta: dict[str, Any]) -> str:
    load = meta.get("load_average") or {}
    return " → ".join(f"{v[0]:.1f}" for v in (load.get("start"), load.get("end")) if v) or "?"


@dataclasses.dataclass(frozen=True, slots=True)
class _Probe:
    number: int
    name: str


def interpreter_ms(loops: int = 100_000, best_of: int = 5) -> float:
    """The best of ``best_of`` runs of a fixed pure-Python loop (a frozen dataclass made, a dict made,
    attributes read), in ms: how fast this interpreter build runs the kind of code the router is.
    The same CPython version differs by a third between builds: pyenv's default build (no PGO, no LTO,
    a shared libpython) against Debian's (docs/performance.md)."""
    best = math.inf
    for _ in range(best_of):
        start = time.perf_counter()
        total = 0
        for i in range(loops):
            probe = _Probe(i, "x")
            total += probe.number + len(probe.name) + len({"k": i, "v": total})
        best = min(best, time.perf_counter() - start)
    return round(best * 1000, 1)


def _fresh_interpreter_ms() -> float:
    """:func:`interpreter_ms` in a new process of this interpreter: in this one, after the arms, the
    same loop took up to 1.7 times as long (its heap and collector state, not the build)."""
    code = "from benchmarks.loadbench import interpreter_ms; print(interpreter_ms())"
    root = str(Path(__file__).resolve().parent.parent)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root)
    return float(done.stdout)


def _table(doc: dict[str, Any]) -> str:
    meta = doc["meta"]
    build = f"Python {meta['python']} ({meta['executable']}; reference loop {meta['interpreter_ms']} ms)"
    lines = [
        f"routeproof bench {doc['meta']['started_at']} · {doc['meta']['rounds']} rotated rounds, median per cell · "
        f"{doc['meta']['cpus']} CPUs (shared: read the ratios, not the times) · load average "
        f"{_load(doc['meta'])}",
        build if "interpreter_ms" in meta else "",
        "",
        f"{'arm':<21}{'in flight':>10}{'p50 ms':>10}{'p99 ms':>10}{'calls/s':>10}{'CPU ms/call':>12}"
        f"{'RSS MB':>8}{'fail':>7}{'p50 ×httpx':>11}{'calls/s ×httpx':>15}{'×aiohttp':>10}",
    ]
    by = {(r["arm"], r["in_flight"]): r for r in doc["rows"]}
    for level in doc["meta"]["levels"]:
        for arm in doc["arms"]:
            r = by.get((arm, level))
            if r is None:
                continue
            base, aio = by.get(("httpx", level), {}), by.get(("aiohttp", level), {})

            def ratio(a: object, b: object) -> str:
                ok = isinstance(a, int | float) and isinstance(b, int | float) and b
                return f"{a / b:.2f}" if ok else "-"  # type: ignore[operator]

            lines.append(
                f"{arm:<21}{level:>10}{_fmt(r.get('p50_ms')):>10}{_fmt(r.get('p99_ms')):>10}"
                f"{_fmt(r.get('calls_per_s')):>10}{_fmt(r.get('cpu_ms_per_call')):>12}{_fmt(r.get('peak_rss_mb')):>8}"
                f"{r.get('failures', 0):>7}{ratio(r.get('p50_ms'), base.get('p50_ms')):>11}"
                f"{ratio(r.get('calls_per_s'), base.get('calls_per_s')):>15}"
                f"{ratio(r.get('calls_per_s'), aio.get('calls_per_s')):>10}"
            )
        lines.append("")
    for gateway in doc["meta"].get("gateways", []):
        for level in doc["meta"]["levels"]:
            g, aio = by.get((gateway, level), {}), by.get(("aiohttp", level), {})
            if isinstance(g.get("p50_ms"), float) and isinstance(aio.get("p50_ms"), float):
                lines.append(
                    f"{gateway}, {level} in flight: added p50 {g['p50_ms'] - aio['p50_ms']:+.3f} ms, "
                    f"added p99 {g['p99_ms'] - aio['p99_ms']:+.3f} ms over direct aiohttp; "
                    f"{_fmt(g.get('calls_per_s'))} req/s; gateway CPU {_fmt(g.get('cpu_ms_per_call'))} ms per call"
                )
    lines.append("")
    lines.append(f"{'streaming (1 in flight)':<26}{'TTFT p50':>10}{'TTFT p99':>10}{'TTLT p50':>10}{'TTLT p99':>10}")
    for s in doc["streaming"]:
        lines.append(
            f"{s['arm']:<26}{_fmt(s.get('ttft_p50_ms')):>10}{_fmt(s.get('ttft_p99_ms')):>10}"
            f"{_fmt(s.get('ttlt_p50_ms')):>10}{_fmt(s.get('ttlt_p99_ms')):>10}"
        )
    lines.append("")
    for b in doc["bursts"]:
        lines.append(
            f"{b.get('arm', 'routeproof')}, {b['calls']:,} calls at once: "
            f"{b.get('failures', '?')} failures {b.get('errors', {})}, "
            f"{_fmt(b.get('calls_per_s'))} calls/s, "
            f"{_fmt(b.get('rss_kb_per_call_in_flight'))} kB RSS per call in flight"
        )
    lines.append("")
    lines.append("SSE decoding, one data line: " + ", ".join(f"{s['line_mb']} MB {s['seconds'] * 1e3:.0f} ms"
                                                          for s in doc["sse"]))  # fmt: skip
    lines.append("")
    lines.append(f"{'deadline lateness':<28}{'calls':>7}{'p50 ms':>9}{'p99 ms':>9}{'max ms':>9}")
    for lat in doc["lateness"]:
        lines.append(
            f"{lat['arm']:<28}{lat['calls']:>7}{_fmt(lat.get('p50_ms')):>9}{_fmt(lat.get('p99_ms')):>9}"
            f"{_fmt(lat.get('max_ms')):>9}"
        )
    return "\n".join(lines)


def run(
    rounds: int,
    levels: tuple[int, ...],
    *,
    stream_calls: int,
    lateness_calls: int,
    timeout_s: float,
    burst_calls: tuple[int, ...] = (1_000, 10_000),
    before: str | None = None,
    with_gateways: bool = True,
    fresh: bool = False,
) -> dict[str, Any]:
    """Start the mock, run every arm at every level for ``rounds`` rotated rounds, and return bench.json.

    With ``before`` (an older tree's ``src``), routeproof's arms also run over that package. ``fresh``:
    the gateways are started again every round (one process keeps its speed for its life)."""
    arms = _arms(before)
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    load0 = os.getloadavg()
    mock = subprocess.Popen(
        [sys.executable, "-m", "benchmarks._mockproc"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    with contextlib.ExitStack() as stack:
        assert mock.stdout is not None
        base_url = mock.stdout.readline().strip()
        stack.callback(_stop_mock, mock)
        gateways: dict[str, Endpoint] = {}
        running = stack.enter_context(contextlib.ExitStack())  # the gateways (started again per round: fresh)
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="routeproof-bench-")))
        if with_gateways:
            gateways = {e.name: e for e in running.enter_context(endpoints(base_url, workdir, before=before))}
            arms += list(gateways)
        raw: dict[tuple[str, int], list[dict[str, Any]]] = {}
        streams: dict[str, list[dict[str, Any]]] = {}
        for r in range(rounds):
            if fresh and gateways and r > 0:
                running.close()
                gateways = {e.name: e for e in running.enter_context(endpoints(base_url, workdir, before=before))}
            order = arms[r % len(arms) :] + arms[: r % len(arms)]
            for level in levels:
                for arm in order:
                    calls = max(200, level)
                    raw.setdefault((arm, level), []).append(
                        _run(
                            arm,
                            "calls",
                            level,
                            calls,
                            base_url,
                            timeout_s=timeout_s,
                            before=before,
                            endpoint=gateways.get(arm),
                        )
                    )
            for arm in order:
                streams.setdefault(arm, []).append(
                    _run(
                        arm,
                        "stream",
                        1,
                        stream_calls,
                        base_url,
                        timeout_s=timeout_s,
                        before=before,
                        endpoint=gateways.get(arm),
                    )
                )
        sides = ("routeproof", f"routeproof{BEFORE}") if before is not None else ("routeproof",)
        bursts = [
            _run(arm, "burst", 0, n, base_url, timeout_s=4 * timeout_s, before=before)
            for n in burst_calls
            for arm in sides
        ]
    return {
        "schema": SCHEMA,
        "meta": {
            "started_at": started,
            "python": platform.python_version(),
            "executable": sys.executable,
            "interpreter_ms": _fresh_interpreter_ms(),  # the same Python code on another build: compare these first
            "cpus": os.cpu_count(),
            "rounds": rounds,
            "levels": list(levels),
            "calls_per_level": {str(level): max(200, level) for level in levels},
            "note": "shared machine: cells are medians over rotated rounds; compare ratios, not times",
            "before": before,
            "fresh_gateways": fresh,
            "load_average": {"start": list(load0), "end": list(os.getloadavg())},
            "gateways": list(gateways),  # their rows' cpu_ms_per_call is the gateway process's own
        },
        "arms": arms,
        "rows": [_median_row(rows) for rows in raw.values()],
        "streaming": [_median_row(rows) for rows in streams.values()],
        "bursts": bursts,
        "sse": _sse((2, 4, 8)),
        "lateness": _lateness(lateness_calls, before) if lateness_calls else [],
    }


def main(argv: list[str] | None = None) -> int:
    """Run, print the table, write the JSON."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.loadbench", description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--levels", default=",".join(map(str, LEVELS)), help="in-flight levels, comma-separated")
    parser.add_argument("--stream-calls", type=int, default=100)
    parser.add_argument("--lateness-calls", type=int, default=1000, help="0 skips the deadline-lateness runs")
    parser.add_argument("--bursts", default="1000,10000", help="routeproof calls started at once (admission)")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per arm run before it counts as failed")
    parser.add_argument(
        "--before",
        default=None,
        help="an older tree's src/ (git archive main | tar -x -C DIR; DIR/src): its routeproof arms run too",
    )
    parser.add_argument(
        "--no-gateways", action="store_true", help="skip the gateway arms (routeproof serve, Portkey, LiteLLM proxy)"
    )
    parser.add_argument(
        "--fresh", action="store_true", help="start the gateways again every round (the process lottery averaged out)"
    )
    parser.add_argument(
        "--out", type=Path, default=Path(os.environ.get("ROUTEPROOF_REPORT_DIR", "reports")) / "bench.json"
    )
    args = parser.parse_args(argv)
    levels = tuple(int(x) for x in args.levels.split(","))
    bursts = tuple(int(x) for x in args.bursts.split(",") if x)
    doc = run(
        args.rounds,
        levels,
        stream_calls=args.stream_calls,
        lateness_calls=args.lateness_calls,
        timeout_s=args.timeout,
        burst_calls=bursts,
        before=args.before,
        with_gateways=not args.no_gateways,
        fresh=args.fresh,
    )
    print(_table(doc))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1), encoding="utf-8")
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
