"""The chaos session: one Toxiproxy server for every scenario, and the report at the end."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from chaos.toxi import Toxi, ToxiproxyUnderTest, start_toxiproxy

_SERVER: list[ToxiproxyUnderTest] = []


@pytest.fixture(scope="session")
def toxi() -> Iterator[Toxi]:
    """The Toxiproxy the scenarios drive (TOXIPROXY_URL, toxiproxy-server on PATH, or the embedded one)."""
    server = start_toxiproxy()
    _SERVER.append(server)
    try:
        client = Toxi(server.url)
        assert client.version(), f"no Toxiproxy answering at {server.url}"
        yield client
    finally:
        server.stop()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print the table and write reports/chaos.md and reports/chaos.json."""
    from chaos.report import RESULTS, markdown, write_reports

    if not RESULTS:
        return
    kind = _SERVER[0].kind if _SERVER else "unknown"
    directory = Path(os.environ.get("CHAOS_REPORT_DIR", "reports"))
    md, js = write_reports(RESULTS, kind, directory)
    terminalreporter.write_sep("=", "chaos")
    terminalreporter.write(markdown(RESULTS, kind))
    terminalreporter.write_line(f"written: {md} {js}")
