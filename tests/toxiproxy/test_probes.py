"""The shared probes, run against the embedded server and compared with the real 2.12.0 transcripts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.toxiproxy.compare import compare_transcripts
from tests.toxiproxy.conftest import ServerProcess

PROBES = Path(__file__).parent / "probes"


def run_probe(script: str, *args: str, timeout_s: float = 120) -> str:
    """Run one probe script and return its stdout (it fails the test on a non-zero exit)."""
    done = subprocess.run(
        [sys.executable, str(PROBES / script), *args],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
        cwd=PROBES,
    )
    assert done.returncode == 0, f"{script} exited {done.returncode}: {done.stderr[-2000:]}"
    return done.stdout


# Timings on a shared 2-core machine can be late by a scheduling hiccup: a timed probe gets up to
# three runs (each on a fresh server) and passes when one run agrees. A wrong status, body, byte
# count or close kind differs on every run, so it still fails.
RUNS = {"api_probe": 1, "edge_probe": 1, "toxic_probe": 3, "client_probe": 3}


@pytest.mark.parametrize("probe", sorted(RUNS))
def test_probe_matches_the_real_transcript(probe: str) -> None:
    """Each probe's output equals the real server's transcript (ids/ports ignored, timings within tolerance)."""
    reference = (PROBES / f"{probe}.out.txt").read_text(encoding="utf-8")
    # the one deliberate difference these probes show: an empty listen binds 127.0.0.1, not [::]
    reference = reference.replace('"listen":"[::]:', '"listen":"127.0.0.1:')
    runs: list[list[str]] = []
    for _ in range(RUNS[probe]):
        server = ServerProcess()
        try:
            got = run_probe(f"{probe}.py", str(server.port), *(["0"] if probe == "api_probe" else []))
        finally:
            server.stop()
        runs.append(compare_transcripts(reference, got))
        if not runs[-1]:
            return
    report = "\n\n".join(f"run {n}: " + "\n".join(p) for n, p in enumerate(runs, start=1))
    pytest.fail(f"{probe}: no run agreed with the real transcript\n{report}")


def test_half_close_loses_the_answer_as_the_real_server_does(toxiproxy_server: ServerProcess) -> None:
    """A client's SHUT_WR tears the whole proxied connection down: no half-close (halfclose_probe)."""
    got = run_probe("halfclose_probe.py", str(toxiproxy_server.port)).splitlines()
    reference = (PROBES / "halfclose_and_crash.out.txt").read_text(encoding="utf-8").splitlines()[1:4]
    assert compare_transcripts("\n".join(reference), "\n".join(got)) == []


CRASH_CASES = [
    # (toxic, the real server's answer, ours) — the two 400s are deliberate (see routeproof.toxiproxy)
    ({"type": "bandwidth", "attributes": {"rate": 0}}, 200, "client got 0 bytes"),
    ({"type": "bandwidth", "attributes": {"rate": -1}}, 400, "client got 1000 bytes"),
    ({"type": "slicer", "attributes": {"average_size": 0}}, 400, "client got 1000 bytes"),
    ({"type": "slicer", "attributes": {"average_size": 10, "size_variation": 400}}, 400, "client got 1000 bytes"),
    ({"type": "limit_data", "attributes": {"bytes": 0}}, 200, "client got 0 bytes"),
]


@pytest.mark.parametrize(("toxic", "status", "client_line"), CRASH_CASES)
def test_extreme_attributes_never_take_the_server_down(
    toxiproxy_server: ServerProcess, toxic: dict[str, object], status: int, client_line: str
) -> None:
    """crash_probe: rate 0 stalls and bytes 0 cuts (as 2.12.0); the values that kill or spin 2.12.0 get a 400."""
    got = run_probe("crash_probe.py", str(toxiproxy_server.port), json.dumps(toxic))
    assert got.startswith(f"add toxic ({status}, "), got
    assert client_line in got, got
    assert "server still alive: (200" in got, got
    assert toxiproxy_server.alive()


def test_the_comparison_notices_a_wrong_answer() -> None:
    """The comparator is not vacuous: a wrong status, a wrong byte count or a slow timing is reported."""
    reference = (PROBES / "toxic_probe.out.txt").read_text(encoding="utf-8")
    assert compare_transcripts(reference, reference) == []
    for wrong in (
        reference.replace("rtt ms [201, 201, 201]", "rtt ms [201, 301, 201]"),
        reference.replace("bytes 10 eof secs 0.0", "bytes 11 eof secs 0.0"),
        reference.replace("client: b'' ECONNRESET 0.001", "client: b'' eof 0.001"),
        reference.replace("EOF after secs 0.5", "EOF after secs 0.9"),
    ):
        assert compare_transcripts(reference, wrong), wrong
