"""MockFleet from a TOML config, and the `routeproof mock --config FILE` command."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import httpx
import pytest

from routeproof.cli import main
from routeproof.mock import MockFleet, MockScriptError, Shape, parse_fleet_config
from tests.mock.helpers import PATHS, TIMEOUT_S, auth_headers

EXAMPLE = Path(__file__).resolve().parents[2] / "contracts" / "mock-example.toml"


@pytest.mark.asyncio
async def test_fleet_starts_every_configured_server_with_its_script() -> None:
    """Each [[server]] becomes a running server with its shape, default and queued script."""
    configs = parse_fleet_config(EXAMPLE.read_text(encoding="utf-8"))
    async with MockFleet(configs) as fleet, httpx.AsyncClient(timeout=TIMEOUT_S) as client:
        servers = {s.name: s for s in fleet}
        anthropic = fleet["anthropic"]
        first = await client.post(f"{anthropic.base_url}/v1/messages", json={}, headers=auth_headers(Shape.ANTHROPIC))
        second = await client.post(f"{anthropic.base_url}/v1/messages", json={}, headers=auth_headers(Shape.ANTHROPIC))
    assert {n: s.shape for n, s in servers.items()} == {
        "anthropic": Shape.ANTHROPIC,
        "openai": Shape.OPENAI,
        "bedrock": Shape.BEDROCK,
    }
    assert (first.status_code, first.headers["retry-after"], second.status_code) == (429, "1", 200)
    assert servers["openai"].default.delay_before_headers_s == 0.05


@pytest.mark.parametrize(
    "text",
    [
        "",
        "[[server]]\nshape = 'palm'\n",
        "[[server]]\nshape = 'openai'\nport = -1\n",
        "[[server]]\nshape = 'openai'\nextra = 1\n",
        "[[server]]\nshape = 'openai'\n[[server]]\nshape = 'openai'\n",
        "[[server]]\nshape = 'openai'\ndefault = { status = 'x' }\n",
        "not toml [",
    ],
)
def test_invalid_fleet_configs_are_rejected(text: str) -> None:
    """Unknown shapes, bad ports, unknown keys, duplicate names and bad steps fail at load time."""
    with pytest.raises(MockScriptError):
        parse_fleet_config(text)


def test_cli_reports_a_bad_config_with_exit_status_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`routeproof mock` with an invalid config prints the problem and returns 2 without serving."""
    bad = tmp_path / "bad.toml"
    bad.write_text("[[server]]\nshape = 'nope'\n", encoding="utf-8")
    assert main(["mock", "--config", str(bad)]) == 2
    assert "shape must be one of" in capsys.readouterr().err


def test_cli_serves_the_config_until_sigterm() -> None:
    """`routeproof mock --config FILE` prints 'name shape base_url' per server, serves, and exits 0 on SIGTERM."""
    code = "import sys; from routeproof.cli import main; sys.exit(main(sys.argv[1:]))"
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "mock", "--config", str(EXAMPLE)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline().split() for _ in range(3)]
        assert [(n, s) for n, s, _ in lines] == [
            ("anthropic", "anthropic"),
            ("openai", "openai"),
            ("bedrock", "bedrock"),
        ]
        urls = {n: u for n, _, u in lines}
        request = urllib.request.Request(
            urls["openai"] + PATHS[Shape.OPENAI], data=b"{}", headers=auth_headers(Shape.OPENAI), method="POST"
        )
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as resp:
            assert json.loads(resp.read())["object"] == "chat.completion"
        with urllib.request.urlopen(urls["openai"] + "/_mock/journal", timeout=TIMEOUT_S) as resp:
            assert len(json.loads(resp.read())["entries"]) == 1
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=TIMEOUT_S) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=TIMEOUT_S)
        if proc.stdout is not None:
            proc.stdout.close()
        if proc.stderr is not None:
            proc.stderr.close()
