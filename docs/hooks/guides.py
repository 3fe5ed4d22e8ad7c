"""MkDocs hook: a "Guides" nav section listing every page of docs/ that mkdocs.yml's nav does not name.

Other workstreams add pages (docs/traffic.md, docs/hardening.md, ...) without editing mkdocs.yml;
a page that does not exist yet is simply not listed, so the build never breaks on a missing page.
Guides are sorted by file name; each is titled by its first ``# `` heading (MkDocs's own rule).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

GUIDES = "Guides"


def _named(nav: list[Any]) -> set[str]:
    """Every page path the nav names, through nested sections."""
    found: set[str] = set()
    for item in nav:
        values = item.values() if isinstance(item, dict) else [item]
        for value in values:
            if isinstance(value, str):
                found.add(value)
            elif isinstance(value, list):
                found |= _named(value)
    return found


def guide_pages(docs_dir: Path, nav: list[Any]) -> list[str]:
    """The docs/*.md pages (top level, not index.md) that ``nav`` leaves out, sorted."""
    named = _named(nav)
    return sorted(page.name for page in docs_dir.glob("*.md") if page.name not in named and page.name != "index.md")


def on_config(config: Any) -> Any:
    """Append the Guides section (only when there is a guide to list)."""
    nav = config["nav"]
    guides = guide_pages(Path(config["docs_dir"]), nav)
    if guides:
        nav.append({GUIDES: guides})
    return config
