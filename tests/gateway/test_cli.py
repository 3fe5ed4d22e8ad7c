"""The `serve`, `providers` and `call` commands, as a script would run them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from routeproof.cli import build_parser, main
from routeproof.errors import ConfigError
from routeproof.gateway import commands
from routeproof.gateway.backend import Backend
from tools.gateway_stack import gateway_stack

ENTRY = "import sys; from routeproof.cli import main; sys.exit(main())"
TIMEOUT_S = 60.0


def _run(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", ENTRY, *args], capture_output=True, text=True, env=env, timeout=TIMEOUT_S, check=False
    )


def test_every_command_has_a_one_line_help() -> None:
    """serve, providers and call are registered, each with a one-line help."""
    parser = build_parser()
    action = next(a for a in parser._actions if a.dest == "command")
    assert isinstance(action.choices, dict)
    for name in ("serve", "providers", "call"):
        help_text = action.choices[name].format_help()
        assert help_text.startswith("usage: routeproof " + name)


def test_bad_config_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An invalid agent.toml: serve, providers and call print the problem and exit 2."""
    monkeypatch.setattr(commands, "install_telemetry", lambda: None)  # no process-wide providers in this worker
    bad = tmp_path / "agent.toml"
    bad.write_text("[driver.providers.openai]\nmodel = 'gpt-4o'\n")  # OPENAI_API_KEY unset in this environ
    for argv in (
        ["serve", "--config", str(bad)],
        ["providers", "--config", str(bad)],
        ["call", "--config", str(bad), "hi"],
    ):
        assert main(argv) == 2
    assert "routeproof" in capsys.readouterr().err


def test_serve_installs_telemetry_before_it_builds_the_router(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The router's instruments come from the meter ``serve`` installs, not from the OpenTelemetry
    API's proxies (built before a provider is set, they delegate on every instrument call)."""
    order: list[str] = []
    monkeypatch.setattr(commands, "install_telemetry", lambda: order.append("telemetry"))

    def load(*args: object, **kwargs: object) -> object:
        order.append("router")
        raise ConfigError("stop here")

    monkeypatch.setattr(Backend, "load", load)
    assert main(["serve", "--config", str(tmp_path / "agent.toml")]) == 2
    assert order == ["telemetry", "router"]


def test_serve_providers_and_call_end_to_end(tmp_path: Path) -> None:
    """`routeproof serve` in front of `routeproof mock` answers; providers --test passes; call shows attempts."""
    with gateway_stack(tmp_path) as stack:
        answer = httpx.post(
            f"{stack.gateway_url}/v1/chat/completions",
            json={"model": "chat", "messages": [{"role": "user", "content": "hi"}]},
            headers={"authorization": f"Bearer {stack.key}"},
            timeout=TIMEOUT_S,
        )
        assert answer.status_code == 200
        assert json.loads(answer.headers["x-routeproof-attempts"])[0]["status"] == "succeeded"
        env = {"OPENAI_API_KEY": "sk-bench", "ROUTEPROOF_BENCH_KEY": stack.key, "COLUMNS": "200", "PATH": ""}
        listed = _run("providers", "--config", str(stack.agent_toml), env=env)
        assert listed.returncode == 0, listed.stderr
        assert "not tested" in listed.stdout
        tested = _run("providers", "--config", str(stack.agent_toml), "--test", env=env)
        assert tested.returncode == 0, tested.stderr
        assert "pass" in tested.stdout
        called = _run(
            "call", "--config", str(stack.agent_toml), "--alias", "chat", "--provider", "openai", "hi", env=env
        )
        assert called.returncode == 0, called.stderr
        assert "Hello from the routeproof mock." in called.stdout
        assert "succeeded" in called.stdout
        streamed = _run("call", "--config", str(stack.agent_toml), "--alias", "chat", "--stream", "hi", env=env)
        assert streamed.returncode == 0, streamed.stderr
        assert "Hello from the routeproof mock." in streamed.stdout
        unknown = _run("call", "--config", str(stack.agent_toml), "--provider", "nope", "hi", env=env)
        assert unknown.returncode == 2
        assert "'nope'" in unknown.stderr
        httpx.post(f"{stack.mock_url}/_mock/default", json={"status": 500}, timeout=TIMEOUT_S).raise_for_status()
        failing = _run("providers", "--config", str(stack.agent_toml), "--test", env=env)
        assert failing.returncode == 1
        assert "FAIL" in failing.stdout
        failed_call = _run("call", "--config", str(stack.agent_toml), "--alias", "chat", "hi", env=env)
        assert failed_call.returncode == 1
        assert "AllProvidersFailed" in failed_call.stderr


def test_serve_optimize_runs_the_gateway_under_python_o(tmp_path: Path) -> None:
    """`serve --optimize` re-runs itself under python -O (says so on its first line) and still answers."""
    with gateway_stack(tmp_path, optimize=True) as stack:
        assert stack.banner.endswith("[production: python -O, contracts off]")
        answer = httpx.post(
            f"{stack.gateway_url}/v1/chat/completions",
            json={"model": "chat", "messages": [{"role": "user", "content": "hi"}]},
            headers={"authorization": f"Bearer {stack.key}"},
            timeout=TIMEOUT_S,
        )
        assert answer.status_code == 200
    with gateway_stack(tmp_path) as plain:
        assert "production" not in plain.banner
