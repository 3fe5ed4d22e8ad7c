"""Operations: implausible units warn at load, ``serve --log-level`` reaches every logger and the
production re-exec, and a gateway key with a trailing newline stops ``serve`` with its variable named."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from routeproof.cli import build_parser
from routeproof.config import load_config
from routeproof.gateway.commands import production_argv
from routeproof.gateway.settings import parse_gateway_settings

AGENT = """
[driver.providers.openai]
base_url = "http://127.0.0.1:9/v1"
model = "gpt-4o"
timeout_ms = {timeout_ms}
"""


@pytest.mark.parametrize(("timeout_ms", "warned"), [(30, True), (99, True), (100, False), (30_000, False)])
def test_timeout_ms_of_30_warns_seconds_meant(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, timeout_ms: int, warned: bool
) -> None:
    """``timeout_ms = 30`` loads (legal) but logs a WARNING naming the key and what 30 s would be."""
    path = tmp_path / "agent.toml"
    path.write_text(AGENT.format(timeout_ms=timeout_ms))
    with caplog.at_level(logging.WARNING, logger="routeproof.config"):
        load_config(path, environ={"OPENAI_API_KEY": "sk-x"})
    lines = [r.getMessage() for r in caplog.records if r.name == "routeproof.config"]
    assert bool(lines) is warned
    if warned:
        assert "driver.providers.openai.timeout_ms" in lines[0]
        assert f"would be {timeout_ms * 1000}" in lines[0]


def test_gateway_grace_period_of_5_warns(caplog: pytest.LogCaptureFixture) -> None:
    """``grace_period_ms = 5`` (seconds meant) warns at load; the default does not."""
    table = {"gateway": {"grace_period_ms": 5, "tenants": {"a": {"key": "k"}}}}
    with caplog.at_level(logging.WARNING, logger="routeproof.config"):
        parse_gateway_settings(table, environ={})
    assert any("gateway.grace_period_ms = 5" in r.getMessage() for r in caplog.records)


def test_serve_takes_a_log_level_and_keeps_it_under_optimize() -> None:
    """``serve --log-level debug`` parses; the ``--optimize`` re-exec passes it on; a bad level is refused."""
    parser = build_parser()
    args = parser.parse_args(["serve", "--config", "a.toml", "--log-level", "debug", "--optimize"])
    assert args.log_level == "debug"
    argv = production_argv(args)
    if argv is not None:  # None only when this interpreter already runs under -O
        assert argv[-2:] == ["--log-level", "debug"]
    assert parser.parse_args(["serve", "--config", "a.toml"]).log_level == "warning"
    with pytest.raises(SystemExit):
        parser.parse_args(["serve", "--config", "a.toml", "--log-level", "loud"])
