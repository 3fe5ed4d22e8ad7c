"""benchmarks/sched_wakeups.py reads ``perf sched timehist -w``: which CPU each wakeup landed on, its
delay, and how long the waker ran on. The listing below is perf's own format (a 2-vCPU VM)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

from benchmarks.sched_wakeups import _watch, read_timehist, role, table

# time [cpu] task  wait  sch-delay  run (ms); a wakeup line names the waker and the woken
LISTING = """\
           time    cpu  task name                       wait time  sch delay   run time
                        [tid/pid]                          (msec)     (msec)     (msec)
--------------- ------  ------------------------------  ---------  ---------  ---------
   100.000100 [0000]  python[20]                                                       awakened: python[10]
   100.000150 [0000]  python[20]                          0.200      0.000      0.090
   100.000160 [0001]  python[10]                          0.500      0.060      0.030
   100.001000 [0001]  python[10]                                                       awakened: python[20]
   100.001010 [0001]  python[10]                          0.000      0.000      0.020
   100.001020 [0001]  python[20]                          0.800      0.010      0.040
   100.002000 [0001]  python[20]                                                       awakened: python[10]
   100.002001 [0001]  python[20]                                                       awakened: python[99]
   100.002010 [0001]  python[20]                                                       awakened: python[30]
   100.002030 [0001]  python[20]                          0.000      0.000      0.050
   100.002040 [0001]  python[10]                          0.900      0.008      0.010
   100.002050 [0000]  python[99]                          0.100      0.040      0.010
   100.002060 [0000]  python[30]                          0.100      0.050      0.010
"""


def test_each_wakeup_is_put_on_the_wakers_cpu_or_the_other_with_its_delay() -> None:
    found = read_timehist(LISTING.splitlines(), {"python[10]", "python[20]"})
    assert found.delays[("python[10]", "python[20]", False)] == [60.0]  # woken on CPU 0, run on CPU 1
    assert found.delays[("python[10]", "python[20]", True)] == [8.0]
    assert found.delays[("python[20]", "python[10]", True)] == [10.0]
    assert ("python[99]", "python[20]", False) not in found.delays  # not one of the tasks asked about


def test_the_waker_runs_on_from_its_first_wakeup_to_the_end_of_its_run() -> None:
    found = read_timehist(LISTING.splitlines(), {"python[10]", "python[20]", "python[30]"})
    assert [round(v) for v in found.ran_on[("python[20]", "python[10]")]] == [50, 30]
    assert ("python[20]", "python[30]") not in found.ran_on  # its second wakeup in that run
    assert found.delays[("python[30]", "python[20]", False)] == [50.0]
    assert [round(v) for v in found.ran_on[("python[10]", "python[20]")]] == [10]


def test_the_table_names_the_processes_and_leaves_out_rare_pairs() -> None:
    found = read_timehist(LISTING.splitlines(), {"python[10]", "python[20]"})
    rows = table(found, {"python[10]": "mock", "python[20]": "gateway"}, min_count=2)
    assert rows[1].split() == ["mock", "gateway", "1,", "8", "1,", "60"]
    pairs = [r.split()[:2] for r in rows[1:] if r and not r.startswith("waker")]
    assert pairs == [["mock", "gateway"], ["gateway", "mock"]]
    assert rows[-1].split() == ["gateway", "mock", "2,", "40,", "50"]  # run-on p50 and p90 of [50, 30] µs


def test_roles_come_from_the_command_line() -> None:
    assert role(["/x/python", "-c", "from routeproof.cli import main", "serve", "--config", "a"]) == "gateway"
    assert role(["/x/python", "-O", "-m", "benchmarks.proxy_floor", "http://127.0.0.1:1"]) == "floor"
    assert role(["/x/python", "-c", "...", "mock", "--config", "m.toml"]) == "mock"
    assert role(["/usr/bin/node", "server.js"]) == "node server.js"
    assert role(["/x/python3", "-c", "\nimport sys, httpx\n"]) == "python3 -c"


def test_processes_of_one_name_merge_into_one_row() -> None:
    found = read_timehist(LISTING.splitlines(), {"python[10]", "python[20]", "python[30]"})
    rows = table(found, {"python[10]": "mock", "python[20]": "client", "python[30]": "client"}, min_count=1)
    merged = [r.split() for r in rows if r.startswith("client       client")]
    assert merged == [["client", "client", "0,", "-", "1,", "50"]]


def test_the_watcher_names_the_commands_children_and_theirs_only() -> None:
    """``_watch`` records each process under the command (children, and theirs), none from before."""
    spawn = "import subprocess, sys, time; time.sleep(0.2); subprocess.run([sys.executable, '-c', {!r}])"
    grandchild = "import time; time.sleep(1.5)"
    child = spawn.format(grandchild)
    command = subprocess.Popen([sys.executable, "-c", spawn.format(child)])
    seen: dict[int, list[str]] = {}
    stop = threading.Event()
    watcher = threading.Thread(target=_watch, args=(command.pid, seen, stop), daemon=True)
    watcher.start()
    try:
        time.sleep(1.2)
    finally:
        stop.set()
        watcher.join()
        command.kill()
        command.wait()
    assert sorted(argv[-1] for argv in seen.values()) == sorted([child, grandchild])
    assert os.getpid() not in seen
    assert command.pid not in seen  # in the tool the command's own process is perf's
