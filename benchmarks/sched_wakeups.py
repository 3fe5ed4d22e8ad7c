"""Where the scheduler wakes each process of a benchmark, and what each wakeup costs: Linux
``perf sched`` around any command, read back as one row per (woken, waker) pair of the processes it
started.

    python -m benchmarks.sched_wakeups [--min-count 50] -- python -m benchmarks.gateway_timeline --calls 2000 --floor

Printed, per pair: how often the woken process ran on the waker's CPU and how often on the other
one, with the median scheduling delay (wakeup to running) of each; and, per pair, how long the
waker ran on after the wakeup (p50 and p90, µs). On a 2-vCPU VM, a wakeup on the
other CPU cost about 50 µs and one on the same CPU 8-26 µs (stop 44): a server still busy when its
write wakes the next hop pays the dear one. Processes are named from their command lines (``serve``:
the gateway, ``mock``, ``proxy_floor``: the floor; ``python -c``: the load clients, merged; any other shows its
first argument), read from
``/proc`` while the command runs. Needs ``perf`` with the sched tracepoints (root, or
``kernel.perf_event_paranoid`` <= 1). ``perf sched record`` adds its own cost: read the rows side by
side, not as absolute latencies. A measurement tool, not a test.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks._arms import _pct

_WAKEUP = re.compile(r"\s*(?P<t>[\d.]+)\s+\[(?P<cpu>\d+)\]\s+(?P<waker>\S+)\s+awakened: (?P<wakee>\S+)")
_RUN = re.compile(r"\s*(?P<t>[\d.]+)\s+\[(?P<cpu>\d+)\]\s+(?P<task>\S+)\s+[\d.]+\s+(?P<delay>[\d.]+)\s+[\d.]+\s*$")
_TASK = re.compile(r".*\[(?P<pid>\d+)(?:/\d+)?\]$")
_ROLES = (("serve", "gateway"), ("proxy_floor", "floor"), ("mock", "mock"))


@dataclass
class Wakeups:
    """What a ``perf sched timehist -w`` listing says about the wakeups among some tasks."""

    delays: dict[tuple[str, str, bool], list[float]] = field(default_factory=lambda: defaultdict(list))
    """(woken, waker, on the waker's CPU) -> each wakeup's scheduling delay, µs."""
    ran_on: dict[tuple[str, str], list[float]] = field(default_factory=lambda: defaultdict(list))
    """(waker, woken) -> how long the waker ran on after waking it (its first wakeup in a run), µs."""


def read_timehist(lines: list[str], tasks: set[str]) -> Wakeups:
    """The wakeups among ``tasks`` (perf's ``comm[pid]`` names) in a ``perf sched timehist -w`` listing."""
    found = Wakeups()
    woken: dict[str, tuple[int, str]] = {}  # woken task -> (the waker's CPU, the waker)
    since: dict[str, tuple[float, str]] = {}  # waker -> its run's first wakeup among the tasks: when, whom
    for line in lines:
        if wake := _WAKEUP.match(line):
            waker, wakee = wake["waker"], wake["wakee"]
            if waker in tasks and wakee in tasks:
                woken[wakee] = (int(wake["cpu"]), waker)
                since.setdefault(waker, (float(wake["t"]), wakee))
        elif run := _RUN.match(line):
            task, cpu, t = run["task"], int(run["cpu"]), float(run["t"])
            if task in woken:
                waker_cpu, waker = woken.pop(task)
                found.delays[(task, waker, waker_cpu == cpu)].append(float(run["delay"]) * 1000)
            if task in since:  # the waker's run ends here: it ran on this long after its wakeup
                at, whom = since.pop(task)
                found.ran_on[(task, whom)].append((t - at) * 1e6)
    return found


def _pid(task: str) -> int | None:
    match = _TASK.match(task)
    return int(match["pid"]) if match else None


def role(cmdline: list[str]) -> str:
    """A short name for a process from its command line."""
    words = " ".join(cmdline)
    for needle, name in _ROLES:
        if needle in cmdline or f"benchmarks.{needle}" in words:
            return name
    if len(cmdline) > 1 and cmdline[1] == "-c":
        return f"{Path(cmdline[0]).name} -c"  # a script on the command line (the benchmarks' load clients)
    return " ".join([Path(cmdline[0]).name, *(part[:24] for part in cmdline[1:2])]) if cmdline else "?"


def _pids() -> set[int]:
    return {int(name) for name in os.listdir("/proc") if name.isdigit()}


def _watch(root: int, seen: dict[int, list[str]], stop: threading.Event) -> None:
    """Record the command line of every process under ``root`` until ``stop`` is set.

    Each process is read once, so a pass costs little more than listing ``/proc``: the watcher runs
    on the machine it measures. Processes that were there before are never read.
    """
    foreign = _pids() - {root}
    while not stop.wait(0.05):
        for pid in _pids() - foreign - seen.keys():
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[:-1]
                parent = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if cmdline and Path(cmdline[0].decode(errors="replace")).name == "perf":
                continue  # perf's child before it runs the command (exec): read again on the next pass
            if parent == root or parent in seen:  # a child of the command, or of its children
                seen[pid] = [part.decode(errors="replace") for part in cmdline]
            elif parent in foreign:
                foreign.add(pid)
            # else its parent is new and not read yet: read again on the next pass


def table(found: Wakeups, names: dict[str, str], min_count: int) -> list[str]:
    """The rows: each pair's same-CPU and other-CPU wakeups, then how long each waker ran on."""
    delays: dict[tuple[str, str, bool], list[float]] = defaultdict(list)  # by name: processes of one name merge
    for (woken, waker, same_cpu), values in found.delays.items():
        delays[(names.get(woken, woken), names.get(waker, waker), same_cpu)].extend(values)
    ran_on: dict[tuple[str, str], list[float]] = defaultdict(list)
    for (waker, woken), values in found.ran_on.items():
        ran_on[(names.get(waker, waker), names.get(woken, woken))].extend(values)
    lines = [f"{'woken':<12} {'by':<12} {'same CPU: n, p50 µs':>22} {'other CPU: n, p50 µs':>22}"]
    for woken, waker in sorted({(woken, waker) for woken, waker, _ in delays}):
        same, other = delays.get((woken, waker, True), []), delays.get((woken, waker, False), [])
        if len(same) + len(other) < min_count:
            continue
        cells = [f"{len(v):>10}, {statistics.median(v):>8.0f}" if v else f"{0:>10}, {'-':>8}" for v in (same, other)]
        lines.append(f"{woken:<12} {waker:<12} {cells[0]:>22} {cells[1]:>22}")
    lines.append("")
    lines.append(f"{'waker':<12} {'woke':<12} {'runs on after: n, p50, p90 µs':>32}")
    for (waker, woken), values in sorted(ran_on.items()):
        if len(values) >= min_count:
            p50, p90 = statistics.median(values), _pct(values, 0.9)
            lines.append(f"{waker:<12} {woken:<12} {len(values):>12}, {p50:>8.0f}, {p90:>8.0f}")
    return lines


def main(argv: list[str] | None = None) -> int:
    """Run the command under ``perf sched record`` and print the wakeups among the processes it started."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--min-count", type=int, default=50, help="leave out pairs with fewer wakeups")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- the command to run")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command: put it after --")
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "perf.data"
        seen: dict[int, list[str]] = {}
        stop = threading.Event()
        perf = subprocess.Popen(["perf", "sched", "record", "-a", "-o", str(data), "--", *command])
        watcher = threading.Thread(target=_watch, args=(perf.pid, seen, stop), daemon=True)
        watcher.start()
        status = perf.wait()
        stop.set()
        watcher.join()
        if status != 0:
            print(f"perf sched record exited with {status}", file=sys.stderr)
            return status
        listing = subprocess.run(
            ["perf", "sched", "timehist", "-w", "-i", str(data)], capture_output=True, text=True, check=True
        ).stdout.splitlines()
    tasks = {m["task"] for line in listing if (m := _RUN.match(line)) and _pid(m["task"]) in seen}
    names = {task: role(seen[pid]) for task in tasks if (pid := _pid(task)) is not None}
    processes = ", ".join(sorted(f"{name} {task}" for task, name in names.items()))
    print(f"load average {os.getloadavg()[0]:.1f}; processes: {processes}")
    print("\n".join(table(read_timehist(listing, tasks), names, args.min_count)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
