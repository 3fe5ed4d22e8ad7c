"""What learning of a client's disconnect costs a call that runs past the watch delay (every call under
load, where calls take tens of milliseconds): ``gateway/disconnect.py``'s two ways side by side, in
one process on uvloop, 100 calls at once, rotated rounds.

    python -O -m benchmarks.disconnect_cost [--calls 3000] [--rounds 8]

Arms: the work alone (a provider's answer that comes after the watch would have started); the work
watched (a watcher task on ``receive``, started at once, as past :data:`DISCONNECT_WATCH_AFTER_S`;
``receive`` waits on an event, as uvicorn's does once the body is read); the work linked (the
server's :class:`ClientLink`). Printed: CPU per call (``time.process_time``) and each arm's excess
over the work alone. A measurement tool, not a test.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import uvloop

from routeproof.gateway import disconnect

_AT_ONCE = 100


async def _arms() -> dict[str, Callable[[], Awaitable[object]]]:
    loop = asyncio.get_running_loop()

    async def receive() -> dict[str, Any]:
        await asyncio.Event().wait()  # no disconnect comes
        return {"type": "http.disconnect"}

    async def work() -> object:
        answer = loop.create_future()
        loop.call_later(0.0002, answer.set_result, "answered")
        await asyncio.sleep(0.0005)  # the watcher, started at once, is waiting by the time the answer comes
        return await answer

    async def watched() -> object:
        return await disconnect.run_until_disconnect({}, receive, work())

    async def linked() -> object:
        return await disconnect.run_until_disconnect({disconnect.LINK: disconnect.ClientLink()}, receive, work())

    return {"work alone": work, "watched": watched, "linked": linked}


async def _measure(calls: int, rounds: int) -> dict[str, float]:
    disconnect.DISCONNECT_WATCH_AFTER_S = 0.0  # every call past the delay, as under load
    arms = await _arms()
    cpu: dict[str, list[float]] = {name: [] for name in arms}
    for r in range(rounds):
        order = list(arms.items())
        for name, arm in order if r % 2 == 0 else order[::-1]:
            start = time.process_time()
            for _ in range(calls // _AT_ONCE):
                await asyncio.gather(*(arm() for _ in range(_AT_ONCE)))
            cpu[name].append((time.process_time() - start) / calls * 1e6)
    return {name: statistics.median(values) for name, values in cpu.items()}


def main(argv: list[str] | None = None) -> int:
    """Run the arms and print CPU per call."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=8)
    args = parser.parse_args(argv)
    medians = uvloop.run(_measure(args.calls, args.rounds))
    alone = medians["work alone"]
    for name, us in medians.items():
        print(f"{name:>10}: {us:6.1f} µs CPU per call, {us - alone:+5.1f} over the work alone")
    return 0


if __name__ == "__main__":
    sys.exit(main())
