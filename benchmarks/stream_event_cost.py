"""The gateway's CPU per relayed stream event: ``routeproof serve`` in front of an upstream that
streams OpenAI Chat Completions chunks, one write per event, as a provider does token by token.

    python -m benchmarks.stream_event_cost [--before /tmp/before/src] [--events 20,400] [--calls 200] [--gap-ms 1]

For each stream length in ``--events`` the gateway's process CPU (user + system, from /proc) per
streamed call is measured over ``--calls`` sequential calls (the whole stream read by the client);
the slope between the shortest and the longest length is the CPU per event, the intercept the CPU
per call. A real answer of a few hundred tokens is a few hundred events, so the per-event cost,
not the per-call one, decides what a streaming gateway costs. ``--gap-ms`` paces the upstream (a
provider sends a token every few ms, so each event arrives on its own; unpaced, several arrive in one
read). ``--before`` runs a second gateway
on another checkout's ``src`` beside this one, rotated. ``PYTHONOPTIMIZE=1`` runs every process
under ``-O``. A measurement tool, not a test.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from contextlib import ExitStack
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.gateway_ab import _cpu_s
from tools.gateway_stack import AGENT_TOML, GATEWAY_KEY, _start

HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
BODY = {"model": "chat", "max_tokens": 1000, "stream": True, "messages": [{"role": "user", "content": "Tell me."}]}


def _chunk(delta: dict[str, object], finish: str | None = None) -> bytes:
    data = {
        "id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o",
        "system_fingerprint": "fp_1",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }  # fmt: skip
    return b"data: " + json.dumps(data).encode() + b"\n\n"


def _events(count: int) -> list[bytes]:
    """``count`` SSE events: the role, ``count - 3`` words, the finish, ``[DONE]``."""
    words = [_chunk({"content": f" w{i}"}) for i in range(max(0, count - 3))]
    return [_chunk({"role": "assistant", "content": ""}), *words, _chunk({}, "stop"), b"data: [DONE]\n\n"]


async def _upstream(ready: list[str], stop: asyncio.Event, gap_s: float = 0.0) -> None:
    """An OpenAI-shaped streaming server on loopback: each request's output cap (``max_tokens``, which
    the gateway sends on as ``max_completion_tokens``) is the number of events it streams."""
    cache: dict[int, list[bytes]] = {}

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.split(b"\r\n")
                length = next((int(x.split(b":")[1]) for x in lines if x.lower().startswith(b"content-length:")), 0)
                body = json.loads(await reader.readexactly(length))
                count = int(body.get("max_completion_tokens", body.get("max_tokens", 20)))  # N events asked
                events = cache.setdefault(count, _events(count))
                writer.write(
                    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
                )
                for event in events:  # one chunk and one write per event, as a provider streams tokens
                    writer.write(f"{len(event):x}\r\n".encode() + event + b"\r\n")
                    await writer.drain()
                    if gap_s:
                        await asyncio.sleep(gap_s)
                writer.write(b"0\r\n\r\n")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    ready.append(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}")
    async with server:
        await stop.wait()


def _cpu_per_call_ms(url: str, events: int, calls: int, pid: int) -> float:
    body = {**BODY, "max_tokens": events}
    with httpx.Client(headers={"authorization": f"Bearer {GATEWAY_KEY}"}, timeout=60) as client:
        for _ in range(5):
            client.post(url, json=body).raise_for_status()
        cpu0 = _cpu_s(pid)
        for _ in range(calls):
            with client.stream("POST", url, json=body) as answer:
                answer.raise_for_status()
                answer.read()
        return (_cpu_s(pid) - cpu0) * 1e3 / calls


def main(argv: list[str] | None = None) -> int:
    """Print the gateway's CPU per call and per event, for this tree (and ``--before``)."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--before", type=Path, help="the src directory of a baseline checkout")
    parser.add_argument("--events", default="20,400", help="stream lengths, comma-separated")
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--gap-ms", type=float, default=0.0, help="the upstream's pause between events (0: as fast as it can write)"
    )
    args = parser.parse_args(argv)
    lengths = sorted(int(n) for n in args.events.split(","))
    ready: list[str] = []
    stop = asyncio.Event()
    loop = asyncio.new_event_loop()
    thread = threading.Thread(
        target=loop.run_until_complete, args=(_upstream(ready, stop, args.gap_ms / 1000),), daemon=True
    )
    thread.start()
    while not ready:
        time.sleep(0.01)
    env = {**os.environ, "OPENAI_API_KEY": "sk-bench", "ROUTEPROOF_BENCH_KEY": GATEWAY_KEY}
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        agent = Path(tmp) / "agent.toml"
        agent.write_text(AGENT_TOML.format(mock_url=ready[0]))
        serve = ["serve", "--config", str(agent), "--port", "0"]
        arms: dict[str, tuple[str, int]] = {}
        if args.before is not None:
            proc, line = _start(serve, {**env, "PYTHONPATH": str(args.before.resolve())}, stack)
            arms["before"] = (f"{line.split()[3]}/v1/chat/completions", proc.pid)
        proc, line = _start(serve, env, stack)
        arms["after"] = (f"{line.split()[3]}/v1/chat/completions", proc.pid)
        per: dict[tuple[str, int], list[float]] = {(a, n): [] for a in arms for n in lengths}
        names = list(arms)
        for r in range(args.rounds):
            for name in names[r % len(names) :] + names[: r % len(names)]:
                url, pid = arms[name]
                for n in lengths:
                    per[name, n].append(_cpu_per_call_ms(url, n, args.calls, pid))
        loop.call_soon_threadsafe(stop.set)
    low, high = lengths[0], lengths[-1]
    print(
        f"gateway CPU per streamed call, median of {args.rounds} rounds of {args.calls}; load {os.getloadavg()[0]:.1f}"
    )
    for name in names:
        med = {n: statistics.median(per[name, n]) for n in lengths}
        slope_us = (med[high] - med[low]) / (high - low) * 1e3
        cells = ", ".join(f"{n} events {med[n]:.3f} ms" for n in lengths)
        print(f"  {name:>6}: {cells}; per event {slope_us:.1f} us, per call {med[low] - slope_us * low / 1e3:.3f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
