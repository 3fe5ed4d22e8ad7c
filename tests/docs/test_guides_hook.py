"""The site's Guides section lists every docs page the nav leaves out, and only pages that exist."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import yaml

from tests.docs.blocks import ROOT


def _hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location("guides_hook", ROOT / "docs" / "hooks" / "guides.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_page_outside_the_nav_becomes_a_guide(tmp_path: Path) -> None:
    """A new docs/<topic>.md is listed under Guides; named pages and index.md are not."""
    for name in ("index.md", "getting-started.md", "traffic.md", "hardening.md"):
        (tmp_path / name).write_text(f"# {name}\n", encoding="utf-8")
    config = {"docs_dir": str(tmp_path), "nav": [{"Home": "index.md"}, {"Start": [{"Go": "getting-started.md"}]}]}
    nav = _hook().on_config(config)["nav"]
    assert nav[-1] == {"Guides": ["hardening.md", "traffic.md"]}


def test_no_guides_no_section(tmp_path: Path) -> None:
    """With every page named, no empty Guides section is added (a missing page never breaks the build)."""
    (tmp_path / "index.md").write_text("# Home\n", encoding="utf-8")
    config = {"docs_dir": str(tmp_path), "nav": [{"Home": "index.md"}]}
    assert _hook().on_config(config)["nav"] == [{"Home": "index.md"}]


def test_every_nav_page_of_the_site_exists() -> None:
    """mkdocs.yml names only pages that exist in docs/ (the Guides pages are found, never named)."""
    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    named = _hook()._named(yaml.safe_load(text)["nav"])
    assert named
    assert sorted(page for page in named if not (ROOT / "docs" / page).is_file()) == []
