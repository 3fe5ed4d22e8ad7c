"""The runner end to end over real loopback sockets: routeproof's harness, a hung harness, a cut stream."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import httpx
import pytest

from routeproof.conformance.cases import load_cases, select
from routeproof.conformance.report import write_report
from routeproof.conformance.run import run_suite
from routeproof.mock import MockProviderServer, Scripted, Shape

ROOT = Path(__file__).resolve().parents[2]
HARNESS = f"{sys.executable} {ROOT / 'conformance' / 'harnesses' / 'routeproof_harness.py'}"
pytestmark = pytest.mark.asyncio


async def test_routeproof_harness_passes_a_sample_and_the_report_is_written(tmp_path: Path) -> None:
    """Three quick cases pass against routeproof; the three report files name each case's verdict."""
    cases = select(
        load_cases(ROOT / "conformance" / "cases"),
        ["retry.503-then-200", "terminal.401", "sse.cut-after-the-first-token"],
    )
    async with asyncio.timeout(60):
        result = await run_suite(cases, harness=HARNESS, jobs=2)
    assert [r.verdict for r in result.results] == ["pass"] * len(cases), [r.failures for r in result.results]
    md = write_report(result, tmp_path)
    assert "retry.503-then-200" in md.read_text()
    assert (tmp_path / "conformance-routeproof.json").exists()
    assert (tmp_path / "conformance-routeproof.xml").exists()


async def test_a_hung_harness_is_killed_and_the_run_goes_on(tmp_path: Path) -> None:
    """A harness that never answers 'call' is killed at the hard bound; each case fails with evidence."""
    script = tmp_path / "hung.py"
    script.write_text(
        "import sys, json\n"
        "for line in sys.stdin:\n"
        "    op = json.loads(line)['op']\n"
        "    if op == 'start':\n"
        "        print(json.dumps({'op': 'started', 'name': 'hung', 'version': '0', 'capabilities': []}), flush=True)\n"
        "    elif op == 'configure': print(json.dumps({'op': 'configured'}), flush=True)\n"
    )
    cases = select(load_cases(ROOT / "conformance" / "cases"), ["deadline.never-answering", "deadline.mid-body"])
    async with asyncio.timeout(60):
        result = await run_suite(cases, harness=f"{sys.executable} {script}", jobs=1, slack_s=0.5)
    assert [r.verdict for r in result.results] == ["fail", "fail"]
    assert all(r.failures[0].check == "harness" and "killed" in r.failures[0].observed for r in result.results)


async def test_a_case_needing_an_undeclared_capability_is_na(tmp_path: Path) -> None:
    """A harness without 'tiers' gets n/a for tier cases, never a pass."""
    script = tmp_path / "plain.py"
    script.write_text(
        "import sys, json\n"
        "for line in sys.stdin:\n"
        "    if json.loads(line)['op'] == 'start':\n"
        "        started = {'op': 'started', 'name': 'plain', 'version': '0', 'capabilities': []}\n"
        "        print(json.dumps(started), flush=True)\n"
    )
    cases = select(load_cases(ROOT / "conformance" / "cases"), ["tier.sovereign-no-egress"])
    async with asyncio.timeout(30):
        result = await run_suite(cases, harness=f"{sys.executable} {script}", jobs=1)
    assert [(r.verdict, r.reason) for r in result.results] == [("n/a", "capabilities not declared: tiers")]


async def test_cut_after_items_ends_the_stream_after_n_items() -> None:
    """A mock step with cut_after_items writes that many stream items, then resets the connection."""
    async with MockProviderServer(Shape.OPENAI) as srv, httpx.AsyncClient(base_url=srv.base_url, timeout=5) as client:
        srv.script(Scripted(stream_events=("data: one\n\n", "data: two\n\n", "data: three\n\n"), cut_after_items=2))
        got = bytearray()

        async def read() -> None:
            async with client.stream(
                "POST",
                "/v1/chat/completions",
                json={"model": "m", "stream": True},
                headers={"authorization": "Bearer k"},
            ) as resp:
                async for chunk in resp.aiter_bytes():
                    got.extend(chunk)

        with pytest.raises(httpx.HTTPError):
            await read()
    assert b"one" in got
    assert b"two" in got
    assert b"three" not in got
