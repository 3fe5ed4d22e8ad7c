"""docs/configuration.md's configuration example runs as written, from the repository root, with dummy keys."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HEADING = "## Configuration that takes effect"


def _snippet() -> str:
    text = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    start = text.index("```python\n", text.index(HEADING)) + len("```python\n")
    return text[start : text.index("```", start)]


def test_readme_loads_the_shipped_example_config_and_answers() -> None:
    """load_router("config/agent.example.toml") with dummy keys answers on the in-process model."""
    secrets = ("ANTHROPIC_API_KEY", "OPENROUTER_API_KEY", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
    env = {k: v for k, v in os.environ.items() if k not in secrets and not k.startswith(("ROUTEPROOF_", "BATUTA_"))}
    done = subprocess.run(
        [sys.executable, "-c", _snippet()], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[0] == "ProviderKind.LOCAL"
