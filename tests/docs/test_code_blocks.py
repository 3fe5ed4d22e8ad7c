"""Every ```python block in docs/ runs as written (against fresh mock providers) and exits 0."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.docs.blocks import ROOT, Block, python_blocks, run_block

BLOCKS = [block for page in sorted((ROOT / "docs").rglob("*.md")) for block in python_blocks(page)]


@pytest.mark.parametrize("block", BLOCKS, ids=lambda block: block.id)
def test_docs_python_block_runs(block: Block, tmp_path: Path) -> None:
    """The block runs alone from the repository root and exits 0 (a block that cannot is ```text)."""
    done = run_block(block, tmp_path)
    assert done.returncode == 0, f"{block.id} failed:\n{done.stderr}"


def test_blocks_are_found() -> None:
    """The collector sees the docs' python blocks (a fence it misses would go unchecked)."""
    assert len(BLOCKS) >= 3
    assert any(block.page.name == "getting-started.md" for block in BLOCKS)
