"""The package version, written once: pyproject.toml reads it (hatch's version source), the CLI prints it."""

from __future__ import annotations

__version__ = "0.1.0"
