"""The version is written once (``routeproof/_version.py``) and every place that shows it reads it."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import routeproof
from routeproof._version import __version__

ROOT = Path(__file__).resolve().parents[2]


def test_pyproject_reads_the_version_from_the_package() -> None:
    """pyproject.toml declares the version dynamic, from src/routeproof/_version.py (no second copy)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in project["project"]
    assert project["project"]["dynamic"] == ["version"]
    assert project["tool"]["hatch"]["version"]["path"] == "src/routeproof/_version.py"


def test_cli_prints_the_version() -> None:
    """``routeproof --version`` prints ``routeproof <version>`` and exits 0."""
    done = subprocess.run(
        [sys.executable, "-m", "routeproof.cli", "--version"], capture_output=True, text=True, timeout=60, check=False
    )
    assert (done.returncode, done.stdout.strip()) == (0, f"routeproof {__version__}")
    assert routeproof.__version__ == __version__
